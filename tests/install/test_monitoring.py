"""daemonset/monitoring/ read as an operator would: every alert links its runbook section; the
dashboard never sums a gauge every replica exports (two replicas would double it), has the
$queue and $node variables, and keeps one unit per panel."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "daemonset" / "monitoring"
BASE = "https://github.com/caldera/caldera/blob/main/docs/alerts.md#"
# exported alike by every replica (the standby's view too), so only max() says the cluster's figure
REPLICATED = r"volcano_queue_\w+|caldera_agent_nodes|volcano_pod_preemption_victims"
UNIT_SUFFIXES = ("bytes", "cores", "seconds", "milliseconds", "milli_cpu")


def dashboard() -> dict:
    return json.loads((MONITORING / "dashboard.json").read_text())


def test_every_alert_has_a_runbook_section():
    rules = yaml.safe_load((MONITORING / "rules.yaml").read_text())
    alerts = {r["alert"]: r["annotations"].get("runbook_url", "") for g in rules["spec"]["groups"] for r in g["rules"]}
    headings = re.findall(r"^## (\S+)$", (ROOT / "docs" / "alerts.md").read_text(), re.MULTILINE)
    assert sorted(headings) == sorted(alerts)  # no section without its alert, none missing
    assert {name: url for name, url in alerts.items() if url != BASE + name.lower()} == {}


def test_gauges_every_replica_exports_are_taken_by_max():
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p.get("targets", [])]
    wrapped = [(m[1], m[2]) for e in exprs for m in re.finditer(rf"(\w+)(?: by \([^)]*\))? \(({REPLICATED})\b", e)]
    bare = [e for e in exprs if re.search(rf"(^|[^(\w])({REPLICATED})\b", e)]
    assert wrapped and {how for how, _ in wrapped} == {"max"} and bare == []


def test_queue_and_node_variables_filter_their_panels():
    board = dashboard()
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert {"queue", "node"} <= set(variables)
    assert all(variables[n]["includeAll"] and variables[n]["allValue"] == ".*" for n in ("queue", "node"))
    for panel in board["panels"]:
        for target in panel.get("targets", []):
            if re.search(r"\bvolcano_queue_\w+", target["expr"]):
                assert 'queue_name=~"$queue"' in target["expr"], panel["title"]
            if re.search(r"\bnodeagent_\w+", target["expr"]):
                assert 'node=~"$node"' in target["expr"], panel["title"]


def test_one_unit_per_panel():
    def units(expr: str) -> set[str]:
        names = re.findall(r"\b[a-z]+_[a-z0-9_]+\b", expr)
        return {suffix for name in names for suffix in UNIT_SUFFIXES
                if name.removesuffix("_bucket").removesuffix("_total").endswith(suffix)}

    mixed = {p["title"]: [units(t["expr"]) for t in p["targets"]] for p in dashboard()["panels"]
             if len({frozenset(units(t["expr"])) for t in p.get("targets", [])}) > 1}
    assert mixed == {}
