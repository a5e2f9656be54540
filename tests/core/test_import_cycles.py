"""No import cycles in `central`: a module never needs, even indirectly, a module that needs it.

The graph is read from the source with `ast`, so an import hidden inside a function counts as
much as one at the top (it is the same dependency, only deferred). Two views:
- modules, runtime imports only: what Python executes; an `if TYPE_CHECKING:` block does not
  run, so Session and its Statement may name each other's types.
- the scheduling core's packages (framework, plugins, actions, ...), type-only imports
  included: the framework never names a plugin or an action, not even as a type, so the
  layers stay layers (the registries come from the scheduler's entry point).

`from package import name` counts as an import of the submodule when `name` is one (Python
binds it without running more than the package's __init__ once), as import-linter reads it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import central

ROOT = Path(central.__file__).parent
CORE_PACKAGES = ("central.api", "central.model", "central.framework", "central.plugins", "central.actions",
                 "central.scheduler")


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return skipped


def _resolve(name: str) -> str | None:
    """The central module that `name` (a module, or a module's attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(module: str, *, type_only: bool) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(), str(path))
    skipped = set() if type_only else _type_checking_nodes(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: list[str] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            targets += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets += [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
    return {found for found in map(_resolve, targets) if found is not None and found != module}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _package(module: str) -> str | None:
    return next((p for p in CORE_PACKAGES if module == p or module.startswith(p + ".")), None)


def test_no_runtime_import_cycle_among_modules():
    graph = {module: imports_of(module, type_only=False) for module in MODULES}
    assert cycles(graph) == []


def test_core_packages_are_layers_even_for_types():
    graph: dict[str, set[str]] = {p: set() for p in CORE_PACKAGES}
    for module in MODULES:
        source = _package(module)
        if source is None:
            continue
        for target in imports_of(module, type_only=True):
            package = _package(target)
            if package is not None and package != source:
                graph[source].add(package)
    assert cycles(graph) == []


def test_the_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_type_only_cycle_among_the_scheduling_core_s_modules():
    """Session, statements, placement and the plugins' handle name each other's types only in
    one direction: the session is the framework's top, and nothing it builds on names it."""
    core = ("central.framework", "central.plugins", "central.actions", "central.scheduler")
    graph = {module: {t for t in imports_of(module, type_only=True) if t.startswith(core)}
             for module in MODULES if module.startswith(core)}
    assert cycles(graph) == []
