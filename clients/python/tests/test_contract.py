"""The clients' contract (clients/contract/*.json), every case that applies
to Python, through the sync and the async client: a case added to the JSON
is a test here with no code change.

Offline, a scripted RESP server (tests/fake.py) stands in for Redis behind
the client's real code (arguments, drivers, redis-py's connections and
parsers, the backend search, the error classes); the calls marked fresh are
also sent to real servers of each backend and must answer the same."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

import redis_ratelimit_client as rl
from redis_ratelimit_client import AsyncRateLimits, Decision, InvalidParameter, RateLimitError
from redis_ratelimit_client._backend import library, script
from redis_ratelimit_client.asgi import RateLimitMiddleware, limiter_keys
from redis_ratelimit_client.fastapi import RateLimitDependency

from .fake import CLOSE, SILENT, BlackHole, Error, FakeRedis
from .servers import Server, free_port

CONTRACT = Path(__file__).resolve().parents[2] / "contract"


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONTRACT / name).read_text())
    return data


CALLS = load("calls.json")["cases"]
ERRORS = load("errors.json")
RANGES = load("ranges.json")
MIDDLEWARE = load("middleware.json")
BACKENDS = load("backends.json")["transcripts"]


def for_python(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [case for case in cases if "python" in case.get("languages", ["python"])]


def ids(cases: list[dict[str, Any]]) -> list[str]:
    return [case["name"] for case in cases]


# -- the cases' words as Python ----------------------------------------------


def expand(value: Any) -> Any:
    """The placeholders of commands and replies: <version>, <library>,
    <script:rl_x>, <sha:rl_x>."""
    if isinstance(value, list):
        return [expand(v) for v in value]
    if not isinstance(value, str) or not value.startswith("<"):
        return value
    if value == "<version>":
        return rl.__version__
    if value == "<library>":
        return library()
    kind, _, function = value[1:-1].partition(":")
    text, sha = script(function)
    if kind == "script":
        return text
    if kind == "sha":
        return sha
    raise ValueError(f"unknown placeholder {value}")


def ms(value: int | float) -> timedelta:
    return timedelta(milliseconds=value)


LIMITER_FIELDS = {
    "gcra": {"rate", "per_ms", "burst"},
    "token_bucket": {"capacity", "refill", "per_ms"},
    "fixed_window": {"limit", "window_ms"},
    "sliding_log": {"limit", "window_ms"},
    "sliding_counter": {"limit", "window_ms"},
    "all_of": {"limiters"},
    "concurrency": {"limit", "timeout_ms"},
}


def build(limits: Any, spec: dict[str, Any]) -> Any:
    """A limiter of the contract's language-neutral form."""
    kind = spec["kind"]
    unknown = set(spec) - LIMITER_FIELDS[kind] - {"kind", "name"}
    assert not unknown, f"{kind}: fields this test does not know: {unknown}"
    named = {"name": spec["name"]} if "name" in spec else {}
    if kind == "gcra":
        burst = {"burst": spec["burst"]} if "burst" in spec else {}
        return limits.gcra(rate=spec["rate"], per=ms(spec["per_ms"]), **burst, **named)
    if kind == "token_bucket":
        return limits.token_bucket(capacity=spec["capacity"], refill=spec["refill"], per=ms(spec["per_ms"]), **named)
    if kind in ("fixed_window", "sliding_log", "sliding_counter"):
        return getattr(limits, kind)(limit=spec["limit"], window=ms(spec["window_ms"]), **named)
    if kind == "all_of":
        return limits.all_of(*(build(limits, s) for s in spec["limiters"]))
    return limits.concurrency(limit=spec["limit"], timeout=ms(spec["timeout_ms"]))


def read(limits: Any, call: dict[str, Any]) -> Any:
    """A reading (log, inspect) as the contract writes its result."""
    (key,) = call["keys"]
    if call["op"] == "inspect":
        return limits.inspect(key)
    options = dict(call.get("options", {}))
    by_tag = options.pop("by_tag", False)
    count = options.pop("count", None)
    assert not options, f"log options this test does not know: {options}"
    items = limits.log(key, ms(call["window_ms"]), by_tag=by_tag, count=count)
    if by_tag:
        assert all(isinstance(item, rl.TagUnits) for item in items)
        return [{"tag": text(item.tag), "units": item.units} for item in items]
    assert all(isinstance(item, rl.LogEntry) for item in items)
    return [{"instant_us": item.instant_us, "units": item.units, "tag": text(item.tag)} for item in items]


