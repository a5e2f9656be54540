"""A test module imports no other test module: what tests share (builders, fakes, fixtures)
lives in helper modules (`tests/builders.py`, `tests/kube/fakes.py`, a `conftest.py`), so a
test file can be moved, renamed or deleted without breaking another, and pytest never
collects one file's tests twice through an import.

Read from the source with `ast`, so an import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def _is_test_module(dotted: str) -> bool:
    return dotted.rsplit(".", 1)[-1].startswith("test_")


def imported_test_modules(path: Path) -> list[str]:
    """The test modules `path` imports, as written (relative imports keep their dots)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                found.append(base)
            found += [f"{base}.{alias.name}" for alias in node.names if _is_test_module(alias.name)]
    return found


def test_no_test_module_imports_another():
    offenders = {str(path.relative_to(TESTS.parent)): names for path in sorted(TESTS.rglob("test_*.py"))
                 if (names := imported_test_modules(path))}
    assert offenders == {}, "move what they share into a helper module (tests/builders.py, a fakes.py, a conftest.py)"


def test_the_check_sees_every_form_of_import(tmp_path):
    source = tmp_path / "test_x.py"
    source.write_text("import tests.kube.test_webhook\nfrom tests.core.test_points import plugin\n"
                      "from tests.core import test_points\nfrom .test_y import z\n"
                      "def f():\n    from tests.kube import fakes, test_sink\n"
                      "from tests.builders import pod\nimport tests.kube.fakes\n")
    assert imported_test_modules(source) == ["tests.kube.test_webhook", "tests.core.test_points",
                                             "tests.core.test_points", ".test_y", "tests.kube.test_sink"]
