"""The exceptions of the client: the contract's three classes under one
base (clients/contract/errors.json), and the scoped lease's refusal."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._decision import Decision

UNAVAILABLE_PREFIX = "rate limiter unavailable: "

# Error replies that say the server cannot serve now: an outage, to which
# the failure policy applies; every other error reply is a ServerError.
UNAVAILABLE_CODES = frozenset(
    ("LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "READONLY", "OOM", "MISCONF", "NOREPLICAS")
)


class RateLimitError(Exception):
    """Base class of every exception this package raises."""


class InvalidParameter(RateLimitError, ValueError):
    """A limiter or a call was given a parameter out of its range or of the
    wrong type; raised before anything is sent to Redis."""


class ServerError(RateLimitError):
    """The server refused the call: a bad argument, a key holding another
    algorithm's state or another type, a limit past a server setting, an
    ACL. A misconfiguration, never an outage: raised whatever the failure
    policy.

    ``message`` is the reply as the server sent it, code first
    (``ERR limit must be ...``, ``WRONGTYPE Operation ...``); ``code`` is
    its first word.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = message.split(" ", 1)[0]


class Unavailable(RateLimitError):
    """No answer within the deadline, a transport error, or an error reply
    that says the server cannot serve now (``LOADING``, ``BUSY``,
    ``READONLY``...). The failure policy applies to it alone.

    ``cause`` is what happened (``no answer within 250 ms``, the error
    reply as sent, the transport error); the message is
    ``rate limiter unavailable: <cause>``.
    """

    def __init__(self, cause: str) -> None:
        super().__init__(UNAVAILABLE_PREFIX + cause)
        self.cause = cause


def reply_error(message: str) -> ServerError | Unavailable:
    """The exception of an error reply, by its code."""
    if message.split(" ", 1)[0] in UNAVAILABLE_CODES:
        return Unavailable(message)
    return ServerError(message)


def deadline_passed(timeout_ms: int) -> Unavailable:
    return Unavailable(f"no answer within {timeout_ms} ms")


class LimitExceeded(RateLimitError):
    """A scoped lease (``with concurrency.lease(key)``) was refused.

    ``decision`` is the refusal: ``decision.retry_after`` says when a lease
    could be had.
    """

    def __init__(self, key: str | bytes, decision: Decision) -> None:
        super().__init__(f"no lease on {key!r}: {decision}")
        self.key = key
        self.decision = decision
