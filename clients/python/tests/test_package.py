"""The package as a user gets it: the README's quick start prints what the
README says on every backend, the shipped Lua equals functions/, the
package is typed."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import redis_ratelimit_client

from .conftest import BACKEND_SERVER, Servers, reset

HERE = Path(__file__).resolve().parent.parent
README = (HERE / "README.md").read_text()


def quick_start() -> tuple[str, str]:
    """The quick start's code and the output the README shows for it."""
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    output = re.search(r"```text\n(.*?)```", section, re.S)
    assert code and output, "the quick start has a python block and a text block"
    return code.group(1), output.group(1)


def test_quick_start_gives_the_same_answers_on_every_backend(servers: Servers, backend: str) -> None:
    code, expected = quick_start()
    server = servers.get(BACKEND_SERVER[backend])
    reset(server)
    assert "redis.Redis(port=6379)" in code
    program = code.replace("redis.Redis(port=6379)", f"redis.Redis(port={server.port})")
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_the_shipped_lua_equals_functions() -> None:
    sync_lua = HERE / "sync_lua.py"
    result = subprocess.run([sys.executable, str(sync_lua), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_check_fails_on_a_copy_that_differs(tmp_path: Path) -> None:
    sys.path.insert(0, str(HERE))
    try:
        import sync_lua
    finally:
        sys.path.remove(str(HERE))
    source, copy = tmp_path / "functions", tmp_path / "lua"
    (source / "scripts").mkdir(parents=True)
    (source / "ratelimit.lua").write_text("-- the library\n")
    (source / "scripts" / "rl_gcra.lua").write_text("-- a script\n")
    assert sync_lua.differences(source, copy) == [
        "ratelimit.lua: not copied into the package",
        "scripts/rl_gcra.lua: not copied into the package",
    ]
    sync_lua.sync(source, copy)
    assert sync_lua.differences(source, copy) == []
    (copy / "scripts" / "rl_gcra.lua").write_text("-- edited by hand\n")
    (copy / "scripts" / "rl_old.lua").write_text("-- no longer generated\n")
    assert sync_lua.differences(source, copy) == [
        "scripts/rl_gcra.lua: the package's copy differs from functions/scripts/rl_gcra.lua",
        "scripts/rl_old.lua: in the package but not in functions/",
    ]
    sync_lua.sync(source, copy)
    assert sync_lua.differences(source, copy) == []
    assert not (copy / "scripts" / "rl_old.lua").exists()


def test_typed_and_versioned() -> None:
    package = resources.files("redis_ratelimit_client")
    assert package.joinpath("py.typed").is_file()
    pyproject = (HERE / "pyproject.toml").read_text()
    assert 'version = { attr = "redis_ratelimit_client._version.__version__" }' in pyproject
    cargo = (HERE.parent.parent / "Cargo.toml").read_text()
    # The client asks the library for its own version: it follows the module's.
    workspace_version = re.search(r'\[workspace\.package\]\nversion = "([^"]+)"', cargo)
    assert workspace_version and workspace_version.group(1) == redis_ratelimit_client.__version__


def test_the_sync_client_is_made_from_the_async_one() -> None:
    result = subprocess.run([sys.executable, str(HERE / "unasync.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "unasync: _sync.py is made from _async.py\n"
