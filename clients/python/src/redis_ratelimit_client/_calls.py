"""Every call of a client as a generator of steps (sans-IO): the backend
found once, the command routed (a Cluster's slot map), what the server lost
reloaded and the call sent once more, error replies classified, the failure
policy, the local memory of refusals. The sync and async drivers only carry
the steps, within each call's deadline."""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from . import _backend
from ._backend import FUNCTIONS, SCRIPTS, Backend, is_function_not_found, load_library
from ._cluster import Topology, redirection
from ._decision import Decision, failed_open
from ._errors import ServerError, Unavailable, reply_error
from ._refusals import Refusals
from ._steps import FIND, Address, Fault, ReplyError, Send, Step

if TYPE_CHECKING:
    from .metrics import PrometheusMetrics

Key = str | bytes
Call = Generator[Step, Any, Any]
Decided = Generator[Step, Any, Decision]

# A command is redirected by a Cluster (MOVED, ASK) a few times at most.
MAX_REDIRECTIONS = 3


class Calls:
    """What one client object keeps (its backend, its Cluster map, its
    remembered refusals, its options), and its calls."""

    __slots__ = ("backend", "fail_open", "metrics", "refusals", "timeout_ms", "topology")

    def __init__(
        self,
        *,
        backend: Backend | None,
        seeds: Sequence[Address] | None,
        timeout_ms: int,
        fail_open: bool,
        local_refusals: int,
        metrics: PrometheusMetrics | None = None,
    ) -> None:
        self.backend = backend
        self.topology = None if seeds is None else Topology(seeds)
        self.timeout_ms = timeout_ms
        self.fail_open = fail_open
        self.refusals = Refusals(local_refusals) if local_refusals else None
        self.metrics = metrics

    # -- sending ------------------------------------------------------------

    def exchange(self, args: tuple[Any, ...], node: Address | None, keys: Sequence[Key] = ()) -> Call:
        """One command and its reply. A Cluster's redirection is followed (the
        command did not run where it went), and so is a connection that failed
        before the command was written, once the map is asked again. A command
        whose answer was lost is never sent again: it may have run."""
        topology = self.topology
        asking = False
        for _ in range(MAX_REDIRECTIONS):
            try:
                return (yield Send(args, node, asking))
            except Fault as fault:
                if topology is None:
                    raise Unavailable(fault.cause) from None
                topology.forget()
                if fault.sent or fault.deadline or not keys:
                    raise Unavailable(fault.cause) from None
                failed, node = node, (yield from topology.route(keys))
                if node == failed:
                    raise Unavailable(fault.cause) from None
                asking = False
            except ReplyError as error:
                if topology is None or error.code not in ("MOVED", "ASK"):
                    raise
                slot, node = redirection(error.message)
                asking = error.code == "ASK"
                if not asking:
                    topology.moved(slot, node)
        raise Unavailable(f"more than {MAX_REDIRECTIONS} Cluster redirections for one command")

    def one(self, args: tuple[Any, ...]) -> Call:
        """To the server, or to a primary of a Cluster (the search's probes)."""
        node = None
        if self.topology is not None:
            node = (yield from self.topology.every_primary())[0]
        return (yield from self.exchange(args, node))

    def every(self, args: tuple[Any, ...]) -> Generator[Step, Any, list[Any]]:
        """To the server, or to every primary of a Cluster: their replies."""
        if self.topology is None:
            return [(yield from self.exchange(args, None))]
        replies = []
        for node in (yield from self.topology.every_primary()):
            replies.append((yield from self.exchange(args, node)))
        return replies

    def find(self) -> Generator[Step, Any, None]:
        """Have the backend found, when it was not yet."""
        if self.backend is None:
            yield FIND

    def search(self) -> Generator[Step, Any, None]:
        """Find the backend (the driver runs this under its lock)."""
        if self.backend is None:
            self.backend = yield from _backend.search(self)

    # -- one command on the keys of a limiter --------------------------------

    def call(self, command: str, function: str, keys: Sequence[Key], args: Sequence[Any]) -> Call:
        """The command on the backend; what the server lost (the library: a
        failover to a replica it never reached, a FUNCTION FLUSH; a flushed
        script) is loaded again and the command sent once more, once: the
        first did not run. Error replies become ServerError or Unavailable."""
        if self.backend is None:
            yield FIND
        backend = self.backend
        assert backend is not None
        node = None
        if self.topology is not None:
            node = yield from self.topology.route(keys)
        command_args = (*backend.head(command, function, len(keys)), *keys, *args)
        try:
            return (yield from self.exchange(command_args, node, keys))
        except ReplyError as error:
            if self.topology is not None:
                node = yield from self.topology.route(keys)  # the map may have moved the slot since
            if backend.kind == FUNCTIONS and is_function_not_found(error):
                if not (yield from load_library(lambda args: self.exchange(args, node))):
                    raise ServerError(error.message) from None
            elif backend.kind == SCRIPTS and error.code == "NOSCRIPT":
                script = _backend.script(function)[0]
                try:
                    yield from self.exchange(("SCRIPT", "LOAD", script), node)
                except ReplyError as refused:
                    raise reply_error(refused.message) from None
            else:
                raise reply_error(error.message) from None
        try:
            return (yield from self.exchange(command_args, node, keys))
        except ReplyError as again:
            raise reply_error(again.message) from None

    def decide(
        self,
        command: str,
        function: str,
        keys: Sequence[Key],
        args: Sequence[Any],
        decision: Callable[[Any], Decision],
        limit: int,
        n: int,
        fail_open: bool | None = None,
        memo: Hashable | None = None,
    ) -> Decided:
        """A call that answers a decision, under the failure policy
        (``fail_open``, default the client's): Unavailable becomes a
        failed-open decision of ``limit`` and ``n``. ``memo`` names a plain
        take, remembered when refused (local refusals)."""
        refusals = self.refusals
        if memo is not None and refusals is not None:
            known = refusals.get(memo)
            if known is not None:
                return known
        try:
            reply = yield from self.call(command, function, keys, args)
        except Unavailable:
            if self.fail_open if fail_open is None else fail_open:
                return failed_open(limit, n)
            raise
        decided = decision(reply)
        if memo is not None and refusals is not None and not decided.allowed and decided.retry_after_ms is not None:
            refusals.remember(memo, decided)
        return decided
