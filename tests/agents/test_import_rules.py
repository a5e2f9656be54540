"""central/agents takes only the contract (nodeagent.api) from the agent; nodeagent never imports central."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((REPO / "central" / "agents").glob("*.py")), ids=lambda p: p.name)
def test_receiver_imports_only_the_contract(path: Path) -> None:
    agent_side = {n for n in imported(path) if n.split(".")[0] == "nodeagent"}
    assert all(n.startswith("nodeagent.api") for n in agent_side), agent_side


@pytest.mark.parametrize("path", sorted((REPO / "nodeagent").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_agent_never_imports_central(path: Path) -> None:
    assert not {n for n in imported(path) if n.split(".")[0] == "central"}