def text(tag: bytes | None) -> str | None:
    assert tag is None or isinstance(tag, bytes), tag
    return None if tag is None else tag.decode()


def perform(limits: Any, limiter_spec: dict[str, Any] | None, call: dict[str, Any]) -> Any:
    """The contract's call on a limiter: its decision or result."""
    if call["op"] in ("log", "inspect"):
        return read(limits, call)
    assert limiter_spec is not None
    limiter = build(limits, limiter_spec)
    op = call["op"]
    if op == "check":
        return limiter.check()
    keys = call["keys"]
    key: Any = keys if limiter_spec["kind"] == "all_of" else keys[0]
    options = dict(call.get("options", {}))
    if op == "take":
        kw = {
            "peek": options.pop("peek", False),
            "force": options.pop("force", False),
            "at_most": options.pop("at_most", False),
        }
        if "wait_ms" in options:
            kw["wait"] = ms(options.pop("wait_ms"))
        if "block_ms" in options:
            kw["block"] = ms(options.pop("block_ms"))
        if "tag" in options:
            kw["tag"] = options.pop("tag")
        assert not options, f"options this test does not know: {options}"
        return limiter.take(key, call["n"], **kw)
    if op == "acquire":
        peek = options.pop("peek", False)
        assert not options, f"acquire takes peek alone: {options}"
        return limiter.acquire(key, call["n"], peek=peek)
    assert not options, f"{op} takes no options here: {options}"
    if op == "refund":
        return limiter.refund(key, call["n"])
    if op == "release":
        return limiter.release(key, call["lease"])
    if op == "renew":
        return limiter.renew(key, call["lease"], ms(call["timeout_ms"]))
    raise AssertionError(f"unknown op {op}")


def fields(decision: Decision, expected: dict[str, Any]) -> dict[str, Any]:
    """The decision's fields that the contract names, in its words."""
    assert isinstance(decision, Decision), decision
    mine = {
        "allowed": decision.allowed,
        "limit": decision.limit,
        "remaining": decision.remaining,
        "retry_after_ms": decision.retry_after_ms,
        "reset_ms": decision.reset_ms,
        "granted": decision.granted,
        "binding": decision.binding,
        "failed_open": decision.failed_open,
        "lease": decision.lease,
    }
    # Both forms say the same: the timedelta and the milliseconds.
    assert decision.retry_after == (None if decision.retry_after_ms is None else ms(decision.retry_after_ms))
    assert decision.reset == ms(decision.reset_ms)
    return {name: mine[name] for name in expected}


def replying(answer: Any) -> Callable[[list[str]], Any]:
    return lambda args: answer


BACKENDS_OF_CALLS = ["module", "functions", "scripts"]


# -- calls.json ----------------------------------------------------------------


@pytest.mark.parametrize("backend_kind", BACKENDS_OF_CALLS)
@pytest.mark.parametrize("case", for_python(CALLS), ids=ids(for_python(CALLS)))
def test_call_sends_and_decides(case: dict[str, Any], backend_kind: str, connect: Callable[..., Any]) -> None:
    """The command on each backend (named, so no search), and the reply as
    the decision."""
    resp3 = {"redis_options": {"protocol": 3}} if case.get("resp") == 3 else {}
    expected = [[str(a) for a in expand(case[backend_kind])]]
    with FakeRedis(replying(case["reply"])) as fake:
        limits = connect(fake.port, backend=backend_kind, **resp3)
        result = perform(limits, case["limiter"], case["call"])
        assert fake.commands == expected
    if "decision" in case:
        assert fields(result, case["decision"]) == case["decision"]
    else:
        assert result == case["result"]


FRESH = [case for case in for_python(CALLS) if case["fresh"]]


@pytest.mark.parametrize("case", FRESH, ids=ids(FRESH))
def test_fresh_reply_on_a_real_server(case: dict[str, Any], server: Server, connect: Callable[..., Any]) -> None:
    """A new key really gets the case's reply, on every backend (the
    ``server`` fixture: the module, the functions library loaded by the
    client, the scripts on Redis 6)."""
    limits = connect(server.port)
    result = perform(limits, case["limiter"], case["call"])
    if "decision" not in case and case["call"]["op"] in ("log", "inspect"):
        # Over RESP3 too: the module answers RL.INSPECT a map there.
        assert perform(connect(server.port, redis_options={"protocol": 3}), None, case["call"]) == case["result"]
    if "decision" not in case:
        assert result == case["result"]
        return
    expected = dict(case["decision"])
    if 5 in case.get("fresh_ignore", []) and expected.get("lease") is not None:
        # A lease id is the server's clock in microseconds: any positive one.
        assert isinstance(result.lease, int) and result.lease > 0
        expected.pop("lease")
    assert fields(result, expected) == expected


