"""The local memory of refusals (SPEC 18, clients/contract/README.md): a
plain take refused until an instant is refused in-process until then, with
the same decision, without a round trip."""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Hashable

from ._decision import Decision, shortened


class Refusals:
    """At most ``size`` refusals, each until its ``retry_after``; past the
    count, the one nearest its end is dropped first.

    ``clock`` answers nanoseconds (monotonic); tests give their own.
    """

    __slots__ = ("_clock", "_entries", "_heap", "_lock", "_order", "size")

    def __init__(self, size: int, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.size = size
        self._clock = clock
        # key -> (until, taken at, decision), in clock nanoseconds.
        self._entries: dict[Hashable, tuple[int, int, Decision]] = {}
        # (until, order, key): the entry nearest its end on top; an item whose
        # key was remembered again since is stale, and skipped.
        self._heap: list[tuple[int, int, Hashable]] = []
        self._order = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: Hashable) -> Decision | None:
        """The remembered refusal of ``key``, shortened by the time gone by,
        or None once its instant has come."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        until, taken, decision = entry
        now = self._clock()
        if now >= until:
            return None
        return shortened(decision, (now - taken) // 1_000_000)

    def remember(self, key: Hashable, decision: Decision) -> None:
        """Remember a refusal that carries a ``retry_after``."""
        assert decision.retry_after_ms is not None
        now = self._clock()
        until = now + decision.retry_after_ms * 1_000_000
        with self._lock:
            if key not in self._entries:
                while len(self._entries) >= self.size:
                    self._drop_nearest()
            self._entries[key] = (until, now, decision)
            self._order += 1
            heapq.heappush(self._heap, (until, self._order, key))
            if len(self._heap) > 2 * self.size + 64:
                self._compact()

    def _drop_nearest(self) -> None:
        while True:
            until, _, key = heapq.heappop(self._heap)
            entry = self._entries.get(key)
            if entry is not None and entry[0] == until:
                del self._entries[key]
                return

    def _compact(self) -> None:
        self._heap = [item for item in self._heap if self._entries.get(item[2], (None,))[0] == item[0]]
        heapq.heapify(self._heap)
