"""The async driver: carries a call's steps over ``redis.asyncio``
connections of its own, each step (connect, send, reply) under an asyncio
timeout at the call's deadline. A step cut short closes its connection,
whose reply could otherwise be read by the next call."""

from __future__ import annotations

import asyncio
import sys
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Generator
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from redis._parsers import _AsyncHiredisParser, _AsyncRESP2Parser, _AsyncRESP3Parser
from redis.asyncio import connection as redis_connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ResponseError

from ._calls import Call, Calls
from ._connections import Driver, Factory, reply_text
from ._errors import RateLimitError, deadline_passed
from ._steps import CARRIED, Address, Done, Fault, ReplyError, Send, Step, advance

T = TypeVar("T")

if sys.version_info >= (3, 11):

    async def within(awaitable: Awaitable[T], deadline: float) -> T:
        async with asyncio.timeout_at(deadline):
            return await awaitable

else:  # pragma: no cover - Python 3.10

    async def within(awaitable: Awaitable[T], deadline: float) -> T:
        return await asyncio.wait_for(awaitable, deadline - asyncio.get_running_loop().time())


OVERRIDES = {
    "retry": Retry(NoBackoff(), 0),
    "retry_on_timeout": False,
    "retry_on_error": [],
    "health_check_interval": 0,
    "decode_responses": False,
    # The asyncio timeout bounds every step.
    "socket_timeout": None,
    "socket_connect_timeout": None,
}


async def _can_read(connection: Any) -> bool:
    """Data or an end of stream waiting on an idle connection (redis-py 8
    renamed can_read_destructive to can_read)."""
    check = connection.can_read if _NEW_CAN_READ else connection.can_read_destructive
    return bool(await check())


_NEW_CAN_READ = hasattr(redis_connection.AbstractConnection, "can_read")


def _same(cls: type) -> type:
    return cls


class AsyncDriver(Driver):
    """Runs the calls of one AsyncRateLimits, a task each."""

    __slots__ = ("_finding",)

    def __init__(self, calls: Calls, client: Any) -> None:
        super().__init__(
            calls,
            Factory(
                client,
                _same,
                OVERRIDES,
                (redis_connection.DefaultParser, _AsyncRESP2Parser, _AsyncRESP3Parser, _AsyncHiredisParser),
            ),
        )
        self._finding = asyncio.Lock()

    async def run(self, call: Generator[Step, Any, T]) -> T:
        result: T = await self._drive(call, asyncio.get_running_loop().time() + self._timeout)
        return result

    async def _drive(self, call: Call, deadline: float) -> Any:
        step = advance(call, None, None)
        while not isinstance(step, Done):
            try:
                value = None
                if isinstance(step, Send):
                    value = await self._send(step, deadline)
                else:
                    await self._find(deadline)
            except (*CARRIED, RateLimitError) as error:
                step = advance(call, None, error)
            else:
                step = advance(call, value, None)
        return step.value

    async def _find(self, deadline: float) -> None:
        async with self._searching(deadline):
            if self._calls.backend is None:
                await self._drive(self._calls.search(), deadline)

    @asynccontextmanager
    async def _searching(self, deadline: float) -> AsyncIterator[None]:
        try:
            await within(self._finding.acquire(), deadline)
        except asyncio.TimeoutError:
            raise deadline_passed(self._calls.timeout_ms) from None
        try:
            yield
        finally:
            self._finding.release()

    async def _connection(self, node: Address | None) -> tuple[Any, deque[Any]]:
        """An idle connection whose socket the server has not closed (a
        restart, a CLIENT KILL: seen without a round trip), or a new one."""
        idle = self._idle_of(node)
        if idle:
            # One turn of the loop, so that an end of stream that arrived
            # while the connection was idle (a restart, a CLIENT KILL) is
            # read before it is checked.
            await asyncio.sleep(0)
        while idle:
            connection = idle.pop()
            try:
                if not await _can_read(connection):
                    return connection, idle
            except Exception:
                pass
            await connection.disconnect(nowait=True)
        return self._factory.make(node), idle

    async def _send(self, step: Send, deadline: float) -> Any:
        connection, idle = await self._connection(step.node)
        state = [False]  # whether the command may have been written
        try:
            reply = await within(self._exchange(connection, step, state), deadline)
        except ResponseError as error:
            idle.append(connection)
            raise ReplyError(reply_text(error)) from None
        except asyncio.TimeoutError:
            await connection.disconnect(nowait=True)
            raise Fault(deadline_passed(self._calls.timeout_ms).cause, sent=state[0], deadline=True) from None
        except Exception as error:
            await connection.disconnect(nowait=True)
            if hasattr(error, "rl_reply"):  # an error reply redis-py raises as a ConnectionError (LOADING...)
                raise ReplyError(reply_text(error)) from None
            raise Fault(str(error) or type(error).__name__, sent=state[0]) from None
        except BaseException:
            await connection.disconnect(nowait=True)
            raise
        idle.append(connection)
        return reply

    @staticmethod
    async def _exchange(connection: Any, step: Send, state: list[bool]) -> Any:
        await connection.connect()
        state[0] = True
        if step.asking:
            await connection.send_packed_command(connection.pack_commands([("ASKING",), step.args]), check_health=False)
            await connection.read_response()
        else:
            await connection.send_packed_command(connection.pack_command(*step.args), check_health=False)
        return await connection.read_response()

    async def aclose(self) -> None:
        """Close the idle connections (a call in flight closes its own)."""
        for idle in self._idle.values():
            while idle:
                await idle.pop().disconnect()
