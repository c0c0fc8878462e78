"""The exceptions of the client."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._decision import Decision


class RateLimitError(Exception):
    """Base class of every exception this package raises."""


class InvalidParameter(RateLimitError, ValueError):
    """A limiter or a call was given a parameter out of its range or of the
    wrong type; raised before anything is sent to Redis."""


class ServerError(RateLimitError):
    """Redis answered an error: a bad argument, a key holding another
    algorithm's state or another type, a limit past a server setting.

    ``message`` is the server's message (as redis-py reports it: without the
    leading ``ERR``); the redis-py exception is the ``__cause__``.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class LimitExceeded(RateLimitError):
    """A scoped lease (``with concurrency.lease(key)``) was refused.

    ``decision`` is the refusal: ``decision.retry_after`` says when a lease
    could be had.
    """

    def __init__(self, key: str | bytes, decision: Decision) -> None:
        super().__init__(f"no lease on {key!r}: {decision}")
        self.key = key
        self.decision = decision
