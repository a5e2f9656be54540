"""The network-topology example does what its README says: each gang inside one HyperNode of
the tier it allows, soft mode on the lowest tier that has room, and a gang no leaf holds waiting."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "network-topology"


def test_every_gang_lands_within_one_hypernode_or_says_why_not() -> None:
    out = subprocess.run([sys.executable, "-m", "caldera", "simulate", "-o", "json", "--manifests", str(EXAMPLE),
                          "--config", str(EXAMPLE / "scheduler.conf")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    placed = lambda job: {node for pod, node in result["binds"].items() if pod.startswith(f"ml/{job}-")}  # noqa: E731
    assert placed("ddp-leaf") == {"gpu-3", "gpu-4"}  # leaf-2: leaf-1 has one free node
    assert placed("llm-spine") == {"gpu-5", "gpu-6", "gpu-7", "gpu-8"}  # spine-2
    assert placed("sweep-soft") == {"gpu-2"}  # the last free node of leaf-1
    assert placed("xl-waits") == set()
    assert result["pending"]["ml/xl-waits-worker-0"].startswith(
        "network topology hard (highestTierAllowed 1): no HyperNode within the allowed tiers has the gang's "
        "minResources free (cpu 48, memory 192Gi, nvidia.com/gpu 24)")