# -- errors.json -----------------------------------------------------------------

CLASSES = {name: getattr(rl, name) for name in ERRORS["classes"].values()}
GCRA = {"kind": "gcra", "rate": 10, "per_ms": 1000, "burst": 20}


def test_error_classes() -> None:
    base = CLASSES[ERRORS["classes"]["base"]]
    assert base is RateLimitError
    for role in ("invalid", "server", "unavailable"):
        assert issubclass(CLASSES[ERRORS["classes"][role]], base)
    assert sorted(rl._errors.UNAVAILABLE_CODES) == sorted(ERRORS["unavailable_codes"])


@pytest.mark.parametrize("fail_open", [False, True], ids=["fail closed", "fail open"])
@pytest.mark.parametrize("case", ERRORS["server_errors"], ids=[c["reply_error"][:40] for c in ERRORS["server_errors"]])
def test_server_error_reply(case: dict[str, Any], fail_open: bool, connect: Callable[..., Any]) -> None:
    with FakeRedis(replying(Error(case["reply_error"]))) as fake:
        limits = connect(fake.port, backend="module", fail_open=fail_open)
        limiter = build(limits, GCRA)
        if case["raises"] == "Unavailable" and fail_open:
            assert fields(limiter.take("k"), {"failed_open": True}) == {"failed_open": True}
            return
        with pytest.raises(CLASSES[case["raises"]]) as raised:
            limiter.take("k")
    if case["raises"] == "ServerError":
        assert (raised.value.code, raised.value.message, str(raised.value)) == (
            case["code"],
            case["reply_error"],
            case["reply_error"],
        )
    else:
        assert str(raised.value) == ERRORS["unavailable_prefix"] + case["reply_error"]


class Fault:
    """A transport fault of errors.json, made real: its port, and the
    exact message when the case gives one."""

    def __init__(self, kind: str) -> None:
        self._close: Any = None
        if kind == "no_answer":
            hole = BlackHole()
            self.port, self._close = hole.port, hole.close
        elif kind == "refused":
            self.port = free_port()
        elif kind == "closed":
            fake = FakeRedis(replying(CLOSE))
            self.port, self._close = fake.port, fake.close
        else:
            raise AssertionError(f"no fault made for the kind {kind!r}: add one here")

    def close(self) -> None:
        if self._close:
            self._close()


@pytest.mark.parametrize("case", ERRORS["transport"], ids=[c["fault"][:40] for c in ERRORS["transport"]])
def test_transport_fault(case: dict[str, Any], connect: Callable[..., Any]) -> None:
    fault = Fault(case["kind"])
    try:
        limits = connect(fault.port, backend="module", timeout=ms(100))
        with pytest.raises(CLASSES[case["raises"]]) as raised:
            build(limits, GCRA).take("k")
        message = str(raised.value)
        if "message" in case:
            assert message == case["message"].format(timeout=100)
        else:
            assert message.startswith(case["message_prefix"]) and len(message) > len(case["message_prefix"])
        # Failing open, the same fault is a decision marked so.
        opened = connect(fault.port, backend="module", timeout=ms(100), fail_open=True)
        decision = build(opened, GCRA).take("k", 3)
        expected = {"allowed": True, "limit": 20, "remaining": 0, "retry_after_ms": None, "reset_ms": 0}
        expected |= {"granted": 3, "binding": 1, "lease": None, "failed_open": True}
        assert fields(decision, expected) == expected
    finally:
        fault.close()


INVALID = for_python(ERRORS["invalid"])


@pytest.mark.parametrize("case", INVALID, ids=ids(INVALID))
def test_invalid_before_sending(case: dict[str, Any], connect: Callable[..., Any]) -> None:
    with FakeRedis(replying(Error("ERR nothing may be sent"))) as fake:
        limits = connect(fake.port, backend="module")
        with pytest.raises(InvalidParameter) as raised:
            if case["call"] is None:
                build(limits, case["limiter"])
            else:
                perform(limits, case["limiter"], case["call"])
        assert str(raised.value) == case["message"]
        assert fake.commands == []


# -- ranges.json -------------------------------------------------------------------

