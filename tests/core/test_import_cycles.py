"""No import cycles in caldera, central or nodeagent: a module never needs, even indirectly, a
module that needs it.

The graph is read from the source with `ast` (tests/importgraph.py), so an import hidden
inside a function counts as much as one at the top. Two views of modules:
- runtime imports only: what Python executes;
- type-only imports included (`if TYPE_CHECKING:`): a type circle is a design circle too, even
  if Python never runs it.
The packages' own layering (which package may need which, types included) is the layers
test's.
"""

from __future__ import annotations

from tests.importgraph import MODULES, cycles, graph, unit_of


def test_the_graph_covers_every_package():
    assert {m.split(".")[0] for m in MODULES} == {"caldera", "central", "nodeagent"}
    assert {"nodeagent.agent", "caldera.cli", "central.scheduler.loop"} <= set(MODULES)


def test_no_runtime_import_cycle_among_modules():
    assert cycles(graph(type_only=False)) == []


def test_no_type_only_import_cycle_among_modules():
    assert cycles(graph(type_only=True)) == []


def test_the_agents_packages_are_layers_even_for_types():
    edges: dict[str, set[str]] = {}
    for module, targets in graph(type_only=True).items():
        if module.startswith("nodeagent."):
            source = unit_of(module, [])
            edges.setdefault(source, set()).update(unit_of(t, []) for t in targets if unit_of(t, []) != source)
    assert cycles(edges) == []


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
