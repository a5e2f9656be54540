"""HDRF (drf with enableHierarchy), restated from Volcano's hdrf_test.go: jobs under weighted
queue paths end with the allocations Volcano's test expects."""

from collections import Counter

from tests.scenarios.harness import run_case

# As in Volcano's test: proportion orders queues where HDRF ties (its Allocatable and Overused
# are off there); Volcano's config loader, like Caldera's, refuses the two in one tier.
CONF = ('actions: "allocate"\ntiers:\n- plugins: [{name: drf, enableHierarchy: true}]\n'
        '- plugins: [{name: proportion, enabledAllocatable: false, enabledOverused: false}]\n')


def _case(node: dict, queues: dict[str, tuple[str, str]], groups: dict[str, tuple[str, int, str, str]]) -> dict:
    return {
        "nodes": {"n": node},
        "queues": {name: {"weight": 1} for name in queues},
        "objects": [],
        "podgroups": {f"default/{pg}": {"minMember": 0, "queue": q, "phase": "Inqueue"} for pg, (q, *_) in groups.items()},
        "pods": {f"default/{pg}-p{i}": {"group": pg, "cpu": cpu, "memory": mem}
                 for pg, (_, n, cpu, mem) in groups.items() for i in range(n)},
        "config": CONF,
        "queue_annotations": queues,
    }


def _run(case: dict) -> Counter:
    # The harness shorthand has no queue annotations: add them to the generated objects.
    from tests.scenarios import harness

    objects = harness.objects_of(case)
    for obj in objects:
        if obj["kind"] == "Queue" and obj["metadata"]["name"] in case["queue_annotations"]:
            path, weights = case["queue_annotations"][obj["metadata"]["name"]]
            obj["metadata"]["annotations"] = {"volcano.sh/hierarchy": path, "volcano.sh/hierarchy-weights": weights}
    result, _ = run_case({"objects": objects, "config": case["config"]})
    return Counter(pod.split("/")[1].rsplit("-p", 1)[0] for pod in result.binds)


def test_rescaling():
    # sci and eng weigh the same at the top; eng's dev asks only cpu, prod only memory.
    case = _case({"cpu": 10, "memory": "10G", "pods": 50},
                 {"root-sci": ("root/sci", "100/50"), "root-eng-dev": ("root/eng/dev", "100/50/50"),
                  "root-eng-prod": ("root/eng/prod", "100/50/50")},
                 {"pg1": ("root-sci", 10, "1", "1G"), "pg21": ("root-eng-dev", 10, "1", "0"),
                  "pg22": ("root-eng-prod", 10, "0", "1G")})
    assert _run(case) == {"pg1": 5, "pg21": 5, "pg22": 5}


def test_blocking_nodes():
    # Memory-only jobs under pg3 and pg4 keep going once cpu is gone.
    case = _case({"cpu": 30, "memory": "30G", "pods": 500},
                 {"root-pg1": ("root/pg1", "100/25"), "root-pg2": ("root/pg2", "100/25"),
                  "root-pg3-pg31": ("root/pg3/pg31", "100/25/50"), "root-pg3-pg32": ("root/pg3/pg32", "100/25/50"),
                  "root-pg4": ("root/pg4", "100/25")},
                 {"pg1": ("root-pg1", 30, "1", "0"), "pg2": ("root-pg2", 30, "1", "0"),
                  "pg31": ("root-pg3-pg31", 30, "1", "0"), "pg32": ("root-pg3-pg31", 30, "0", "1G"),
                  "pg4": ("root-pg4", 30, "0", "1G")})
    assert _run(case) == {"pg1": 10, "pg2": 10, "pg31": 10, "pg32": 15, "pg4": 15}


def test_reclaim_takes_from_the_queue_hdrf_puts_after():
    # a holds the whole node; b's first pod would leave b (1/4) before a (3/4): one of a's goes.
    objects = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}},
        *[{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
           "metadata": {"name": q, "annotations": {"volcano.sh/hierarchy": f"root/{q}", "volcano.sh/hierarchy-weights": "1/1"}},
           "spec": {"weight": 1}} for q in ("a", "b")],
    ]
    from tests.scenarios import harness

    case = {"podgroups": {"ns/ja": {"minMember": 1, "queue": "a", "phase": "Running"},
                          "ns/jb": {"minMember": 1, "queue": "b", "phase": "Inqueue"}},
            "pods": {**{f"ns/ja-{i}": {"group": "ja", "cpu": 1, "memory": "1Gi", "node": "n"} for i in range(4)},
                     "ns/jb-0": {"group": "jb", "cpu": 1, "memory": "1Gi"}}}
    config = ('actions: "enqueue, allocate, reclaim"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
              '- plugins: [{name: drf, enableHierarchy: true}, {name: predicates}]\n')
    result, _ = run_case({"objects": objects + harness.objects_of(case), "config": config})
    assert result.evictions == ["ns/ja-3"] and result.pipelined == {"ns/jb-0": "n"}


def test_reclaim_spares_a_queue_hdrf_already_puts_first():
    # a holds 1 of 4 cpu, b 3: b's new job must not take from a (b would stay after a).
    objects = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi"}}},
        *[{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
           "metadata": {"name": q, "annotations": {"volcano.sh/hierarchy": f"root/{q}", "volcano.sh/hierarchy-weights": "1/1"}},
           "spec": {"weight": 1}} for q in ("a", "b")],
    ]
    from tests.scenarios import harness

    case = {"podgroups": {"ns/ja": {"minMember": 1, "queue": "a", "phase": "Running"},
                          "ns/jb": {"minMember": 1, "queue": "b", "phase": "Running"},
                          "ns/jc": {"minMember": 1, "queue": "b", "phase": "Inqueue"}},
            "pods": {"ns/ja-0": {"group": "ja", "cpu": 1, "memory": "1Gi", "node": "n"},
                     **{f"ns/jb-{i}": {"group": "jb", "cpu": 1, "memory": "1Gi", "node": "n"} for i in range(3)},
                     "ns/jc-0": {"group": "jc", "cpu": 1, "memory": "1Gi"}}}
    config = ('actions: "enqueue, allocate, reclaim"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
              '- plugins: [{name: drf, enableHierarchy: true}, {name: predicates}]\n')
    result, _ = run_case({"objects": objects + harness.objects_of(case), "config": config})
    assert result.evictions == []
