"""Tests of the Prometheus path that need no server, and the dashboard check.

    python3 .ci/exporter_test.py      (run by .ci/exporter, after the live
                                      check wrote target/exporter-metrics.txt)

- The redis_exporter script (contrib/redis_exporter/ratelimit.lua), run by
  Lua 5.1 (Redis's) with `redis.call("INFO", "ratelimit")` answering the
  INFO block of docs/operations.md (which .ci/docs checks against the
  module built from this tree), then with unknown fields and an empty INFO.
- The relabeling of contrib/redis_exporter/prometheus.yml, applied here the
  way Prometheus applies it (each rule in order: the source labels joined by
  `;`, the regex anchored at both ends, the replacement's $1 expanded, an
  empty result removing the label), to the keys a real Prometheus is not
  shown by .ci/exporter (a newer module's fields).
- The Grafana dashboard (contrib/grafana/redis-ratelimit.json): every
  PromQL query names only metrics in target/exporter-metrics.txt (what
  Prometheus held in .ci/exporter) or in clients/contract/metrics.json (for
  a histogram, its _bucket, _sum and _count series).
- docs/metrics.md: a row for every server metric Prometheus held (its type
  by its name) and for every client metric of the contract (type, labels).
"""

import json
import os
import re
import subprocess
import tempfile
import unittest
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "contrib", "redis_exporter", "ratelimit.lua")
RULES = os.path.join(ROOT, "contrib", "redis_exporter", "prometheus.yml")
DASHBOARD = os.path.join(ROOT, "contrib", "grafana", "redis-ratelimit.json")
CONTRACT = os.path.join(ROOT, "clients", "contract", "metrics.json")
SEEN = os.path.join(ROOT, "target", "exporter-metrics.txt")
OPERATIONS = os.path.join(ROOT, "docs", "operations.md")

# --- PromQL: the metric names a query reads ---------------------------------

STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
MATCHERS = re.compile(r"\{[^{}]*\}")
RANGE = re.compile(r"\[[^\[\]]*\]")
VARIABLE = re.compile(r"\$\{[^}]*\}|\$\w+")
GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
IDENTIFIER = re.compile(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)")
KEYWORDS = {
    "and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
    "group_left", "group_right", "inf", "nan",
}  # fmt: skip
# Aggregations may be followed by `by (...)` before their parenthesis.
AGGREGATIONS = {
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
    "count_values", "bottomk", "topk", "quantile",
}  # fmt: skip
LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.*?)\s*,\s*\w+\s*\)\s*$", re.S)
QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression (or a Grafana variable query,
    label_values(...) or query_result(...)) reads."""
    for form in (LABEL_VALUES, QUERY_RESULT):
        match = form.match(expr)
        if match:
            expr = match.group(1)
    text = STRING.sub(" ", expr)
    if "{" in MATCHERS.sub(" ", text) or "}" in MATCHERS.sub(" ", text):
        raise ValueError(f"unbalanced braces in {expr!r}")
    text = MATCHERS.sub(" ", text)
    text = RANGE.sub(" ", text)
    text = VARIABLE.sub(" ", text)
    text = GROUPING.sub(" ", text)
    names = set()
    for match in IDENTIFIER.finditer(text):
        word = match.group(1)
        rest = text[match.end() :].lstrip()
        if word.lower() in KEYWORDS or word in AGGREGATIONS or rest.startswith("("):
            continue
        names.add(word)
    return names


def queries(dashboard: dict[str, Any]) -> list[str]:
    """Every query of a dashboard: the panels' targets' expr (rows and
    nested panels included) and the query variables'."""
    found = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "expr" and isinstance(value, str):
                    found.append(value)
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(dashboard.get("panels", []))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable.get("query")
            found.append(query["query"] if isinstance(query, dict) else query)
    return found


def known_names(contract: dict[str, Any], seen: list[str]) -> set[str]:
    names = set(seen)
    for metric in contract["metrics"]:
        names.add(metric["name"])
        if metric["type"] == "histogram":
            names.update(metric["name"] + suffix for suffix in ("_bucket", "_sum", "_count"))
    return names