WHERE_BASE: dict[str, dict[str, Any]] = {
    "gcra": {"rate": 10, "per": 1000, "burst": 20},
    "token_bucket": {"capacity": 10, "refill": 1, "per": 1000},
    "fixed_window": {"limit": 10, "window": 1000},
    "sliding_log": {"limit": 10, "window": 1000},
    "sliding_counter": {"limit": 10, "window": 1000},
    "concurrency": {"limit": 2, "timeout": 1000},
}
DURATIONS = {"per", "window", "timeout", "wait", "block"}


def python_name(name: str) -> str:
    return str(RANGES["names"].get(name, {}).get("python", name))


def set_param(limits_for: Callable[..., Any], where: str, name: str, value: Any) -> Any:
    """Make the limiter, call or client of ``where`` with ``name`` set to
    ``value`` (the others valid); answers what it made or called."""
    name = python_name(name)
    if where == "client":
        return limits_for(**{name: value})
    limits = limits_for()
    if where in WHERE_BASE:
        params = {k: ms(v) if k in DURATIONS else v for k, v in WHERE_BASE[where].items()}
        params[name] = value
        if where == "concurrency":
            return limits.concurrency(**params)
        return getattr(limits, where)(**params)
    if where == "take":
        limiter = limits.gcra(rate=10, per=1)
        return limiter.take("k", value) if name == "n" else limiter.take("k", **{name: value})
    if where == "log":
        return limits.log("k", value) if name == "window" else limits.log("k", 60, **{name: value})
    jobs = limits.concurrency(limit=2, timeout=1)
    if where == "acquire":
        return jobs.acquire("k", value)
    if where == "release":
        return jobs.release("k", value)
    if where == "renew":
        return jobs.renew("k", 1, value)
    raise AssertionError(f"no parameter place {where!r}: add it here")


