"""The sync driver: carries a call's steps over blocking connections of its
own, every connect, send and read bounded by the time left before the
call's deadline (a socket timeout set before each), so that a frozen server
or a port that never answers ends the call at its deadline."""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from collections.abc import Generator
from typing import Any, TypeVar

from redis import connection as redis_connection
from redis._parsers import _HiredisParser, _RESP2Parser, _RESP3Parser
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from ._calls import Call, Calls
from ._connections import Driver, Factory, reply_text
from ._errors import RateLimitError, deadline_passed
from ._steps import CARRIED, Address, Done, Fault, ReplyError, Send, Step, advance

T = TypeVar("T")


@functools.cache
def bounded(cls: type) -> type:
    """``cls`` (a redis-py connection class) whose every send and read
    first sets the socket's timeout to the time left before ``deadline``."""

    class Bounded(cls):  # type: ignore[misc]
        deadline = float("inf")

        def _arm(self) -> None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise RedisTimeoutError("the call's deadline passed")
            if self._sock is not None:
                self._sock.settimeout(left)

        def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
            self._arm()
            return super().send_packed_command(*args, **kwargs)

        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            self._arm()
            return super().read_response(*args, **kwargs)

    Bounded.__name__ = Bounded.__qualname__ = f"Bounded{cls.__name__}"
    return Bounded


OVERRIDES = {
    "retry": Retry(NoBackoff(), 0),
    "retry_on_timeout": False,
    "retry_on_error": [],
    "health_check_interval": 0,
    "decode_responses": False,
}


class SyncDriver(Driver):
    """Runs the calls of one RateLimits, a thread each."""

    __slots__ = ("_finding",)

    def __init__(self, calls: Calls, client: Any) -> None:
        super().__init__(
            calls,
            Factory(
                client, bounded, OVERRIDES, (redis_connection.DefaultParser, _RESP2Parser, _RESP3Parser, _HiredisParser)
            ),
        )
        self._finding = threading.Lock()

    def run(self, call: Generator[Step, Any, T]) -> T:
        result: T = self._drive(call, time.monotonic() + self._timeout)
        return result

    def _drive(self, call: Call, deadline: float) -> Any:
        step = advance(call, None, None)
        while not isinstance(step, Done):
            try:
                value = None
                if isinstance(step, Send):
                    value = self._send(step, deadline)
                else:
                    self._find(deadline)
            except (*CARRIED, RateLimitError) as error:
                step = advance(call, None, error)
            else:
                step = advance(call, value, None)
        return step.value

    def _find(self, deadline: float) -> None:
        if not self._finding.acquire(timeout=max(deadline - time.monotonic(), 0)):
            raise deadline_passed(self._calls.timeout_ms)
        try:
            if self._calls.backend is None:
                self._drive(self._calls.search(), deadline)
        finally:
            self._finding.release()

    def _connection(self, node: Address | None) -> tuple[Any, deque[Any]]:
        """An idle connection whose socket the server has not closed (a
        restart, a CLIENT KILL: seen without a round trip), or a new one."""
        idle = self._idle_of(node)
        while idle:
            try:
                connection = idle.pop()
            except IndexError:  # another thread took the last one
                break
            try:
                if not connection.can_read(timeout=0):
                    return connection, idle
            except Exception:
                pass
            connection.disconnect()
        return self._factory.make(node), idle

    def _send(self, step: Send, deadline: float) -> Any:
        connection, idle = self._connection(step.node)
        connection.deadline = deadline
        sent = False
        try:
            if connection._sock is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RedisTimeoutError("the call's deadline passed")
                connection.socket_connect_timeout = connection.socket_timeout = left
                connection.connect()
            sent = True
            if step.asking:
                connection.send_packed_command(connection.pack_commands([("ASKING",), step.args]), check_health=False)
                connection.read_response()
            else:
                connection.send_packed_command(connection.pack_command(*step.args), check_health=False)
            reply = connection.read_response()
        except ResponseError as error:
            idle.append(connection)
            raise ReplyError(reply_text(error)) from None
        except Exception as error:
            connection.disconnect()
            if hasattr(error, "rl_reply"):  # an error reply redis-py raises as a ConnectionError (LOADING...)
                raise ReplyError(reply_text(error)) from None
            raise self._fault(error, sent, deadline) from None
        except BaseException:
            connection.disconnect()
            raise
        idle.append(connection)
        return reply

    def _fault(self, error: Exception, sent: bool, deadline: float) -> Fault:
        if isinstance(error, (RedisTimeoutError, TimeoutError)) or time.monotonic() >= deadline:
            return Fault(deadline_passed(self._calls.timeout_ms).cause, sent=sent, deadline=True)
        return Fault(str(error) or type(error).__name__, sent=sent)

    def close(self) -> None:
        """Close the idle connections (a call in flight closes its own)."""
        for idle in self._idle.values():
            while idle:
                idle.pop().disconnect()
