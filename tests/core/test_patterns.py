"""HyperNode patterns run in RE2: linear in the node name, Go's syntax, bounded in size."""

from __future__ import annotations

import re
import time

import pytest

from central.errors import InputError
from central.model.hypernodes import parse_hypernode
from central.model.patterns import compile_pattern
from tests.builders import hypernode, member

EVIL = "^(a+)+b$"
VICTIM = "a" * 26 + "c"


def test_a_catastrophic_pattern_is_instant_for_a_node_name() -> None:
    [rack] = parse_hypernode(hypernode(members=[member(regexMatch={"pattern": EVIL})])).members
    started = time.perf_counter()
    assert not rack.matches(VICTIM, {})
    assert time.perf_counter() - started < 0.01  # Python's re: about 15 s, doubling per character


def test_python_re_would_backtrack_on_the_same_pattern() -> None:
    """What the bound protects against: 18 a's already cost `re` measurable time, doubling per a."""
    started = time.perf_counter()
    assert re.search(EVIL, "a" * 18 + "c") is None
    backtracking = time.perf_counter() - started
    started = time.perf_counter()
    assert compile_pattern(EVIL, "p").search("a" * 18 + "c") is None
    assert time.perf_counter() - started < backtracking


@pytest.mark.parametrize("pattern, name, found", [
    ("^rack1-", "rack1-node-3", True), ("^rack1-", "rack10-node-3", False),
    ("node-[0-9]+$", "spine-node-12", True),  # Go's MatchString: anywhere unless anchored
    ("^(?P<rack>r[0-9])-", "r1-n1", True), (r"\d{2}$", "n-07", True),
])
def test_patterns_mean_what_they_mean_in_go(pattern: str, name: str, found: bool) -> None:
    [rack] = parse_hypernode(hypernode(members=[member(regexMatch={"pattern": pattern})])).members
    assert rack.matches(name, {}) is found


def test_an_invalid_pattern_names_its_place() -> None:
    with pytest.raises(InputError, match=r"^spec.pattern: invalid regular expression: '\(a\)\\\\1'"):
        compile_pattern(r"(a)\1", "spec.pattern")
