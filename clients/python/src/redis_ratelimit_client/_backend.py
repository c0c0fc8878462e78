"""Which backend serves the commands (SPEC 18), found once per client.

1. The module: ``RL.GCRA`` exists (sent with no arguments, it answers the
   server's arity error, not an unknown command).
2. Else the functions library ``ratelimit`` at this client's version:
   ``FCALL rl_version 0`` answers it (on every primary of a Cluster).
3. Else the client loads it: ``FUNCTION LOAD REPLACE <library>`` (redis-py
   sends it to every primary of a Cluster), then as 2.
4. Else (no Functions: Redis 6, or a service that denies them) the
   standalone scripts through ``EVALSHA``, loaded with ``SCRIPT LOAD`` when
   the server answers ``NOSCRIPT``.

The search is written once, as a generator that yields the commands to send
and receives their replies (or has their errors thrown in, see _steps), so
that the sync and the async clients drive the same steps with their own
I/O.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any, Protocol

from ._errors import RateLimitError, Unavailable, reply_error
from ._steps import ReplyError, Step
from ._version import __version__

log = logging.getLogger("redis_ratelimit_client")

MODULE = "module"
FUNCTIONS = "functions"
SCRIPTS = "scripts"
BACKENDS = (MODULE, FUNCTIONS, SCRIPTS)


class Route(Protocol):
    """Where the search's commands go: ``one`` to the server (any primary
    of a Cluster), ``every`` to every primary (a list of replies)."""

    def one(self, args: tuple[Any, ...]) -> Generator[Step, Any, Any]: ...

    def every(self, args: tuple[Any, ...]) -> Generator[Step, Any, list[Any]]: ...


# The library: the copy a built package holds (setup.py's build step puts
# it there), else, in the repository (a checkout, an editable install),
# functions/ratelimit.lua itself.
_PACKAGED = Path(__file__).resolve().parent / "ratelimit.lua"
_REPOSITORY = Path(__file__).resolve().parents[4] / "functions" / "ratelimit.lua"

# The lines that shape the library (docs/functions.md, "Deriving the scripts
# from the library").
_PART = "-- part: "
_SCRIPT = "-- script "


def library_path() -> Path:
    """Where the library this client loads is read from."""
    for path in (_PACKAGED, _REPOSITORY):
        if path.is_file():
            return path
    raise RateLimitError(
        f"no functions library: neither {_PACKAGED} (a built package's) nor {_REPOSITORY} (a checkout's) exists"
    )


def scripts_from_library(text: str) -> dict[str, str]:
    """Each function's standalone script, by name, from the library's text.

    A part is a line that starts with ``-- part: NAME`` and the lines after
    it up to the next such line; a header line (before the first part)
    ``-- script NAME: LINE | PARTS | LINE`` (and on: ``| PARTS | LINE``)
    makes NAME's script: its fields in turn, each LINE with a newline after
    it and each PARTS the parts it names (apart by spaces), whole.
    """
    parts: dict[str, list[str]] = {}
    recipes: dict[str, str] = {}
    current: list[str] | None = None
    # Each line with its newline, the last one without when the text has none.
    for line in re.split("(?<=\n)", text):
        if line.startswith(_PART):
            current = parts[line[len(_PART) :].strip()] = []
        if current is not None:
            current.append(line)
        elif line.startswith(_SCRIPT):
            name, _, recipe = line[len(_SCRIPT) :].rstrip("\n").partition(": ")
            recipes[name] = recipe
    scripts = {}
    for name, recipe in recipes.items():
        fields = recipe.split(" | ")
        if len(fields) < 3 or len(fields) % 2 == 0:
            shape = "'LINE | PARTS | LINE [| PARTS | LINE ...]'"
            raise RateLimitError(f"the library's script line for {name} is not {shape}: {recipe!r}")
        wanted = [part for field in fields[1::2] for part in field.split(" ")]
        missing = [part for part in wanted if part not in parts]
        if missing:
            raise RateLimitError(f"the library's script line for {name} names parts it lacks: {', '.join(missing)}")
        scripts[name] = "".join(
            field + "\n" if i % 2 == 0 else "".join("".join(parts[part]) for part in field.split(" "))
            for i, field in enumerate(fields)
        )
    return scripts


_library: str | None = None
_scripts: dict[str, tuple[str, str]] = {}


def library() -> str:
    """The functions library's text, for ``FUNCTION LOAD REPLACE``."""
    global _library
    if _library is None:
        _library = library_path().read_text(encoding="utf-8")
    return _library


