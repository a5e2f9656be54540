"""docs/architecture.md names only what exists, so a move or a rename cannot leave it wrong
unseen: every backticked path is a file or folder of the repository, and every backticked
dotted name of our packages is a module, or an attribute (class, function, method) of one.

A word in backticks counts as a path when it starts with one of the repository's folders
(`central/...`), as a dotted name when it starts with one of our packages (`central.x.y`; of
`f(x, y)`, `f`).
A `<placeholder>` segment (`central/plugins/<name>.py`) stands for a file to add: its folder
must exist. A word of a longer span (`python -m central.bench.<name>`) is checked alike.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "architecture.md"
FOLDERS = ("caldera", "central", "nodeagent", "tests", "docs", "daemonset", "charts", "proto", "examples")
PACKAGES = ("caldera", "central", "nodeagent", "tests")
SPAN = re.compile(r"`([^`]+)`")  # a span may run over a line break, as in Markdown
PLACEHOLDER = re.compile(r"<[^<>]*>")
PATH = re.compile(r"^(?:%s)(?:/[\w.<>-]*)*$" % "|".join(FOLDERS))
DOTTED = re.compile(r"^(?:%s)(?:\.(?:\w+|<\w+>))+$" % "|".join(PACKAGES))


def names(text: str) -> tuple[list[str], list[str]]:
    """The paths and the dotted names that the backticked spans of `text` hold."""
    paths, dotted = [], []
    for span in SPAN.findall(text):
        for word in span.split():
            word = re.split(r"[(\[]", word)[0].rstrip(",;:)]")  # `f(x)` names f
            if "/" in word and PATH.match(word):
                paths.append(word)
            elif DOTTED.match(word):
                dotted.append(word)
    return paths, dotted


def missing_path(path: str) -> str | None:
    """Why `path` names nothing in the repository, or None when it does."""
    placeholder = PLACEHOLDER.search(path)
    if placeholder:
        folder = REPO / path[: placeholder.start()].rpartition("/")[0]
        return None if folder.is_dir() else f"no folder {folder.relative_to(REPO)}"
    return None if (REPO / path.rstrip("/")).exists() else "no such file or folder"


def missing_name(name: str) -> str | None:
    """Why the dotted `name` names nothing of ours (the longest prefix that is a module file,
    then attributes), or None when it does."""
    parts = name.split(".")
    if PLACEHOLDER.match(parts[-1]):  # central.bench.<name>: any module of that package
        parts.pop()
        return None if (REPO.joinpath(*parts) / "__init__.py").exists() else "no such package"
    for end in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:end])
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            break
    else:
        return "no such module"
    found: object = importlib.import_module(".".join(parts[:end]))
    for attr in parts[end:]:
        if not hasattr(found, attr):
            return f"{'.'.join(parts[:end])} has no {'.'.join(parts[end:])}"
        found = getattr(found, attr)
    return None


PATHS, DOTTED_NAMES = names(DOC.read_text())


def test_the_page_names_enough_to_be_worth_checking():
    # a parser that finds nothing would pass every check below
    assert len(set(PATHS)) >= 40 and len(set(DOTTED_NAMES)) >= 40


@pytest.mark.parametrize("path", sorted(set(PATHS)))
def test_every_path_exists(path: str):
    assert missing_path(path) is None, f"docs/architecture.md names {path}: {missing_path(path)}"


@pytest.mark.parametrize("name", sorted(set(DOTTED_NAMES)))
def test_every_dotted_name_exists(name: str):
    assert missing_name(name) is None, f"docs/architecture.md names {name}: {missing_name(name)}"


def test_the_checks_see_what_is_gone():
    paths, dotted = names("the `central/api` folder, `central/kube/scheduler.py`, `central/plugins/<x>.py`; "
                          "`python -m central.sim.bench`, `central.scheduler.cycle.run_cycles` and "
                          "`central.framework.session.Session.open_plugin`; not `pods/binding` nor `ns/name`")
    assert paths == ["central/api", "central/kube/scheduler.py", "central/plugins/<x>.py"]
    assert [missing_path(p) is None for p in paths] == [False, False, True]
    assert dotted == ["central.sim.bench", "central.scheduler.cycle.run_cycles",
                      "central.framework.session.Session.open_plugin"]
    assert [missing_name(n) for n in dotted] == [
        "central.sim has no bench", "central.scheduler.cycle has no run_cycles",
        "central.framework.session has no Session.open_plugin"]


def test_the_readme_links_the_page():
    assert "(docs/architecture.md)" in (REPO / "README.md").read_text()
