"""The co-location example does what its README line says: placement from the agents' reports
(NUMA free CPUs), GPU sharing by memory, batch resources, and tdm's time window."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "colocation"


def simulate(now: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "caldera", "simulate", "-o", "json", "--now", now,
                          "--manifests", str(EXAMPLE / "cluster.yaml"), "--manifests", str(EXAMPLE / "workloads.yaml"),
                          "--config", str(EXAMPLE / "scheduler.conf"), "--node-reports", str(EXAMPLE / "node-reports")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_at_night_every_workload_lands_where_the_agents_reports_say() -> None:
    result = simulate("2026-11-24T23:00:00Z")
    # colo-1's kubelet gave CPUs 0-5 of NUMA node 0 away (its agent reports only 6-7 free
    # there): the database gets six CPUs of NUMA node 1, pinned by the annotation.
    assert result["binds"]["online/db"] == "colo-1"
    assert result["annotations"]["online/db"] == {"caldera.sh/cpuset": "8-13", "caldera.sh/numa-nodes": "1"}
    # Two inference pods share one card by memory on the night-zone node, lent as revocable work.
    assert result["binds"]["ml/infer-a"] == result["binds"]["ml/infer-b"] == "gpu-night"
    assert {result["annotations"][p]["volcano.sh/gpu-index"] for p in ("ml/infer-a", "ml/infer-b")} == {"0"}
    # The offline pod runs on the batch CPU the agents offer.
    assert result["binds"]["batch/etl"] in ("colo-1", "colo-2")


@pytest.mark.parametrize("now", ["2026-11-24T12:00:00Z"])
def test_by_day_the_revocable_zone_is_closed_and_says_so(now: str) -> None:
    result = simulate(now)
    assert "ml/infer-a" not in result["binds"] and "online/db" in result["binds"]
    assert "revocable zone outside its time window" in result["pending"]["ml/infer-a"]