def unknown_names(exprs: list[str], known: set[str]) -> dict[str, set[str]]:
    """Each query naming a metric outside `known`, with those names; a query
    naming no metric at all counts as naming an unknown one."""
    unknown = {}
    for expr in exprs:
        names = metric_names(expr)
        if not names:
            unknown[expr] = {"(no metric)"}
        elif names - known:
            unknown[expr] = names - known
    return unknown


class MetricNamesTest(unittest.TestCase):
    def test_functions_aggregations_labels_and_strings_are_not_metrics(self) -> None:
        expr = (
            "histogram_quantile(0.99, sum by (le, limit) "
            '(rate(x_seconds_bucket{limit=~"api|login", outcome!="refused"}[$__rate_interval])))'
        )
        self.assertEqual(metric_names(expr), {"x_seconds_bucket"})

    def test_binary_operations_name_both_sides(self) -> None:
        expr = (
            "sum by (command) (rate(a_total[5m])) / on (command) group_left () "
            "sum without (instance) (rate(b_total[5m]) > 0) or vector(0)"
        )
        self.assertEqual(metric_names(expr), {"a_total", "b_total"})

    def test_comparison_offset_and_numbers(self) -> None:
        self.assertEqual(metric_names("count by (backend) (g == 1)"), {"g"})
        self.assertEqual(metric_names("c offset 5m > bool 1e3"), {"c"})
        self.assertEqual(metric_names("topk(10, max(t{x='a b'})) + Inf"), {"t"})

    def test_grafana_variable_queries(self) -> None:
        self.assertEqual(metric_names("label_values(d_total, limit)"), {"d_total"})
        self.assertEqual(metric_names("label_values(d_total{a='b'}, limit)"), {"d_total"})
        self.assertEqual(metric_names("query_result(topk(5, e))"), {"e"})

    def test_unknown_metric_is_reported(self) -> None:
        known = {"ratelimit_calls_total", "ratelimit_client_decisions_total"}
        good = "sum(rate(ratelimit_calls_total[5m]))"
        bad = "sum(rate(ratelimit_call_total[5m])) / sum(rate(ratelimit_calls_total[5m]))"
        self.assertEqual(unknown_names([good], known), {})
        self.assertEqual(unknown_names([good, bad], known), {bad: {"ratelimit_call_total"}})
        self.assertEqual(unknown_names(['{__name__="x"}'], known), {'{__name__="x"}': {"(no metric)"}})

    def test_histogram_series_of_a_listed_histogram(self) -> None:
        contract = {"metrics": [{"name": "h_seconds", "type": "histogram"}, {"name": "c_total", "type": "counter"}]}
        known = known_names(contract, ["s"])
        self.assertEqual(known, {"s", "c_total", "h_seconds", "h_seconds_bucket", "h_seconds_sum", "h_seconds_count"})
        self.assertEqual(
            unknown_names(["rate(c_total_bucket[1m])"], known), {"rate(c_total_bucket[1m])": {"c_total_bucket"}}
        )

    def test_queries_are_found_in_rows_and_variables(self) -> None:
        dashboard = {
            "panels": [
                {"type": "row", "panels": [{"targets": [{"expr": "a"}]}]},
                {"targets": [{"expr": "b"}, {"expr": "c"}]},
            ],
            "templating": {
                "list": [
                    {"type": "query", "query": {"query": "label_values(d, x)"}},
                    {"type": "custom", "query": "1,2"},
                ]
            },
        }
        self.assertEqual(queries(dashboard), ["a", "b", "c", "label_values(d, x)"])


class DashboardTest(unittest.TestCase):
    def test_every_query_names_a_metric_the_tests_saw(self) -> None:
        if not os.path.exists(SEEN):
            self.fail(f"{SEEN} is missing: run bash .ci/exporter (it writes it, then runs this)")
        with open(SEEN) as f:
            seen = [line.strip() for line in f if line.strip()]
        with open(CONTRACT) as f:
            contract = json.load(f)
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = queries(dashboard)
        self.assertGreaterEqual(len(exprs), 14)
        self.assertEqual(unknown_names(exprs, known_names(contract, seen)), {})
        # Every client metric of the contract is on the dashboard, and the
        # server's counters the panels are about.
        used = set().union(*(metric_names(e) for e in exprs))
        for metric in contract["metrics"]:
            base = metric["name"]
            self.assertTrue({base, base + "_bucket"} & used, f"{base} is on no panel")
        for name in (
            "ratelimit_calls_total",
            "ratelimit_refused_total",
            "ratelimit_errors_total",
            "ratelimit_blocks_total",
            "ratelimit_entries_written_total",
        ):
            self.assertIn(name, used)

    def test_the_datasource_is_an_import_input(self) -> None:
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        self.assertEqual([i["name"] for i in dashboard["__inputs"]], ["DS_PROMETHEUS"])
        datasources = []

        def walk(node: object) -> None:
            if isinstance(node, dict):
                if "datasource" in node:
                    datasources.append(node["datasource"])
                for value in node.values():
                    walk(value)
            elif isinstance(node, list):
                for item in node:
                    walk(item)

        walk(dashboard["panels"])
        walk(dashboard["templating"])
        self.assertTrue(datasources)
        for datasource in datasources:
            self.assertEqual(datasource, {"type": "prometheus", "uid": "${DS_PROMETHEUS}"})


