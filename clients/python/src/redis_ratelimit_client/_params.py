"""Parameters from human words: durations to whole milliseconds, counts checked
against the module's documented ranges, and the arguments each call sends.

Every check here runs before anything is sent, and every message names the
parameter. The server checks again (its ranges, its settings): this module
only turns a mistake into an error at construction instead of at the first
request.
"""

from __future__ import annotations

import math
from datetime import timedelta
from decimal import Decimal, InvalidOperation

from ._errors import InvalidParameter

Duration = int | float | timedelta
"""A duration: seconds as an int or a float, or a ``datetime.timedelta``; it
must be a whole number of milliseconds."""

# The module's ranges (docs/commands): periods, windows, timeouts and block
# durations in ms with MS; counts; max_burst.
MAX_MS = 1_000_000_000_000
MAX_COUNT = 1_000_000_000
MAX_BURST = 1_000_000_000  # max_burst + 1
# RL.SLIDING_LOG and RL.CONCURRENCY cap `limit` by a server setting, at most
# this much; the server answers for the setting itself.
MAX_SETTING_LIMIT = 1_000_000
MAX_LEASE = 2**63 - 1

_ONE_MS = timedelta(milliseconds=1)


def to_ms(name: str, value: Duration, *, minimum: int = 1) -> int:
    """The duration ``value`` in whole milliseconds, from ``minimum`` to the
    module's maximum, or InvalidParameter naming ``name``."""
    if isinstance(value, timedelta):
        if value % _ONE_MS:
            raise InvalidParameter(f"{name} must be a whole number of milliseconds, got {value}")
        ms = value // _ONE_MS
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidParameter(
            f"{name} must be a duration (seconds as int or float, or a timedelta), got {type(value).__name__}"
        )
    elif isinstance(value, int):
        ms = value * 1000
    else:
        if not math.isfinite(value):
            raise InvalidParameter(f"{name} must be a finite number of seconds, got {value!r}")
        # The float as written (repr is its shortest decimal form), so that
        # 0.1 s is 100 ms and not 100.00000000000001.
        try:
            exact = Decimal(repr(value)) * 1000
        except InvalidOperation:  # pragma: no cover - repr of a finite float parses
            raise InvalidParameter(f"{name} must be a number of seconds, got {value!r}") from None
        if exact != exact.to_integral_value():
            raise InvalidParameter(f"{name} must be a whole number of milliseconds, got {value!r} s")
        ms = int(exact)
    if ms < minimum or ms > MAX_MS:
        low = "0 ms" if minimum == 0 else "1 ms"
        raise InvalidParameter(f"{name} must be from {low} to {MAX_MS // 1000} s, got {value!r}")
    return ms


def to_count(name: str, value: object, low: int, high: int) -> int:
    """``value`` as an int from ``low`` to ``high``, or InvalidParameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"{name} must be an integer, got {type(value).__name__}")
    if value < low or value > high:
        raise InvalidParameter(f"{name} must be an integer from {low} to {high}, got {value}")
    return value


def check_name(name: object) -> str:
    """A policy name for the RateLimit headers: a non-empty string of
    printable ASCII without quotes, backslashes or braces (it appears as a
    structured-field string, and in the middleware's keys)."""
    if not isinstance(name, str) or not name:
        raise InvalidParameter(f"name must be a non-empty string, got {name!r}")
    for ch in name:
        if not (" " <= ch <= "~") or ch in '"\\{}':
            raise InvalidParameter(f"name must be printable ASCII without quotes, backslashes or braces, got {name!r}")
    return name


def quantity(n: object) -> int:
    """A request's quantity: 0 (a query) to 1,000,000,000."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise InvalidParameter(f"n must be an integer, got {type(n).__name__}")
    if n < 0 or n > MAX_COUNT:
        raise InvalidParameter(f"n must be an integer from 0 to {MAX_COUNT}, got {n}")
    return n


def options(
    n: int,
    peek: bool,
    force: bool,
    wait: Duration | None,
    at_most: bool,
    block: Duration | None,
) -> tuple[object, ...]:
    """The quantity and options of a rate call, after its parameters.

    Which options go together is the server's rule (it answers a syntax
    error naming both): the client does not keep a second copy of it.
    """
    # The plain request first: it is almost every call.
    if type(n) is int and 0 <= n <= MAX_COUNT and not (peek or force or at_most) and wait is None and block is None:
        return (n, "MS")
    quantity(n)
    args: list[object] = [n, "MS"]
    if peek:
        args.append("PEEK")
    if force:
        args.append("FORCE")
    if wait is not None:
        args += ["WAIT", to_ms("wait", wait, minimum=0)]
    if at_most:
        args.append("AT_MOST")
    if block is not None:
        args += ["BLOCK", to_ms("block", block)]
    return tuple(args)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
