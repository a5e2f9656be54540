"""numa-aware's node score is Volcano's normalised one: 100 - 100 x used // most used."""

import numpy as np

from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.fields import parse_time
from central.scheduler import load_config
from central.sim.manifests import Manifests, load_into
from tests.scenarios.harness import node_data_of, objects_of

CONF = 'actions: "allocate"\ntiers:\n- plugins: [{name: predicates}, {name: numa-aware, arguments: {weight: 2}}]\n'
GUARANTEED = {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "4", "memory": "1Gi"},
                                                                      "limits": {"cpu": "4", "memory": "1Gi"}}}]}


def test_score_is_normalised_against_the_most_numa_nodes_any_candidate_needs():
    # 4 CPUs, best-effort: n1 holds them on one NUMA node, n2 needs two, n3 four.
    four = [{"cpus": "0-3", "free": f} for f in ("0-3", "0-1", "0", "0")]
    case = {
        "nodes": {n: {"cpu": 16, "memory": "64Gi"} for n in ("n1", "n2", "n3")},
        "node_reports": {
            "n1": {"cpu_manager": "static", "topology_manager": "best-effort", "numa": four},
            "n2": {"cpu_manager": "static", "topology_manager": "best-effort",
                   "numa": [{"cpus": "0-3", "free": "0-1"}, {"cpus": "4-7", "free": "4-5"}]},
            "n3": {"cpu_manager": "static", "topology_manager": "best-effort",
                   "numa": [{"cpus": f"{i}", "free": f"{i}"} for i in range(4)]},
        },
        "pods": {"ns/p": {"spec": GUARANTEED, "annotations": {"volcano.sh/numa-topology-policy": "best-effort"}}},
    }
    cache = ClusterCache()
    load_into(cache, Manifests(objects=[("t", o) for o in objects_of(case)]))
    now = parse_time("2026-01-01T01:00:00Z", "now")
    for data in node_data_of(case, now):
        cache.set_node_data(data)
    ssn = Session(cache, load_config(CONF), now=now)
    plugin = next(p for tier in ssn.tiers for p in tier if p.name == "numa-aware")
    rows = np.array([cache.nodes[n].index for n in ("n1", "n2", "n3")])
    # used 1, 2, 4 of most 4: 100 - 25, 100 - 50, 100 - 100; times weight 2
    assert plugin.batch_node_order(cache.tasks["ns/p"], rows).tolist() == [150.0, 100.0, 0.0]
    # only n1 and n2 in play: most is 2
    assert plugin.batch_node_order(cache.tasks["ns/p"], rows[:2]).tolist() == [100.0, 0.0]
