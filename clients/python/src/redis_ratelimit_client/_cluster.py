"""A Redis Cluster's map of slots to primaries, kept by the client itself
(sans-IO: its reads are steps of the call that needs them), so that every
command of a call, the map's refresh included, stays within the call's
deadline and is never re-sent by a Redis client underneath."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from redis.crc import key_slot

from ._errors import InvalidParameter, Unavailable
from ._steps import Address, Fault, ReplyError, Send, Step

SLOTS = 16384


def slot_of(key: str | bytes) -> int:
    return int(key_slot(key.encode() if isinstance(key, str) else key))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Topology:
    """The primaries of a Cluster and the slots each serves.

    Learnt from ``CLUSTER SLOTS`` on first use, asked of the known
    primaries and then of the seeds (the startup nodes the user's client
    was given); forgotten when a node fails, so that the next call asks
    again; updated slot by slot by ``MOVED`` replies.
    """

    __slots__ = ("_slots", "primaries", "seeds")

    def __init__(self, seeds: Sequence[Address]) -> None:
        self.seeds = list(dict.fromkeys(seeds))
        self.primaries: list[Address] = []
        self._slots: list[Address] | None = None

    def forget(self) -> None:
        self._slots = None

    def moved(self, slot: int, node: Address) -> None:
        if self._slots is not None:
            self._slots[slot] = node
        if node not in self.primaries:
            self.primaries.append(node)

    def load(self, reply: Any, asked: Address) -> None:
        """The map from a CLUSTER SLOTS reply (its entries: first slot, last
        slot, the primary's address, then its replicas')."""
        slots: list[Address] = [asked] * SLOTS
        primaries: list[Address] = []
        for entry in reply:
            first, last, primary = int(entry[0]), int(entry[1]), entry[2]
            # An empty host is the node's own address, as seen by the asker.
            node = (_text(primary[0]) or asked[0], int(primary[1]))
            slots[first : last + 1] = [node] * (last - first + 1)
            if node not in primaries:
                primaries.append(node)
        if not primaries:
            raise Unavailable(f"the Cluster node at {asked[0]}:{asked[1]} serves no slot")
        self._slots = slots
        self.primaries = primaries

    def refresh(self) -> Generator[Step, Any, None]:
        """Ask the known primaries, then the seeds, until one answers."""
        last = "no node to ask"
        for node in dict.fromkeys([*self.primaries, *self.seeds]):
            try:
                reply = yield Send(("CLUSTER", "SLOTS"), node)
            except Fault as fault:
                if fault.deadline:
                    raise Unavailable(fault.cause) from None
                last = fault.cause
                continue
            except ReplyError as error:
                last = error.message
                continue
            self.load(reply, node)
            return
        raise Unavailable(f"no node of the Cluster answered CLUSTER SLOTS ({last})")

    def route(self, keys: Sequence[str | bytes]) -> Generator[Step, Any, Address]:
        """The primary of the keys' slot (they must share one)."""
        slot = slot_of(keys[0])
        for key in keys[1:]:
            if slot_of(key) != slot:
                raise InvalidParameter(
                    "keys must share one Cluster slot: give them one hash tag ({user:42}:burst, {user:42}:hourly)"
                )
        if self._slots is None:
            yield from self.refresh()
        assert self._slots is not None
        return self._slots[slot]

    def every_primary(self) -> Generator[Step, Any, list[Address]]:
        if self._slots is None:
            yield from self.refresh()
        return list(self.primaries)


def redirection(message: str) -> tuple[int, Address]:
    """The slot and node of a ``MOVED 3999 127.0.0.1:6381`` or ``ASK ...``."""
    _, slot, where = message.split(" ", 2)
    host, _, port = where.rpartition(":")
    return int(slot), (host, int(port))
