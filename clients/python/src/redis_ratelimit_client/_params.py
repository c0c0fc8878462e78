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
from decimal import Decimal

from ._errors import InvalidParameter

Duration = int | float | timedelta
"""A duration: seconds as an int or a float, or a ``datetime.timedelta``; it
must be a whole number of milliseconds."""

# The module's ranges (docs/commands, clients/contract/ranges.json):
# periods, windows, timeouts and block durations in ms with MS; counts;
# max_burst + 1.
MAX_MS = 1_000_000_000_000
MAX_COUNT = 1_000_000_000
MAX_BURST = 1_000_000_000  # max_burst + 1
# RL.SLIDING_LOG and RL.CONCURRENCY cap `limit` by a server setting, at most
# this much; the server answers for the setting itself (check() finds it).
MAX_SETTING_LIMIT = 1_000_000
MAX_LEASE = 2**63 - 1
# The client's own options.
MAX_TIMEOUT_MS = 60_000
DEFAULT_TIMEOUT_MS = 250
MAX_LOCAL_REFUSALS = 1_000_000
MAX_LIMITERS = 100
# A tag's bytes (RL.SLIDING_LOG, RL.ALL): the server's tag_max_bytes
# (default 64) is at most this much; the server answers for the setting.
MAX_TAG_BYTES = 1024

_ONE_MS = timedelta(milliseconds=1)
_ONE_US = timedelta(microseconds=1)


def _ms_text(ms: Decimal) -> str:
    """A number of milliseconds as the messages write it: 1.5, 0.25, -1000."""
    if ms == ms.to_integral_value():
        return str(int(ms))
    return format(ms.normalize(), "f")


def to_ms(name: str, value: Duration, *, minimum: int = 1, maximum: int = MAX_MS) -> int:
    """The duration ``value`` in whole milliseconds, from ``minimum`` to
    ``maximum``, or InvalidParameter naming ``name`` (in milliseconds,
    whatever form the value had)."""
    if isinstance(value, timedelta):
        exact = Decimal(value // _ONE_US) / 1000
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidParameter(
            f"{name} must be a duration (seconds as int or float, or a timedelta), got {type(value).__name__}"
        )
    elif isinstance(value, int):
        exact = Decimal(value * 1000)
    else:
        if not math.isfinite(value):
            raise InvalidParameter(f"{name} must be a finite number of seconds, got {value!r}")
        # The float as written (repr is its shortest decimal form), so that
        # 0.1 s is 100 ms and not 100.00000000000001.
        exact = Decimal(repr(value)) * 1000
    if exact != exact.to_integral_value():
        raise InvalidParameter(f"{name} must be a whole number of milliseconds, got {_ms_text(exact)} ms")
    ms = int(exact)
    if ms < minimum or ms > maximum:
        raise InvalidParameter(f"{name} must be from {minimum} ms to {maximum} ms, got {ms} ms")
    return ms


def to_count(name: str, value: object, low: int, high: int) -> int:
    """``value`` as an int from ``low`` to ``high``, or InvalidParameter."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidParameter(f"{name} must be an integer, got {type(value).__name__}")
    if value < low or value > high:
        raise InvalidParameter(f"{name} must be an integer from {low} to {high}, got {value}")
    return value


NAME_RULE = 'name must be a non-empty string of printable ASCII without ", \\, { or }'


def check_name(name: object) -> str:
    """A policy name for the RateLimit headers: a non-empty string of
    printable ASCII without quotes, backslashes or braces (it appears as a
    structured-field string, and in the middleware's keys)."""
    if not isinstance(name, str) or not name or any(not (" " <= ch <= "~") or ch in '"\\{}' for ch in name):
        raise InvalidParameter(NAME_RULE)
    return name


def check_key(key: object) -> None:
    """A Redis key: a non-empty str or bytes (redis-py would send None as
    an error of its own, and an empty key is always a mistake)."""
    if not isinstance(key, (str, bytes)):
        raise InvalidParameter(f"key must be a non-empty string, got {type(key).__name__}")
    if not key:
        raise InvalidParameter("key must be a non-empty string")


def check_tag(tag: object) -> str | bytes:
    """A tag (``TAG``): a str (sent in UTF-8) or bytes, of 1 to 1,024
    bytes. Never cut short: two tags that share their first bytes would
    become one."""
    if isinstance(tag, str):
        size = len(tag.encode("utf-8", "surrogatepass"))
    elif isinstance(tag, bytes):
        size = len(tag)
    else:
        raise InvalidParameter(f"tag must be a str or bytes, got {type(tag).__name__}")
    if size < 1 or size > MAX_TAG_BYTES:
        raise InvalidParameter(f"tag must be from 1 to {MAX_TAG_BYTES} bytes, got {size} bytes")
    return tag


def quantity(n: object) -> int:
    """A request's quantity: 0 (a query) to 1,000,000,000."""
    return to_count("n", n, 0, MAX_COUNT)


def options(
    n: int,
    peek: bool = False,
    force: bool = False,
    wait: Duration | None = None,
    at_most: bool = False,
    block: Duration | None = None,
    refund: bool = False,
    tag: str | bytes | None = None,
) -> tuple[object, ...]:
    """The quantity and options of a rate call, after its parameters, in
    the contract's order: n MS PEEK REFUND FORCE WAIT ms AT_MOST BLOCK ms
    TAG value.

    Which options go together is the server's rule (it answers a syntax
    error naming both): the client does not keep a second copy of it.
    """
    # The plain request first: it is almost every call.
    plain = not (peek or force or at_most or refund) and wait is None and block is None and tag is None
    if plain and type(n) is int and 0 <= n <= MAX_COUNT:
        return (n, "MS")
    quantity(n)
    args: list[object] = [n, "MS"]
    if peek:
        args.append("PEEK")
    if refund:
        args.append("REFUND")
    if force:
        args.append("FORCE")
    if wait is not None:
        args += ["WAIT", to_ms("wait", wait, minimum=0)]
    if at_most:
        args.append("AT_MOST")
    if block is not None:
        args += ["BLOCK", to_ms("block", block)]
    if tag is not None:
        args += ["TAG", check_tag(tag)]
    return tuple(args)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)
