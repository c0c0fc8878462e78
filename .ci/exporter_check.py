"""Check what redis_exporter and Prometheus make of the server's counters.

Run by .ci/exporter, which starts a Redis 7 with the module (after a known
set of calls), a Redis 7 without it, a redis_exporter on each with
contrib/redis_exporter/ratelimit.lua, and a Prometheus scraping the first
exporter with the rules of contrib/redis_exporter/prometheus.yml. Every wait
is bounded; every failure names what differs.
"""

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

from exporter_test import queries

T = TypeVar("T")

WAIT_SECONDS = 20.0
DASHBOARD = "contrib/grafana/redis-ratelimit.json"

# The counters the known calls of .ci/exporter touch, with their exact
# values; every other counter must be 0.
TOUCHED = {
    ("ratelimit_calls_total", "gcra"): 4,
    ("ratelimit_allowed_total", "gcra"): 2,
    ("ratelimit_refused_total", "gcra"): 1,
    ("ratelimit_errors_total", "gcra"): 1,
    ("ratelimit_calls_total", "token_bucket"): 2,
    ("ratelimit_allowed_total", "token_bucket"): 1,
    ("ratelimit_refused_total", "token_bucket"): 1,
    ("ratelimit_blocks_total", "token_bucket"): 1,
    ("ratelimit_calls_total", "sliding_log"): 1,
    ("ratelimit_allowed_total", "sliding_log"): 1,
    ("ratelimit_entries_written_total", "sliding_log"): 4,
}
# Settings of a server started with no module arguments.
SETTINGS = {
    "ratelimit_config_shadow": 0,
    "ratelimit_config_cl_throttle": 0,
    "ratelimit_config_concurrency_max_limit": 10000,
}

LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$")


