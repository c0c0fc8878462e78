"""Reading a key without changing it: ``RL.LOG`` (who used a sliding log)
and ``RL.INSPECT`` (the state any limiter keeps), their arguments and their
typed answers. A reading answers no decision: the failure policy never
applies, ``Unavailable`` is raised."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, NamedTuple, TypeVar

from . import _params
from ._calls import Calls
from ._errors import InvalidParameter, RateLimitError
from ._params import Duration, check_key, to_count, to_ms

Key = str | bytes
T = TypeVar("T")
Inspection = dict[str, int | str | None]
"""``inspect``'s fields by name: ``kind`` a str (``None`` when the key holds
only a block), every other an int or ``None``."""


class LogEntry(NamedTuple):
    """Units a sliding log holds at one instant under one tag."""

    instant_us: int
    """When they were taken (or reserved: a future instant), in
    microseconds since the Unix epoch, the server's clock."""
    units: int
    tag: bytes | None
    """The ``TAG`` of the calls that took them, ``None`` for none."""


class TagUnits(NamedTuple):
    """The units a sliding log holds under one tag, within the window."""

    tag: bytes | None
    """``None``: the units taken without a tag."""
    units: int


def log_args(window: Duration, by_tag: bool, count: int | None) -> tuple[Any, ...]:
    """``RL.LOG``'s arguments after the key: window MS [BY TAG] [COUNT n]."""
    args: list[Any] = [to_ms("window", window), "MS"]
    if not isinstance(by_tag, bool):
        raise InvalidParameter(f"by_tag must be True or False, got {type(by_tag).__name__}")
    if by_tag:
        args += ["BY", "TAG"]
    if count is not None:
        args += ["COUNT", to_count("count", count, 1, _params.MAX_COUNT)]
    return tuple(args)


def _unexpected(what: str, reply: Any) -> RateLimitError:
    return RateLimitError(f"{what}: unexpected reply {reply!r}")


def _tag(value: Any, reply: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    raise _unexpected("log", reply)


def _int(value: Any, what: str, reply: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise _unexpected(what, reply)


def _items(reply: Any, size: int) -> list[Any]:
    if not isinstance(reply, list) or not all(isinstance(item, list) and len(item) == size for item in reply):
        raise _unexpected("log", reply)
    return reply


def log_entries(reply: Any) -> list[LogEntry]:
    """``[[instant_us, units, tag or nil], ...]``."""
    return [
        LogEntry(_int(at, "log", reply), _int(units, "log", reply), _tag(tag, reply))
        for at, units, tag in _items(reply, 3)
    ]


def tag_totals(reply: Any) -> list[TagUnits]:
    """``[[tag or nil, units], ...]``."""
    return [TagUnits(_tag(tag, reply), _int(units, "log", reply)) for tag, units in _items(reply, 2)]


def _text(value: Any) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def inspection(reply: Any) -> Inspection | None:
    """``RL.INSPECT``'s reply, a flat array of names and values (RESP2, the
    functions edition) or a map (the module under RESP3), as a dict."""
    if reply is None:
        return None
    if isinstance(reply, dict):
        pairs = list(reply.items())
    elif isinstance(reply, list) and len(reply) % 2 == 0:
        pairs = list(zip(reply[::2], reply[1::2], strict=True))
    else:
        raise _unexpected("inspect", reply)
    fields: Inspection = {}
    for name, value in pairs:
        field = _text(name)
        if value is None:
            fields[field] = None
        elif field == "kind":
            fields[field] = _text(value)
        else:
            fields[field] = _int(value, "inspect", reply)
    return fields


def _read(call: Generator[Any, Any, Any], parse: Callable[[Any], T]) -> Generator[Any, Any, T]:
    return parse((yield from call))


def log_call(
    calls: Calls, key: Key, window: Duration, by_tag: bool, count: int | None
) -> Generator[Any, Any, list[LogEntry] | list[TagUnits]]:
    check_key(key)
    call = calls.call("RL.LOG", "rl_log", (key,), log_args(window, by_tag, count))
    if by_tag:
        return _read(call, tag_totals)
    return _read(call, log_entries)


def inspect_call(calls: Calls, key: Key) -> Generator[Any, Any, Inspection | None]:
    check_key(key)
    return _read(calls.call("RL.INSPECT", "rl_inspect", (key,), ()), inspection)
