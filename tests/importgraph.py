"""The import graph of caldera, central and nodeagent, read from the source with `ast`.

Shared by the import tests (cycles, layers). An import hidden inside a function counts as much
as one at the top (the same dependency, only deferred); `type_only=True` adds the imports under
`if TYPE_CHECKING:`. `from package import name` counts as an import of the submodule when
`name` is one, as import-linter reads it.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("caldera", "central", "nodeagent")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (REPO / package).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
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
    """The module of ours that `name` (a module, or a module's attribute) lives in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


@cache
def imports_of(module: str, *, type_only: bool) -> frozenset[str]:
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
    return frozenset(found for found in map(_resolve, targets) if found is not None and found != module)


def graph(*, type_only: bool) -> dict[str, set[str]]:
    return {module: set(imports_of(module, type_only=type_only)) for module in MODULES}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges[start])))]
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
                    work.append((child, iter(sorted(edges.get(child, ())))))
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


def unit_of(module: str, units: list[str]) -> str:
    """The most specific of `units` that holds `module` (a unit holds itself and its submodules);
    a module no unit names is its package's second level (`central.sim`, `nodeagent.qos`)."""
    holding = [u for u in units if module == u or module.startswith(u + ".")]
    return max(holding, key=len) if holding else ".".join(module.split(".")[:2])
