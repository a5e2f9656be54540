"""Admission of HyperNodes (topology.volcano.sh/v1alpha1), on CREATE and UPDATE.

validate_hypernode(hypernode) -> list     the scheduler's parser reads it: a tier of at least 1,
                                          at least one member, each of type Node or HyperNode
                                          with exactly one selector (exactMatch, regexMatch, or
                                          labelMatch for nodes), a regexMatch pattern that
                                          compiles; the problem names the field

Volcano's webhook checks the members and the patterns; its CRD the rest (and it lets a tier
of 0 in, which no job's highestTierAllowed can then use). Whether members are claimed by two
HyperNodes depends on the other HyperNodes: the scheduler leaves such a HyperNode out and
says so in an Event, rather than admission racing concurrent writes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from central.admission.fields import Problems
from central.errors import InputError
from central.model.hypernodes import parse_hypernode


def validate_hypernode(hypernode: Mapping[str, Any]) -> Problems:
    problems: Problems = []
    try:
        parse_hypernode(hypernode)
    except InputError as err:
        problems.append(f"{err.where}: {err.message}")
    return problems
