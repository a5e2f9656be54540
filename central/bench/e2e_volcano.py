"""Volcano as the e2e bench's third scheduler: its own components from the cached build of
`caldera conformance` (vc-webhook-manager, vc-controller-manager, vc-scheduler with Volcano
CI's scheduler configuration), installed on a fresh `caldera up` control plane in Caldera's
place exactly as the conformance runs do. The controller manager runs because Volcano needs it
for bare pods (it makes each its PodGroup); its requests are counted apart from the
scheduler's. Never built here: without the cache the column is left out, saying why."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from central.conformance import build as volcano_build
from central.conformance import volcano
from central.localcluster.up import Cluster

COMPONENTS = ("vc-scheduler", "vc-controller-manager", "vc-webhook-manager")


def unavailable(root: Path | None = None) -> str | None:
    """Why Volcano cannot run in the bench (its binaries or source not cached), or None."""
    built = volcano_build.Build(root or volcano_build.cache_root())
    missing = [n for n in COMPONENTS if not built.component(n).exists()]
    if missing:
        return (f"Volcano's {', '.join(missing)} not in {built.bin} (`caldera conformance` builds them "
                "from a clone of its repository)")
    if not (built.src / volcano.CHART).is_dir():
        return f"Volcano's source tree (its helm chart, CRDs) not in {built.src}"
    return None


def install(cluster: Cluster, say: Callable[[str], None], scheduler: bool) -> Callable[[], None]:
    """Put Volcano in Caldera's place on `cluster`; returns what starts its scheduler (a no-op
    when `scheduler` started it already)."""
    built = volcano_build.Build(volcano_build.cache_root())
    conf = volcano.replace_caldera(cluster, built, say, scheduler=scheduler)
    if scheduler:
        return lambda: None
    return lambda: volcano.start_scheduler(cluster, built, conf)