def unescape(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def parse_exposition(text: str) -> list[tuple[str, dict[str, str], float]]:
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SAMPLE.match(line)
        if not match:
            raise AssertionError(f"unparsed exposition line: {line!r}")
        name, labels, value = match.groups()
        pairs = {k: unescape(v) for k, v in LABEL.findall(labels or "")}
        samples.append((name, pairs, float(value)))
    return samples


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as reply:
        body: bytes = reply.read()
        return body.decode()


def get_when(url: str, ready: Callable[[str], T | None], what: str) -> T:
    """GET url until ready(body) returns something true; return that."""
    deadline = time.monotonic() + WAIT_SECONDS
    last = "no answer"
    while True:
        try:
            answer = ready(get(url))
            if answer:
                return answer
            last = "not ready"
        except OSError as error:
            last = str(error)
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not ready after {WAIT_SECONDS} s ({last})")
        time.sleep(0.1)


def info_fields(port: int) -> dict[str, str]:
    text = subprocess.run(
        ["redis-cli", "-p", str(port), "INFO", "ratelimit"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    fields = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("ratelimit_"):
            name, _, value = line.partition(":")
            fields[name[len("ratelimit_") :]] = value
    if not fields:
        raise AssertionError("INFO ratelimit has no fields: is the module loaded?")
    return fields


def number(value: str) -> float:
    return {"yes": 1.0, "no": 0.0}[value] if value in ("yes", "no") else float(value)


def query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    answer = json.loads(get(url))
    if answer.get("status") != "success":
        raise AssertionError(f"query {promql!r}: {answer}")
    result: list[dict[str, Any]] = answer["data"]["result"]
    return result


Series = dict[tuple[str, str | None], float]


def compare(fields: dict[str, str], series: Series) -> list[str]:
    """Each INFO field must be exactly one series, named by the conventions
    (`ratelimit_config_<field>`, or `ratelimit_<counter>_total` with the
    label command where `<command>_<counter>` is the field), with the
    field's value; and every series must stand for a field."""
    failures = []
    matched = set()
    for field, value in sorted(fields.items()):
        candidates = [
            key
            for key in series
            if (key[1] is None and key[0] == f"ratelimit_config_{field}")
            or (
                key[1] is not None
                and key[0].startswith("ratelimit_")
                and key[0].endswith("_total")
                and f"{key[1]}_{key[0][len('ratelimit_') : -len('_total')]}" == field
            )
        ]
        if len(candidates) != 1:
            failures.append(f"INFO field ratelimit_{field}: series {candidates}, not exactly one")
            continue
        matched.add(candidates[0])
        if series[candidates[0]] != number(value):
            failures.append(f"INFO field ratelimit_{field}={value}: {candidates[0]} is {series[candidates[0]]}")
    for key in sorted(set(series) - matched, key=str):
        failures.append(f"series {key} stands for no INFO field")
    return failures


KEY = re.compile(r'(ratelimit_\w+?)(?:\{command="(\w+)"\})?')


def script_reply(port: int) -> Series:
    """The script's reply on a server, EVAL'd as redis_exporter does, each
    key read as the series it names."""
    with open("contrib/redis_exporter/ratelimit.lua") as f:
        script = f.read()
    lines = subprocess.run(
        ["redis-cli", "-p", str(port), "EVAL", script, "0"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    # redis-cli prints an empty array as one empty line.
    lines = [line for line in lines if line]
    if len(lines) % 2:
        raise AssertionError(f"the script's reply has an odd number of elements: {lines}")
    series: Series = {}
    for key, value in zip(lines[::2], lines[1::2], strict=True):
        match = KEY.fullmatch(key)
        if not match:
            raise AssertionError(f"the script's key {key!r} is not a series of the conventions")
        series[(match.group(1), match.group(2))] = float(value)
    return series


def check_script(port: int, server: str, module: bool) -> int:
    """The script alone on one more server: with the module, each field one
    series; without it, an empty reply."""
    series = script_reply(port)
    if module:
        fields = info_fields(port)
        failures = compare(fields, series)
    else:
        failures = [f"series {key} from a server without the module" for key in series]
    for failure in failures:
        print(f"exporter: {server}: {failure}", file=sys.stderr)
    if not failures:
        what = f"{len(fields)} INFO fields, each one series" if module else "no module, an empty reply"
        print(f"exporter: {server}: the script's reply: {what}")
    return 1 if failures else 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--redis-port", type=int, required=True)
    parser.add_argument("--exporter")
    parser.add_argument("--plain-exporter")
    parser.add_argument("--prometheus")
    parser.add_argument("--names")
    parser.add_argument("--script-only", metavar="SERVER", help="only EVAL the script on the server (its name)")
    parser.add_argument("--without-module", action="store_true", help="with --script-only: the server has no module")
    args = parser.parse_args()
    if args.script_only:
        return check_script(args.redis_port, args.script_only, not args.without_module)
    if not (args.exporter and args.plain_exporter and args.prometheus and args.names):
        parser.error("--exporter, --plain-exporter, --prometheus and --names are needed (or --script-only)")
    failures: list[str] = []

    fields = info_fields(args.redis_port)

    # The exporter: one redis_script_values series per field, no error.
    started = time.monotonic()
    exposition = get_when(args.exporter, parse_exposition, "redis_exporter")
    scripted = [s for s in exposition if s[0] == "redis_script_values"]
    if len(scripted) != len(fields):
        failures.append(f"exporter: {len(scripted)} script values for {len(fields)} INFO fields")
    errors = [s for s in exposition if s[0] == "redis_exporter_last_scrape_error"]
    if [s[2] for s in errors] != [0.0]:
        failures.append(f"exporter: scrape error {errors}")

    # Without the module: no series from the script, and no error.
    plain = get_when(args.plain_exporter, parse_exposition, "redis_exporter (no module)")
    leaked = [s for s in plain if s[0] == "redis_script_values" or s[0].startswith("ratelimit_")]
    if leaked:
        failures.append(f"exporter without the module: unexpected series {leaked}")
    for name, wanted in (("redis_up", 1.0), ("redis_exporter_last_scrape_error", 0.0)):
        seen = [s[2] for s in plain if s[0] == name]
        if seen != [wanted]:
            failures.append(f"exporter without the module: {name} is {seen}, not [{wanted}]")

    # Prometheus after the shipped relabeling: wait for the first scrape
    # holding the ratelimit series (bounded), then read them all.
    def renamed(body: str) -> list[dict[str, Any]] | None:
        result: list[dict[str, Any]] = json.loads(body)["data"]["result"]
        return result if len(result) >= len(fields) else None

    url = f"{args.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": '{__name__=~"ratelimit_.+"}'})
    get_when(f"{args.prometheus}/-/ready", lambda body: "Ready" in body, "Prometheus")
    series = get_when(url, renamed, "Prometheus holding the ratelimit series")
    waited = time.monotonic() - started

    kept: dict[tuple[str, str | None], tuple[float, dict[str, str]]] = {}
    for item in series:
        labels = dict(item["metric"])
        name = labels.pop("__name__")
        labels.pop("job", None)
        labels.pop("instance", None)
        if "key" in labels:
            failures.append(f"{name}: the key label is still there: {labels}")
        extra = set(labels) - {"command"}
        if extra:
            failures.append(f"{name}: unexpected labels {labels}")
        kept[(name, labels.get("command"))] = (float(item["value"][1]), labels)

    # Every INFO field is exactly one series, named by the conventions, with
    # the field's value; and nothing else is there.
    failures += compare(fields, {key: value for key, (value, _) in kept.items()})

    # The exact values of the calls made, and the settings.
    for (name, command), (got, _) in kept.items():
        expect: float | None = SETTINGS.get(name) if command is None else TOUCHED.get((name, command), 0)
        if expect is not None and got != expect:
            failures.append(f"{name}{{command={command!r}}} is {got}, expected {expect}")
    for key in TOUCHED:
        if key not in kept:
            failures.append(f"missing series {key}")
    for name in SETTINGS:
        if (name, None) not in kept:
            failures.append(f"missing series {name}")
    # The split of a field whose counter ends like another one.
    if ("ratelimit_shadow_refused_total", "token_bucket") not in kept:
        failures.append("ratelimit_token_bucket_shadow_refused is not shadow_refused of token_bucket")
    if query(args.prometheus, "redis_script_values"):
        failures.append("Prometheus still holds redis_script_values series")

    # The names seen, for the dashboard's check.
    every = query(args.prometheus, '{job="redis-ratelimit"}')
    names = sorted({item["metric"]["__name__"] for item in every})
    with open(args.names, "w") as out:
        out.write("".join(f"{name}\n" for name in names))

    # Every query of the dashboard is PromQL this Prometheus accepts (with
    # Grafana's variables given values: the names are checked by
    # .ci/exporter_test.py).
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    exprs = [e for e in queries(dashboard) if not e.startswith("label_values(")]
    for expr in exprs:
        promql = expr.replace("$__rate_interval", "1m").replace("$limit", ".*")
        try:
            query(args.prometheus, promql)
        except urllib.error.HTTPError as error:
            failures.append(f"dashboard query {expr!r}: {error}: {error.read().decode()}")
        except (AssertionError, OSError) as error:
            failures.append(f"dashboard query {expr!r}: {error}")

    for failure in failures:
        print(f"exporter: {failure}", file=sys.stderr)
    if failures:
        return 1
    ratelimit_names = sorted({key[0] for key in kept})
    print(
        f"exporter: {len(fields)} INFO fields, each one series in Prometheus"
        f" ({len(ratelimit_names)} metrics: {', '.join(ratelimit_names)});"
        f" {len(TOUCHED)} counters at their exact values, the others 0;"
        f" no series and no error without the module;"
        f" {len(names)} metric names written to {args.names};"
        f" the dashboard's {len(exprs)} queries accepted by Prometheus"
        f" (first scrape in Prometheus after {waited:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