class DocsTest(unittest.TestCase):
    """docs/metrics.md names every metric: the server's that Prometheus
    held, the clients' of the contract with their type and labels."""

    def rows(self) -> dict[str, tuple[str, list[str]]]:
        with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
            text = f.read()
        rows = {}
        for match in re.finditer(r"^\| `(\w+)` \| (\w+) \|([^|]*)\|", text, re.M):
            # The labels' names, without the values said in parentheses.
            labels = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", match.group(3)))
            rows[match.group(1)] = (match.group(2), labels)
        return rows

    def test_the_server_metrics_seen_are_documented(self) -> None:
        if not os.path.exists(SEEN):
            self.fail(f"{SEEN} is missing: run bash .ci/exporter (it writes it, then runs this)")
        with open(SEEN) as f:
            seen = [line.strip() for line in f if line.startswith("ratelimit_")]
        rows = self.rows()
        self.assertGreater(len(seen), 15)
        for name in seen:
            self.assertIn(name, rows, f"{name} is not in docs/metrics.md")
            self.assertEqual(rows[name][0], "counter" if name.endswith("_total") else "gauge", name)

    def test_the_client_metrics_are_documented(self) -> None:
        with open(CONTRACT) as f:
            contract = json.load(f)
        rows = self.rows()
        for metric in contract["metrics"]:
            self.assertEqual(rows.get(metric["name"]), (metric["type"], metric["labels"]), metric["name"])


# --- The script, run by Lua 5.1 ----------------------------------------------

HARNESS = """
local info = io.read("*a")
redis = {
    call = function(command, section)
        assert(command == "INFO" and section == "ratelimit", "unexpected call")
        return info
    end,
}
local reply = dofile(arg[1])
for i = 1, #reply, 2 do io.write(reply[i], "\\t", reply[i + 1], "\\n") end
"""


def run_script(info: str) -> list[tuple[str, str]]:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as harness:
        harness.write(HARNESS)
    try:
        out = subprocess.run(
            ["lua5.1", harness.name, SCRIPT], input=info, capture_output=True, text=True, check=True
        ).stdout
    finally:
        os.unlink(harness.name)
    return [tuple(line.split("\t")) for line in out.splitlines()]  # type: ignore[misc]


def docs_info() -> str:
    """The reply to INFO ratelimit shown in docs/operations.md."""
    with open(OPERATIONS) as f:
        text = f.read()
    block = text.split("127.0.0.1:6379> INFO ratelimit\n", 1)[1].split("```", 1)[0]
    return block.replace("\n", "\r\n")


