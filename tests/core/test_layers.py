"""The layers contract (import-linter's, as a test over `ast`): no module imports upward.

Layers top to bottom; a module may import its own layer and any layer below it, never one
above. Within a layer, units may use each other as long as no two need each other (the cycle
test checks that, type-only imports included). A unit is a package or a module; a module
belongs to the most specific unit that holds it, so a package's process modules (the
scheduler's loop, the webhook) sit in a higher layer than its pure functions.

The agent is a separate program: nodeagent never imports central, and central takes only the
contract (`nodeagent.api`) from it.
"""

from __future__ import annotations

import pytest

from tests.importgraph import MODULES, cycles, imports_of, unit_of

LAYERS: list[tuple[str, list[str]]] = [
    ("entry points", ["caldera", "central.cli"]),
    ("benchmarks", ["central.bench"]),
    ("conformance harness", ["central.conformance"]),
    ("local cluster", ["central.localcluster"]),
    ("processes", [
        "central.scheduler.command", "central.scheduler.loop", "central.scheduler.feeder",
        "central.scheduler.kubesink", "central.scheduler.claimwriter", "central.scheduler.gateremoval",
        "central.scheduler.metrics", "central.scheduler.startestimates", "central.scheduler.shards",
        "central.controllers.loops",
        "central.admission.webhook", "central.admission.webhookconfig", "central.admission.command",
        "central.certs.command", "central.vcctl", "central.sim"]),
    ("the agents' report stream", ["central.agents"]),
    ("API client", ["central.kube"]),
    ("decisions: admission, controllers, the scheduling cycle", [
        "central.admission", "central.controllers", "central.scheduler"]),
    ("actions and plugins", ["central.actions", "central.plugins"]),
    ("framework", ["central.framework"]),
    ("manifest files", ["central.manifests"]),
    ("model", ["central.model", "central.testing"]),
    ("resources", ["central.resources"]),
    ("foundations", ["central.errors", "central.certs.issue", "central.progress", "central", "central.certs"]),
]
UNITS = [unit for _, units in LAYERS for unit in units]
RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}
CENTRAL = sorted(m for m in MODULES if m.split(".")[0] in ("caldera", "central"))


def _rank(module: str) -> int:
    return RANK[unit_of(module, UNITS)]


def test_every_module_of_central_has_a_layer():
    assert [m for m in CENTRAL if unit_of(m, UNITS) not in RANK] == []


def test_each_unit_is_named_once():
    assert len(UNITS) == len(set(UNITS))


@pytest.mark.parametrize("module", CENTRAL)
def test_no_module_imports_upward(module: str):
    upward = sorted(f"{target} ({LAYERS[_rank(target)][0]})" for target in imports_of(module, type_only=True)
                    if target.split(".")[0] != "nodeagent" and _rank(target) < _rank(module))
    assert upward == [], f"{module} ({LAYERS[_rank(module)][0]}) imports a layer above it"


@pytest.mark.parametrize("module", CENTRAL)
def test_central_takes_only_the_agent_contract(module: str):
    agent_side = {t for t in imports_of(module, type_only=True) if t.split(".")[0] == "nodeagent"}
    assert all(t == "nodeagent.api" or t.startswith("nodeagent.api.") for t in agent_side), agent_side


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.split(".")[0] == "nodeagent"))
def test_the_agent_never_imports_central(module: str):
    assert {t for t in imports_of(module, type_only=True) if t.split(".")[0] in ("central", "caldera")} == set()


def test_the_check_sees_an_upward_import():
    # the framework naming a plugin would be upward: the contract must be able to say so
    assert _rank("central.plugins.gang") < _rank("central.framework.session")
    assert _rank("central.scheduler.loop") < _rank("central.kube.client") < _rank("central.scheduler.cycle")


def test_units_of_one_layer_never_need_each_other_even_for_types():
    edges: dict[str, set[str]] = {unit: set() for unit in UNITS}
    for module in CENTRAL:
        source = unit_of(module, UNITS)
        for target in imports_of(module, type_only=True):
            if target.split(".")[0] != "nodeagent" and unit_of(target, UNITS) != source:
                edges[source].add(unit_of(target, UNITS))
    assert cycles(edges) == []
