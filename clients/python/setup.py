"""The build step that puts the functions library into the package.

The client loads functions/ratelimit.lua (FUNCTION LOAD) and derives each
standalone script from it, so a built package must hold that one file. In
the repository it is ../../functions/ratelimit.lua; an sdist holds a copy at
its root, so that a wheel built from the sdist alone holds it too. The wheel
gets it as redis_ratelimit_client/ratelimit.lua; an editable install gets
nothing and reads the repository's file (see _backend.library_path).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
# An sdist's copy, then the repository's file.
LIBRARIES = [HERE / "ratelimit.lua", HERE.parent.parent / "functions" / "ratelimit.lua"]


def library() -> Path:
    for path in LIBRARIES:
        if path.is_file():
            return path
    raise SystemExit(
        "redis-ratelimit-client: no functions library to package; build from the repository "
        "(clients/python, beside functions/) or from an sdist of it"
    )


class BuildPy(build_py):
    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            target = Path(self.build_lib) / "redis_ratelimit_client" / "ratelimit.lua"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(library(), target)


class Sdist(sdist):
    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        super().make_release_tree(base_dir, files)
        shutil.copyfile(library(), Path(base_dir) / "ratelimit.lua")


setup(cmdclass={"build_py": BuildPy, "sdist": Sdist})
