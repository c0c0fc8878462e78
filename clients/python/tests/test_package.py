"""The package as a user gets it: the README's quick start prints what the
README says on every backend, the library it loads is the repository's (a
built package holds a copy), each script it derives is the one
functions/build.py writes, the package is typed."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import redis_ratelimit_client
from redis_ratelimit_client import RateLimitError, _backend

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


def test_in_the_repository_the_client_reads_functions_ratelimit_lua() -> None:
    # The tests run from an editable install: no copy in the package.
    repository = HERE.parent.parent / "functions" / "ratelimit.lua"
    assert _backend.library_path() == repository
    assert _backend.library() == repository.read_text()


def test_each_script_is_what_build_py_writes(tmp_path: Path) -> None:
    build = HERE.parent.parent / "functions" / "build.py"
    subprocess.run([sys.executable, str(build), "--out", str(tmp_path)], check=True, capture_output=True)
    written = {p.stem: p.read_text() for p in tmp_path.glob("rl_*.lua")}
    assert sorted(written) == [
        "rl_all",
        "rl_concurrency",
        "rl_fixed",
        "rl_gcra",
        "rl_inspect",
        "rl_log",
        "rl_release",
        "rl_renew",
        "rl_sliding_counter",
        "rl_sliding_log",
        "rl_token_bucket",
        "rl_version",
    ]
    assert _backend.scripts_from_library((tmp_path / "ratelimit.lua").read_text()) == written
    # And what the client sends: the scripts of the library it loads.
    for name, text in _backend.scripts_from_library(_backend.library()).items():
        assert _backend.script(name) == (text, hashlib.sha1(text.encode()).hexdigest())


def test_the_rule_on_a_small_library() -> None:
    text = (
        "#!lua name=x\n"
        "-- script rl_a: PRE | one three | return a()\n"
        "-- script rl_b: PRE | two | return b()\n"
        "-- script rl_c: PRE | one | local x = a() | two three | return x\n"
        "-- part: one\nlocal one = 1\n"
        "-- part: two\nlocal two = 2\n\n"
        "-- part: three\nlocal three = 3"
    )
    assert _backend.scripts_from_library(text) == {
        "rl_a": "PRE\n-- part: one\nlocal one = 1\n-- part: three\nlocal three = 3return a()\n",
        "rl_b": "PRE\n-- part: two\nlocal two = 2\n\nreturn b()\n",
        "rl_c": "PRE\n-- part: one\nlocal one = 1\nlocal x = a()\n"
        "-- part: two\nlocal two = 2\n\n-- part: three\nlocal three = 3return x\n",
    }


def test_a_library_the_rule_cannot_read_is_a_clear_error() -> None:
    with pytest.raises(RateLimitError) as error:
        _backend.scripts_from_library("-- script rl_a: PRE | one\n-- part: one\n")
    shape = "'LINE | PARTS | LINE [| PARTS | LINE ...]'"
    assert str(error.value) == f"the library's script line for rl_a is not {shape}: 'PRE | one'"
    with pytest.raises(RateLimitError) as error:
        _backend.scripts_from_library("-- script rl_a: PRE | one two | return 1\n-- part: one\n")
    assert str(error.value) == "the library's script line for rl_a names parts it lacks: two"
    with pytest.raises(RateLimitError) as error:
        _backend.script("rl_nothing")
    assert str(error.value) == "the functions library has no script for rl_nothing"


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
