"""The typed value of a reply."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta


class Decision:
    """What the server decided, from the integers of its reply.

    - ``allowed``: True when the request was allowed (or, with ``peek``,
      would be); a ``wait`` reservation is allowed with ``retry_after`` the
      delay before doing the work.
    - ``limit``: the most units allowed at once from rest.
    - ``remaining``: units that would be allowed right after this call.
    - ``retry_after``: a ``timedelta``; when refused, how long until the same
      request would be allowed; when allowed by a reservation, how long to
      wait before doing the work; ``None`` when the reply says -1 (allowed at
      once, or refused and it never can be: ``n`` above ``limit``).
    - ``reset``: a ``timedelta`` until the limiter is fully rested.
    - ``granted``: units granted: ``n`` when allowed, 0 when refused, and with
      ``at_most`` the units the server granted.
    - ``binding``: for ``all_of``, the 1-based position of the binding limit;
      ``None`` for one limiter.
    - ``lease``: for ``Concurrency.acquire``, the lease id (``None`` when
      refused, or for a query or ``peek``).
    - ``raw``: the reply's integers as the server sent them (milliseconds).

    ``retry_after_ms`` and ``reset_ms`` are the same durations as integers of
    milliseconds (``retry_after_ms`` is ``None`` for -1).
    """

    __slots__ = ("allowed", "binding", "granted", "lease", "limit", "raw", "remaining", "reset_ms", "retry_after_ms")

    allowed: bool
    limit: int
    remaining: int
    retry_after_ms: int | None
    reset_ms: int
    granted: int
    binding: int | None
    lease: int | None
    raw: tuple[int, ...]

    def __init__(
        self,
        raw: Sequence[int],
        granted: int,
        binding: int | None = None,
        lease: int | None = None,
    ) -> None:
        self.raw = tuple(raw)
        self.allowed = raw[0] == 0
        self.limit = raw[1]
        self.remaining = raw[2]
        retry = raw[3]
        self.retry_after_ms = None if retry < 0 else retry
        self.reset_ms = raw[4]
        self.granted = granted
        self.binding = binding
        self.lease = lease

    @property
    def retry_after(self) -> timedelta | None:
        """When refused, the wait until the same request would be allowed;
        for a reservation, the wait before doing the work; else None."""
        ms = self.retry_after_ms
        return None if ms is None else timedelta(milliseconds=ms)

    @property
    def reset(self) -> timedelta:
        """The time until the limiter is fully rested."""
        return timedelta(milliseconds=self.reset_ms)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Decision):
            return NotImplemented
        return (self.raw, self.granted, self.binding, self.lease) == (
            other.raw,
            other.granted,
            other.binding,
            other.lease,
        )

    def __hash__(self) -> int:
        return hash((self.raw, self.granted, self.binding, self.lease))

    def __repr__(self) -> str:
        fields = [
            f"allowed={self.allowed}",
            f"limit={self.limit}",
            f"remaining={self.remaining}",
            f"retry_after_ms={self.retry_after_ms}",
            f"reset_ms={self.reset_ms}",
            f"granted={self.granted}",
        ]
        if self.binding is not None:
            fields.append(f"binding={self.binding}")
        if self.lease is not None:
            fields.append(f"lease={self.lease}")
        return f"Decision({', '.join(fields)})"


def rate_decision(reply: Sequence[int], n: int, at_most: bool) -> Decision:
    """The reply of a rate command: five integers, a sixth with AT_MOST."""
    if at_most:
        return Decision(reply, reply[5])
    return Decision(reply, n if reply[0] == 0 else 0)


def all_decision(reply: Sequence[int], n: int, at_most: bool) -> Decision:
    """The reply of RL.ALL: six integers (the binding position), a seventh
    with AT_MOST."""
    if at_most:
        return Decision(reply, reply[6], reply[5])
    return Decision(reply, n if reply[0] == 0 else 0, reply[5])


def lease_decision(reply: Sequence[int], n: int) -> Decision:
    """The reply of RL.CONCURRENCY: six integers, the sixth the lease."""
    return Decision(reply, n if reply[0] == 0 else 0, None, reply[5] or None)
