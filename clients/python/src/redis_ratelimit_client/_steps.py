"""The steps between the sans-IO core and the two drivers (sync and async).

The core's calls are generators: each yields a step and receives its answer;
an error reply or a transport fault is thrown in. A driver only sends, waits
within the call's deadline and hands back what came; every decision (which
backend, what to reload, when to give up, the failure policy) is the core's.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

Address = tuple[str, int]
"""A Cluster node, as CLUSTER SLOTS names it."""


class Send:
    """Send ``args`` as one command to ``node`` (None: the one server) and
    answer its reply; ``asking``: precede it with ASKING (a Cluster's ASK
    redirection)."""

    __slots__ = ("args", "asking", "node")

    def __init__(self, args: tuple[Any, ...], node: Address | None = None, asking: bool = False) -> None:
        self.args = args
        self.node = node
        self.asking = asking

    def __repr__(self) -> str:
        return f"Send({self.args!r}, node={self.node!r})"


class Find:
    """Find the backend, once for all the callers: the driver runs the
    search under its lock (callers that start together wait for it), within
    the deadline of the call that asked."""

    __slots__ = ()


FIND = Find()

Step = Send | Find


class ReplyError(Exception):
    """An error reply, as the server sent it (code first)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = message.split(" ", 1)[0]


class Fault(Exception):
    """No reply: the deadline passed, or the connection failed.

    ``sent`` is False when the command cannot have reached the server (the
    connection failed before it was written): only then may a Cluster call
    go to another node.
    """

    def __init__(self, cause: str, *, sent: bool, deadline: bool = False) -> None:
        super().__init__(cause)
        self.cause = cause
        self.sent = sent
        self.deadline = deadline


class Done:
    """A call's end: its result."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


# What a driver hands back to the call instead of a reply.
CARRIED = (ReplyError, Fault)


def advance(call: Generator[Step, Any, Any], value: Any, error: BaseException | None) -> Step | Done:
    """The call's next step, given the last one's reply or error."""
    try:
        return call.send(value) if error is None else call.throw(error)
    except StopIteration as stop:
        return Done(stop.value)
