#!/usr/bin/env python3
"""Copy the functions edition into the package, or check the copies.

The package ships functions/ratelimit.lua (the library) and
functions/scripts/*.lua (the standalone scripts generated from it) as
package data under src/redis_ratelimit_client/lua/. They are copies, never
edited here:

    python3 clients/python/sync_lua.py          # copy them again
    python3 clients/python/sync_lua.py --check  # exit 1 if a copy differs

The check fails on a copy that differs from its source, a source with no
copy, a copy with no source, and a missing library.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent.parent / "functions"
COPY = HERE / "src" / "redis_ratelimit_client" / "lua"


def files(root: Path) -> dict[str, Path]:
    """The files to ship, by their path under root."""
    found = {}
    if (root / "ratelimit.lua").is_file():
        found["ratelimit.lua"] = root / "ratelimit.lua"
    for script in sorted((root / "scripts").glob("*.lua")):
        found[f"scripts/{script.name}"] = script
    return found


def differences(source: Path = SOURCE, copy: Path = COPY) -> list[str]:
    if not (source / "ratelimit.lua").is_file():
        return [f"{source / 'ratelimit.lua'}: no library to copy"]
    want, have = files(source), files(copy)
    problems = []
    for name, path in want.items():
        if name not in have:
            problems.append(f"{name}: not copied into the package")
        elif have[name].read_bytes() != path.read_bytes():
            problems.append(f"{name}: the package's copy differs from functions/{name}")
    problems += [f"{name}: in the package but not in functions/" for name in have if name not in want]
    return problems


def sync(source: Path = SOURCE, copy: Path = COPY) -> None:
    want = files(source)
    if "ratelimit.lua" not in want:
        sys.exit(f"{source / 'ratelimit.lua'}: no library to copy")
    for name, path in files(copy).items():
        if name not in want:
            path.unlink()
    (copy / "scripts").mkdir(parents=True, exist_ok=True)
    for name, path in want.items():
        shutil.copyfile(path, copy / name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a packaged copy differs from its source")
    if parser.parse_args().check:
        problems = differences()
        for problem in problems:
            print(f"sync_lua: {problem}", file=sys.stderr)
        if problems:
            sys.exit("sync_lua: run python3 clients/python/sync_lua.py to copy functions/ into the package")
        print(f"sync_lua: the package's {len(files(COPY))} Lua files equal functions/")
    else:
        sync()
        print(f"sync_lua: copied {len(files(COPY))} Lua files from functions/")


if __name__ == "__main__":
    main()
