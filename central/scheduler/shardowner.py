"""Which shard schedules a gang: one PodGroup is owned by one scheduler at a time.

Each replica decides only on nodes of its own NodeShard, so two replicas each placing half of
a gang would together break the gang's all-or-nothing rule. A replica therefore schedules a
PodGroup only after it has claimed it: it writes its name into the PodGroup's
`OWNER_ANNOTATION` with an update conditional on the resourceVersion it read. Of two replicas
racing for the same PodGroup the API server accepts exactly one write (the other gets 409 and
leaves the gang alone). A claim held by a scheduler whose Lease expired may be taken over the
same way. Without sharding nothing is claimed and every PodGroup is schedulable, as before.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

OWNER_ANNOTATION = "caldera.sh/shard-scheduler"


def owner(podgroup: Mapping[str, Any]) -> str | None:
    annotations = (podgroup.get("metadata") or {}).get("annotations") or {}
    return annotations.get(OWNER_ANNOTATION) or None


def may_schedule(podgroup: Mapping[str, Any], me: str | None) -> bool:
    """Whether replica `me` may place this gang now (always, when sharding is off: `me` None)."""
    return me is None or owner(podgroup) == me


def claim(podgroup: Mapping[str, Any], me: str, live: Collection[str]) -> dict[str, Any] | None:
    """The conditional update that makes `me` the gang's owner, or None when another live
    scheduler holds it (or `me` already does)."""
    held_by = owner(podgroup)
    if held_by == me or (held_by is not None and held_by in live):
        return None
    metadata = dict(podgroup.get("metadata") or {})
    metadata["annotations"] = dict(metadata.get("annotations") or {}, **{OWNER_ANNOTATION: me})
    if "resourceVersion" not in metadata:
        raise ValueError("a claim must be conditional: the PodGroup read has no resourceVersion")
    return dict(podgroup, metadata=metadata)