def range_cases() -> Iterator[Any]:
    for param in RANGES["params"]:
        low, high = param["min"], param["max"]
        for value, ok in ((low, True), (high, True), (low - 1, False), (high + 1, False)):
            forms = [value]
            if param["kind"] == "ms":
                forms = [ms(value), value / 1000]  # a timedelta, and seconds as a float
            elif param["kind"] == "bytes":
                forms = ["é" * (value // 2) + "x" * (value % 2), b"x" * value]  # UTF-8 bytes are counted
            for form in forms:
                shown = f"{type(form).__name__} of {value} bytes" if param["kind"] == "bytes" else repr(form)
                label = f"{param['where']}.{param['name']}={shown}"
                yield pytest.param(param, value, form, ok, id=label)


@pytest.fixture
def accepting(connect: Callable[..., Any]) -> Iterator[Callable[..., Any]]:
    """limits_for(**options): clients of a server that answers any call
    (six integers fit every rate command's reading; release and renew get
    a number)."""

    def answer(args: list[str]) -> Any:
        if args[0] in ("RL.RELEASE", "RL.RENEW"):
            return 1
        return [] if args[0] == "RL.LOG" else [0, 10, 9, -1, 100, 1]

    fake = FakeRedis(answer)
    try:
        yield lambda **options: connect(fake.port, backend="module", **options)
    finally:
        fake.close()


@pytest.mark.parametrize(("param", "value", "form", "ok"), list(range_cases()))
def test_range(param: dict[str, Any], value: int, form: Any, ok: bool, accepting: Callable[..., Any]) -> None:
    name = python_name(param["name"])
    if ok:
        set_param(accepting, param["where"], param["name"], form)
        return
    with pytest.raises(InvalidParameter) as raised:
        set_param(accepting, param["where"], param["name"], form)
    words = RANGES["messages"][param["kind"]]
    assert str(raised.value) == words.format(name=name, min=param["min"], max=param["max"], value=value)


@pytest.mark.parametrize("case", RANGES["whole_ms"], ids=[f"{c['where']}.{c['name']}" for c in RANGES["whole_ms"]])
def test_whole_milliseconds(case: dict[str, Any], accepting: Callable[..., Any]) -> None:
    for form in (ms(case["value_ms"]), case["value_ms"] / 1000):
        with pytest.raises(InvalidParameter) as raised:
            set_param(accepting, case["where"], case["name"], form)
        assert str(raised.value) == case["message"]


def test_client_defaults(accepting: Callable[..., Any]) -> None:
    limits = accepting()
    defaults = {p["name"]: p["default"] for p in RANGES["params"] if p["where"] == "client"}
    assert limits.timeout_ms == defaults["timeout"]
    assert limits._calls.refusals is None and defaults["local_refusals"] == 0


# -- middleware.json ---------------------------------------------------------------


def middleware_limiter(limits: Any, specs: list[dict[str, Any]]) -> Any:
    limiters = [build(limits, spec) for spec in specs]
    return limiters[0] if len(limiters) == 1 else limiters


@pytest.mark.parametrize("case", MIDDLEWARE["keys"], ids=[f"{c['prefix']}|{c['identity']}" for c in MIDDLEWARE["keys"]])
def test_middleware_keys(case: dict[str, Any]) -> None:
    limits = AsyncRateLimits(redis.asyncio.Redis(port=free_port()))
    specs = [{**GCRA, "name": name} for name in case["names"]]
    limiter = middleware_limiter(limits, specs)
    limiter = limits.all_of(*limiter) if isinstance(limiter, list) else limiter
    assert limiter_keys(limiter, case["identity"], case["prefix"]) == case["keys"]
    if case["prefix"] == MIDDLEWARE["prefix_default"]:
        assert limiter_keys(limiter, case["identity"]) == case["keys"]


class Outcome:
    """What stands in for Redis in a response case: a server that answers
    the reply or the error reply, or a black hole (no answer)."""

    def __init__(self, outcome: dict[str, Any] | None) -> None:
        self.server: Any
        if outcome is None or "reply" in outcome:
            self.server = FakeRedis(replying((outcome or {}).get("reply", Error("ERR nothing may be sent"))))
        elif "reply_error" in outcome:
            self.server = FakeRedis(replying(Error(outcome["reply_error"])))
        elif "unavailable" in outcome:
            self.server = BlackHole()
        else:
            raise AssertionError(f"no outcome made for {outcome}: add one here")


async def respond(case: dict[str, Any], port: int) -> tuple[httpx.Response, list[Any], list[BaseException]]:
    """One GET through the real middleware, in a Starlette app, in-process."""
    client = redis.asyncio.Redis(host="127.0.0.1", port=port)
    limits = AsyncRateLimits(client, backend="module", timeout=ms(200))
    marks: list[Any] = []
    raised: list[BaseException] = []

    async def home(request: Request) -> PlainTextResponse:
        marks.append(getattr(request.state, "rate_limit", None))
        return PlainTextResponse("ok")

    identity = case.get("identity", "203.0.113.7")
    app = Starlette(routes=[Route("/", home)])
    app.add_middleware(
        RateLimitMiddleware,
        limiter=middleware_limiter(limits, case["limiters"]),
        key=lambda scope: identity,
        fail_open=case["fail_open"],
    )

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except Exception as error:
            raised.append(error)
            raise

    transport = httpx.ASGITransport(app=recording, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.get("/")
    finally:
        await limits.aclose()
        await client.aclose()
    return response, marks, raised


@pytest.mark.parametrize("case", MIDDLEWARE["responses"], ids=ids(MIDDLEWARE["responses"]))
def test_middleware_response(case: dict[str, Any]) -> None:
    outcome = Outcome(case["outcome"])
    try:
        response, marks, raised = asyncio.run(respond(case, outcome.server.port))
    finally:
        outcome.server.close()
    status = case["status"]
    assert response.status_code == (200 if status == "app" else status)
    for name, value in case["headers"].items():
        assert response.headers.get(name) == value, name
    for name in case["absent"]:
        assert name not in response.headers, name
    if "body" in case:
        assert response.text == case["body"]
    if status == "app":
        assert response.text == "ok"
        mark = marks[0]
        if case.get("marked") == "failed_open":
            assert isinstance(mark, Decision) and mark.failed_open is True
        elif case.get("marked") == "decision":
            assert isinstance(mark, Decision) and mark.failed_open is False
            assert list(mark.raw) == case["outcome"]["reply"]
        else:
            assert mark is None
    if "raised" in case:
        assert [type(error).__name__ for error in raised] == [case["raised"]]


def tag_value(tag: Any) -> Any:
    """A case's tag: a string, null, or {"repeat": s, "times": n}."""
    if isinstance(tag, dict):
        return tag["repeat"] * tag["times"]
    return tag


async def respond_tagged(case: dict[str, Any], port: int) -> tuple[httpx.Response, list[BaseException]]:
    client = redis.asyncio.Redis(host="127.0.0.1", port=port)
    limits = AsyncRateLimits(client, backend="module", timeout=ms(200))
    raised: list[BaseException] = []
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    tag = tag_value(case["tag"])

    async def user(scope: Any) -> Any:  # a coroutine function too
        return tag

    app.add_middleware(
        RateLimitMiddleware,
        limiter=middleware_limiter(limits, case["limiters"]),
        key=lambda scope: case["identity"],
        tag=user,
    )

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        try:
            await app(scope, receive, send)
        except Exception as error:
            raised.append(error)
            raise

    transport = httpx.ASGITransport(app=recording, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            response = await http.get("/")
    finally:
        await limits.aclose()
        await client.aclose()
    return response, raised


@pytest.mark.parametrize("case", MIDDLEWARE["tags"], ids=ids(MIDDLEWARE["tags"]))
def test_middleware_tag(case: dict[str, Any]) -> None:
    """The tag function's value as TAG on the wire, or the error raised
    (the start-up check's PEEK aside)."""

    def answer(args: list[str]) -> Any:
        if "TAG" in args and "reply_error" in case:
            return Error(case["reply_error"])
        if "PEEK" in args or case.get("reply") is None:
            return [0, 100, 99, -1, 60000, 1]
        return case["reply"]

    with FakeRedis(answer) as fake:
        response, raised = asyncio.run(respond_tagged(case, fake.port))
        sent = [command for command in fake.commands if "PEEK" not in command]
    if case["status"] == "app":
        assert response.status_code == 200 and response.text == "ok"
        assert sent == [case["sent"]]
        return
    assert response.status_code == case["status"]
    assert [type(error).__name__ for error in raised] == [case["raised"]]
    if "message" in case:
        assert str(raised[0]) == case["message"]
    if case.get("sent", "") is None:
        assert sent == []


@pytest.mark.parametrize("case", MIDDLEWARE["tag_invalid"], ids=ids(MIDDLEWARE["tag_invalid"]))
def test_middleware_tag_invalid(case: dict[str, Any]) -> None:
    limits = AsyncRateLimits(redis.asyncio.Redis(port=free_port()))
    limiter = middleware_limiter(limits, case["limiters"])
    with pytest.raises(InvalidParameter) as raised:
        RateLimitMiddleware(PlainTextResponse("ok"), limiter=limiter, tag=lambda scope: "user:42")
    assert str(raised.value) == case["message"]
    with pytest.raises(InvalidParameter) as raised:
        RateLimitDependency(limiter, tag=lambda request: "user:42")
    assert str(raised.value) == case["message"]


@pytest.mark.parametrize("case", MIDDLEWARE["invalid"], ids=ids(MIDDLEWARE["invalid"]))
def test_middleware_invalid(case: dict[str, Any]) -> None:
    limits = AsyncRateLimits(redis.asyncio.Redis(port=free_port()))
    with pytest.raises(InvalidParameter) as raised:
        RateLimitMiddleware(PlainTextResponse("ok"), limiter=middleware_limiter(limits, case["limiters"]))
    assert str(raised.value) == case["message"]


# -- backends.json -----------------------------------------------------------------


class Transcript:
    """Answers the n-th command with the n-th step's answer."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps

    def __call__(self, args: list[str]) -> Any:
        position = len(self.fake.commands) - 1
        if position >= len(self.steps):
            return Error("ERR the transcript has no step here")
        step = self.steps[position]
        if "fault" in step:
            return {"closed": CLOSE, "silent": SILENT}[step["fault"]]
        if "error" in step:
            return Error(step["error"])
        return expand(step["reply"])

    fake: FakeRedis


@pytest.mark.parametrize("case", BACKENDS, ids=ids(BACKENDS))
def test_backend_transcript(case: dict[str, Any], connect: Callable[..., Any]) -> None:
    transcript = Transcript(case["steps"])
    with FakeRedis(transcript) as fake:
        transcript.fake = fake
        limits = connect(fake.port, timeout=ms(1000))
        limiter = limits.gcra(rate=10, per=ms(1000), burst=20)
        outcome = case["outcome"]
        for _ in range(case.get("calls", 1) - 1):
            with pytest.raises(CLASSES[outcome["first"]]):
                limiter.take("k")
        if "raises" in outcome:
            with pytest.raises(CLASSES[outcome["raises"]]) as raised:
                limiter.take("k")
            if "message" in outcome:
                assert raised.value.message == outcome["message"]
        else:
            assert list(limiter.take("k").raw) == outcome["decision_reply"]
        assert fake.commands == [[str(a) for a in expand(step["send"])] for step in case["steps"]]
        assert limits.backend() == case["backend"]
        assert len(fake.commands) == len(case["steps"])  # backend() asked nothing more
