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
    - ``binding``: the 1-based position of the limit the decision reports
      (for ``all_of``, the binding one; 1 for one limiter).
    - ``lease``: for ``Concurrency.acquire``, the lease id (``None`` when
      refused, or for a query or ``peek``).
    - ``failed_open``: True when the server could not answer and the
      failure policy let the request through (``fail_open``): then
      ``remaining`` is 0, ``retry_after`` None and ``reset`` 0.
    - ``raw``: the reply's integers (milliseconds): as the server sent them,
      or as this client answered for it (a failed-open decision, a
      remembered refusal).

    ``retry_after_ms`` and ``reset_ms`` are the same durations as integers of
    milliseconds (``retry_after_ms`` is ``None`` for -1).
    """

    __slots__ = (
        "allowed",
        "binding",
        "failed_open",
        "granted",
        "lease",
        "limit",
        "raw",
        "remaining",
        "reset_ms",
        "retry_after_ms",
    )

    allowed: bool
    limit: int
    remaining: int
    retry_after_ms: int | None
    reset_ms: int
    granted: int
    binding: int
    lease: int | None
    failed_open: bool
    raw: tuple[int, ...]

    def __init__(
        self,
        raw: Sequence[int],
        granted: int,
        binding: int = 1,
        lease: int | None = None,
        failed_open: bool = False,
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
        self.failed_open = failed_open

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
        return self._fields() == other._fields()

    def _fields(self) -> tuple[object, ...]:
        return (self.raw, self.granted, self.binding, self.lease, self.failed_open)

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        fields = [
            f"allowed={self.allowed}",
            f"limit={self.limit}",
            f"remaining={self.remaining}",
            f"retry_after_ms={self.retry_after_ms}",
            f"reset_ms={self.reset_ms}",
            f"granted={self.granted}",
        ]
        if self.binding != 1:
            fields.append(f"binding={self.binding}")
        if self.lease is not None:
            fields.append(f"lease={self.lease}")
        if self.failed_open:
            fields.append("failed_open=True")
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
    return Decision(reply, n if reply[0] == 0 else 0, 1, reply[5] or None)


def failed_open(limit: int, n: int) -> Decision:
    """The decision of a call the server could not answer, let through by
    the failure policy: allowed, nothing remaining, nothing to wait for."""
    return Decision((0, limit, 0, -1, 0), n, 1, None, True)


def shortened(decision: Decision, elapsed_ms: int) -> Decision:
    """A remembered refusal, ``elapsed_ms`` later: its retry_after (at least
    1 ms) and reset shortened by the time gone by."""
    raw = list(decision.raw)
    retry = max(raw[3] - elapsed_ms, 1)
    raw[3] = retry
    raw[4] = max(raw[4] - elapsed_ms, retry)
    return Decision(raw, decision.granted, decision.binding, decision.lease)