def script(function: str) -> tuple[str, str]:
    """Function ``function``'s standalone script, derived from the library,
    and its SHA-1 (what ``EVALSHA`` names)."""
    if not _scripts:
        for name, text in scripts_from_library(library()).items():
            _scripts[name] = (text, hashlib.sha1(text.encode()).hexdigest())
    found = _scripts.get(function)
    if found is None:
        raise RateLimitError(f"the functions library has no script for {function}")
    return found


class Backend:
    """The found backend, and how it spells each command.

    ``head(command, function, numkeys)`` is what comes before the keys:
    ``("RL.GCRA",)`` or ``("RL.ALL", 2)`` for the module,
    ``("FCALL", "rl_gcra", 1)`` for the functions,
    ``("EVALSHA", sha1, 1)`` for the scripts.
    """

    __slots__ = ("_heads", "kind")

    def __init__(self, kind: str) -> None:
        if kind not in BACKENDS:
            raise RateLimitError(f"backend must be one of {', '.join(BACKENDS)}, got {kind!r}")
        self.kind = kind
        self._heads: dict[tuple[str, int], tuple[Any, ...]] = {}

    def head(self, command: str, function: str, numkeys: int) -> tuple[Any, ...]:
        key = (command, numkeys)
        head = self._heads.get(key)
        if head is None:
            if self.kind == MODULE:
                head = (command, numkeys) if command == "RL.ALL" else (command,)
            elif self.kind == FUNCTIONS:
                head = ("FCALL", function, numkeys)
            else:
                head = ("EVALSHA", script(function)[1], numkeys)
            self._heads[key] = head
        return head

    def __repr__(self) -> str:
        return f"Backend({self.kind!r})"


def is_function_not_found(error: ReplyError) -> bool:
    return "function not found" in error.message.lower()


def search(route: Route) -> Generator[Step, Any, Backend]:
    """The steps of the search; returns the Backend. An error reply that
    says the server cannot serve now (``LOADING``...) ends it with
    Unavailable, as a transport fault does: nothing is kept, and the next
    call searches again."""
    try:
        yield from route.one(("RL.GCRA",))
    except ReplyError as error:
        outage(error)
        if "wrong number of arguments" in error.message.lower():
            log.debug("backend: the module (RL.GCRA exists)")
            return Backend(MODULE)
    try:
        versions = yield from route.every(("FCALL", "rl_version", 0))
    except ReplyError as error:
        outage(error)
        if not is_function_not_found(error):
            # No FCALL (Redis 6), or denied: the scripts.
            log.debug("backend: the scripts (FCALL answered %s)", error.message)
            return Backend(SCRIPTS)
        versions = []
    if versions and all(_text(v) == __version__ for v in versions):
        log.debug("backend: the functions library %s, already loaded", __version__)
        return Backend(FUNCTIONS)
    loaded = yield from load_library(route.every)
    return Backend(FUNCTIONS if loaded else SCRIPTS)


def load_library(send: Callable[[tuple[Any, ...]], Generator[Step, Any, Any]]) -> Generator[Step, Any, bool]:
    """Load the library (through ``send``: every primary of a Cluster, or
    the node that lost it); True when loaded."""
    try:
        yield from send(("FUNCTION", "LOAD", "REPLACE", library()))
    except ReplyError as error:
        outage(error)
        log.warning("the ratelimit functions library could not be loaded (%s): using the scripts", error.message)
        return False
    log.info("loaded the ratelimit functions library %s", __version__)
    return True


def outage(error: ReplyError) -> None:
    """Raise Unavailable for an error reply that says the server cannot
    serve now: the search must not conclude from it."""
    found = reply_error(error.message)
    if isinstance(found, Unavailable):
        raise found


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
