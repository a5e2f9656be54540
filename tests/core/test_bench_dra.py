"""`caldera bench --dra` on a small cluster: claims cap what DRA places, and numa-aware's
device preference removes cross-NUMA GPU allocations the plain allocator makes."""

from __future__ import annotations

from central.bench.dra import cross_numa, dra_cluster, measure


def test_dra_on_places_only_pods_whose_claims_get_a_gpu() -> None:
    objects = dra_cluster(4, 40)  # 32 GPUs for 40 one-GPU pods
    off, on = measure(objects, False), measure(objects, True)
    assert off["placed"] == 40
    assert 24 <= on["placed"] <= 32


def test_numa_preference_removes_cross_numa_gpus() -> None:
    placed, crossed = cross_numa(20, 20, prefer=False)
    assert placed == 20 and crossed > 0
    assert cross_numa(20, 20, prefer=True) == (20, 0)
