"""Volcano's network topology objects, read once: HyperNodes and a job's `networkTopology`.

A HyperNode (`topology.volcano.sh/v1alpha1`, cluster-scoped) is one network domain: a
switch, a rack, a spine. `spec.tier` ranks it (1 is the closest network; a tier-2 HyperNode
groups tier-1 ones), `spec.tierName` names the tier, and `spec.members` lists what it holds:
members of `type: Node` or `type: HyperNode`, each chosen by one selector,

    exactMatch: {name: node-1}                      the member of that name
    regexMatch: {pattern: "^rack1-"}                every node whose name matches (RE2, as
                                                    Volcano's Go regexp: linear time, at most
                                                    1,024 characters; see central.model.patterns)
    labelMatch: {matchLabels: {...}, matchExpressions: [...]}   nodes by label

HyperNode members are named by exactMatch only (Volcano ignores their other selectors; Caldera
refuses them).

A Job's or PodGroup's `spec.networkTopology` is `{mode: hard|soft, highestTierAllowed: N}` (or
`highestTierName` instead of the number). Parsing checks what Volcano's CRD schema and
webhook check, so admission and the scheduler's cache refuse the same objects, each error
naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from central.errors import InputError, shown
from central.model.fields import OBJECT_NAME_PATTERN, integer, is_object_name, metadata, typed
from central.model.objects import NetworkTopology, Selector
from central.model.patterns import Pattern, compile_pattern
from central.model.podspec import selector

MODES = ("hard", "soft")
MEMBER_TYPES = ("Node", "HyperNode")
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")


@dataclass(frozen=True, slots=True)
class Member:
    type: str  # Node | HyperNode
    exact: str = ""
    regex: Pattern | None = None  # RE2: linear in the name, see central.model.patterns
    labels: Selector | None = None

    def matches(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.exact:
            return name == self.exact
        if self.regex is not None:
            return self.regex.search(name) is not None  # Go's MatchString: anywhere unless anchored
        return self.labels is not None and bool(self.labels.requirements) and self.labels.matches(dict(labels))


@dataclass(frozen=True, slots=True)
class HyperNodeSpec:
    name: str
    tier: int
    tier_name: str
    members: tuple[Member, ...]


def parse_network_topology(raw: Any, where: str) -> NetworkTopology | None:
    """`spec.networkTopology` of a Job or PodGroup; None when absent."""
    if raw is None:
        return None
    raw = typed(raw, Mapping, where)
    unknown = sorted(set(raw) - {"mode", "highestTierAllowed", "highestTierName"})
    if unknown:
        raise InputError(f"{where}.{unknown[0]}", "unknown field; valid: mode, highestTierAllowed, highestTierName")
    mode = raw.get("mode") or "hard"  # the CRD's default
    if mode not in MODES:
        raise InputError(f"{where}.mode", f"must be hard or soft, got {shown(mode)}")
    tier = raw.get("highestTierAllowed")
    if tier is not None:
        tier = integer(tier, f"{where}.highestTierAllowed", 1)
    name = typed(raw.get("highestTierName") or "", str, f"{where}.highestTierName")
    if tier is not None and name:
        raise InputError(f"{where}.highestTierName", "highestTierAllowed and highestTierName cannot both be set")
    if len(name) > 253:
        raise InputError(f"{where}.highestTierName", f"longer than 253 characters ({len(name)})")
    return NetworkTopology(mode, tier, name)


def parse_hypernode(obj: Mapping[str, Any]) -> HyperNodeSpec:
    """A HyperNode object; InputError names the field (`spec.members[1].selector.regexMatch.pattern`)."""
    _, name = metadata(obj, namespaced=False)
    if not is_object_name(name):  # as the API server's rule, so no name collides with <cluster-top>
        raise InputError("metadata.name", f"not a valid HyperNode name: {shown(name)}")
    spec = typed(obj.get("spec") or {}, Mapping, "spec")
    if "tier" not in spec:
        raise InputError("spec.tier", "is required")
    tier = integer(spec["tier"], "spec.tier", 1)
    tier_name = typed(spec.get("tierName") or "", str, "spec.tierName")
    if len(tier_name) > 253:
        raise InputError("spec.tierName", f"longer than 253 characters ({len(tier_name)})")
    raw_members = typed(spec.get("members") or [], list, "spec.members")
    if not raw_members:
        raise InputError("spec.members", "member must have at least one member")
    members = tuple(_member(m, f"spec.members[{i}]") for i, m in enumerate(raw_members))
    return HyperNodeSpec(name, tier, tier_name, members)


def _member(raw: Any, where: str) -> Member:
    raw = typed(raw, Mapping, where)
    kind = raw.get("type")
    if kind not in MEMBER_TYPES:
        raise InputError(f"{where}.type", f"must be Node or HyperNode, got {shown(kind)}")
    sel = typed(raw.get("selector") or {}, Mapping, f"{where}.selector")
    given = [key for key in SELECTORS if sel.get(key) is not None]
    unknown = sorted(set(sel) - set(SELECTORS))
    if unknown:
        raise InputError(f"{where}.selector.{unknown[0]}", f"unknown selector; valid: {', '.join(SELECTORS)}")
    if len(given) != 1:
        raise InputError(f"{where}.selector", "exactly one of exactMatch, regexMatch or labelMatch must be given"
                         + (f", got {' and '.join(given)}" if given else ""))
    key = given[0]
    value = typed(sel[key], Mapping, f"{where}.selector.{key}")
    if key == "exactMatch":
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}.selector.exactMatch.name", "should be at least 1 chars long")
        if not is_object_name(name):
            raise InputError(f"{where}.selector.exactMatch.name",
                             f"should match '{OBJECT_NAME_PATTERN}': not a valid node or HyperNode name: {shown(name)}")
        return Member(kind, exact=name)
    if kind == "HyperNode" and key != "exactMatch":
        raise InputError(f"{where}.selector.{key}", "a HyperNode member is named by exactMatch "
                         "(Volcano ignores other selectors of HyperNode members)")
    if key == "regexMatch":
        pattern = value.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise InputError(f"{where}.selector.regexMatch.pattern", "should be at least 1 chars long")
        return Member(kind, regex=compile_pattern(pattern, f"{where}.selector.regexMatch.pattern",
                                                  invalid="member regexMatch pattern is invalid"))
    labels = selector(value, f"{where}.selector.labelMatch")
    if not labels.requirements:
        raise InputError(f"{where}.selector.labelMatch", "needs matchLabels or matchExpressions")
    return Member(kind, labels=labels)