class ScriptTest(unittest.TestCase):
    def test_every_field_of_the_documented_info_is_a_named_series(self) -> None:
        info = docs_info()
        fields = [line.split(":", 1) for line in info.split("\r\n") if line.startswith("ratelimit_")]
        self.assertGreater(len(fields), 80)
        reply = run_script(info)
        self.assertEqual(len(reply), len(fields))
        for (field, value), (key, got) in zip(fields, reply, strict=True):
            self.assertNotIn("ratelimit_info_field", key, f"{field} is not known to the script")
            self.assertEqual(got, {"yes": "1", "no": "0"}.get(value, value), field)
            match = re.fullmatch(r'ratelimit_(\w+)_total\{command="(\w+)"\}', key)
            if match:
                self.assertEqual(f"ratelimit_{match.group(2)}_{match.group(1)}", field)
            else:
                self.assertEqual(key, "ratelimit_config_" + field[len("ratelimit_") :])
        pairs = dict(reply)
        self.assertEqual(pairs["ratelimit_config_tag_max_bytes"], "64")
        self.assertEqual(pairs["ratelimit_config_cl_throttle"], "0")
        self.assertEqual(pairs["ratelimit_config_sliding_log_max_limit"], "20000")
        self.assertEqual(pairs['ratelimit_shadow_refused_total{command="token_bucket"}'], "1")
        self.assertEqual(pairs['ratelimit_refused_total{command="token_bucket"}'], "1")
        self.assertEqual(pairs['ratelimit_acquired_total{command="concurrency"}'], "2")
        self.assertIn('ratelimit_errors_total{command="inspect"}', pairs)
        self.assertIn('ratelimit_calls_total{command="log"}', pairs)

    def test_unknown_fields_are_kept(self) -> None:
        info = '# ratelimit\r\nratelimit_gcra_frobbed:5\r\nratelimit_mode:fast "x"\r\nratelimit_shadow:yes\r\n'
        self.assertEqual(
            run_script(info),
            [
                ('ratelimit_info_field{field="gcra_frobbed"}', "5"),
                ('ratelimit_info_field{field="mode",value="fast _x_"}', "1"),
                ("ratelimit_config_shadow", "1"),
            ],
        )

    def test_a_server_without_the_module_gives_nothing(self) -> None:
        self.assertEqual(run_script(""), [])


# --- The relabeling of prometheus.yml ----------------------------------------


def relabel_rules() -> list[dict[str, Any]]:
    """The metric_relabel_configs of prometheus.yml (the subset of YAML it
    is written in: one `key: value` per line, source_labels a flow list)."""
    with open(RULES) as f:
        text = f.read()
    section = text.split("metric_relabel_configs:", 1)[1]
    rules: list[dict[str, Any]] = []
    for line in section.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("- "):
            rules.append({})
            line = line[2:]
        key, _, value = line.partition(": ")
        value = value.strip()
        if key == "source_labels":
            rules[-1][key] = [v.strip() for v in value.strip("[]").split(",")]
        elif value[:1] in "'\"":
            rules[-1][key] = value[1:-1].replace("''", "'") if value[0] == "'" else json.loads(value)
        else:
            rules[-1][key] = value
    return rules


def relabel(labels: dict[str, str]) -> dict[str, str]:
    labels = dict(labels)
    for rule in relabel_rules():
        joined = ";".join(labels.get(name, "") for name in rule["source_labels"])
        match = re.fullmatch(str(rule["regex"]), joined)
        if not match:
            continue
        groups: tuple[str | None, ...] = ("", *match.groups())

        def group(ref: re.Match[str], groups: tuple[str | None, ...] = groups) -> str:
            return groups[int(ref.group(1))] or ""

        value = re.sub(r"\$(\d+)", group, str(rule["replacement"]))
        target = str(rule["target_label"])
        if value:
            labels[target] = value
        else:
            labels.pop(target, None)
    return labels


class RelabelTest(unittest.TestCase):
    def test_keys_become_names_and_labels(self) -> None:
        self.assertEqual(len(relabel_rules()), 5)
        cases = {
            'ratelimit_calls_total{command="gcra"}': {"__name__": "ratelimit_calls_total", "command": "gcra"},
            "ratelimit_config_shadow": {"__name__": "ratelimit_config_shadow"},
            'ratelimit_info_field{field="gcra_frobbed"}': {"__name__": "ratelimit_info_field", "field": "gcra_frobbed"},
            'ratelimit_info_field{field="mode",value="fast _x_"}': {
                "__name__": "ratelimit_info_field",
                "field": "mode",
                "value": "fast _x_",
            },
        }
        for key, expect in cases.items():
            self.assertEqual(relabel({"__name__": "redis_script_values", "key": key}), expect, key)

    def test_other_series_pass_unchanged(self) -> None:
        for labels in (
            {"__name__": "redis_key_size", "key": 'ratelimit_calls_total{command="gcra"}', "db": "db0"},
            {"__name__": "redis_script_values", "key": "other"},
            {"__name__": "redis_up"},
        ):
            self.assertEqual(relabel(labels), labels)


if __name__ == "__main__":
    unittest.main(verbosity=1)
