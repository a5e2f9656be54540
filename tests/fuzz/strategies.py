"""Hypothesis strategies for whole manifests and scheduler configurations, mostly valid and
with every kind of wrong thing mixed in: any type where a type is expected, huge and
non-finite numbers, unicode, deep nesting, and names that refer to each other (so gangs,
queues and nodes actually meet in a cycle)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NAMES = st.sampled_from(["a", "b", "c", "w-1", "ps"])
NAMESPACES = st.sampled_from(["default", "ns", "team-a"])
QUEUES = st.sampled_from(["default", "root", "q1", "q2", "nosuch"])

# Anything a YAML or JSON document can hold, nested, with the numbers that break parsers.
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=2**70)
           | st.floats() | st.text(max_size=8) | st.sampled_from(["1e999999999", ".nan", "-1", "²", "0-99999999",
                                                                   "87600000000h", "1Ei", "", "\x00", "é"]))
JUNK = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                          max_size=3), max_leaves=8)


def deep(depth: int) -> Any:
    out: Any = 1
    for _ in range(depth):
        out = [out]
    return out


def maybe(valid: st.SearchStrategy, bad: float = 0.15) -> st.SearchStrategy:
    """`valid` most of the time, otherwise anything at all."""
    return st.one_of(valid, JUNK) if bad else valid


def quantity() -> st.SearchStrategy:
    good = st.sampled_from(["100m", "500m", "1", "2", 4, "1Gi", "512Mi", 0.5, "8"])
    bad = st.sampled_from(["1e999999999", float("nan"), float("inf"), 2**64, "18446744073709551616", "lots", -1,
                           "9223372036854775807", "8Ei", "1e-999999999", {"a": 1}, [1]])
    return st.one_of(good, good, good, bad)


def resources() -> st.SearchStrategy:
    return maybe(st.fixed_dictionaries({}, optional={"cpu": quantity(), "memory": quantity(),
                                                     "nvidia.com/gpu": quantity(), "pods": quantity()}))


def annotations() -> st.SearchStrategy:
    keys = st.sampled_from(["volcano.sh/sla-waiting-time", "volcano.sh/jdb-min-available", "caldera.sh/cpuset",
                            "volcano.sh/gpu-index", "volcano.sh/numa-topology-policy", "volcano.sh/preemptable",
                            "volcano.sh/task-priority", "volcano.sh/qos-level", "caldera.sh/allowed-namespaces",
                            "volcano.sh/gpu-unhealthy-ids", "scheduling.volcano.sh/queue-name"])
    values = st.sampled_from(["1h", "87600000000h", "abc", "0-3", "0-99999999", "0,²", "single-numa-node", "true",
                              "50%", "100%", "0", "-5", "LC", "ns,team-a", "*", "", "9" * 30])
    return maybe(st.dictionaries(keys, st.one_of(values, st.text(max_size=6)), max_size=3))


def metadata(namespaced: bool) -> st.SearchStrategy:
    fields: dict[str, st.SearchStrategy] = {"name": maybe(NAMES, 0.05)}
    if namespaced:
        fields["namespace"] = maybe(NAMESPACES, 0.05)
    return maybe(st.fixed_dictionaries(fields, optional={"annotations": annotations(),
                                                         "labels": maybe(st.dictionaries(NAMES, NAMES, max_size=2))}),
                 0.05)


def container() -> st.SearchStrategy:
    return maybe(st.fixed_dictionaries({"name": NAMES, "image": st.just("busybox")},
                                       optional={"resources": maybe(st.fixed_dictionaries(
                                           {}, optional={"requests": resources(), "limits": resources()}))}), 0.05)


def pod_spec() -> st.SearchStrategy:
    return maybe(st.fixed_dictionaries(
        {"containers": maybe(st.lists(container(), min_size=1, max_size=2), 0.05)},
        optional={"schedulerName": maybe(st.just("volcano"), 0.1), "nodeName": maybe(st.sampled_from(["n1", "n2"])),
                  "initContainers": st.lists(container(), max_size=1), "priority": maybe(st.integers(-10, 10)),
                  "nodeSelector": maybe(st.dictionaries(NAMES, NAMES, max_size=1)),
                  "tolerations": maybe(st.lists(JUNK, max_size=1)), "affinity": JUNK}), 0.05)


def node() -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "apiVersion": st.just("v1"), "kind": st.just("Node"),
        "metadata": maybe(st.fixed_dictionaries({"name": st.sampled_from(["n1", "n2"])},
                                                optional={"annotations": annotations()}), 0.05),
        "status": maybe(st.fixed_dictionaries({"allocatable": resources()}), 0.05)})


def pod() -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "apiVersion": st.just("v1"), "kind": st.just("Pod"), "metadata": metadata(True), "spec": pod_spec()},
        optional={"status": maybe(st.fixed_dictionaries({"phase": st.sampled_from(["Pending", "Running"])}))})


def podgroup() -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "apiVersion": st.just("scheduling.volcano.sh/v1beta1"), "kind": st.just("PodGroup"),
        "metadata": metadata(True),
        "spec": maybe(st.fixed_dictionaries({}, optional={
            "minMember": maybe(st.integers(0, 4)), "queue": maybe(QUEUES), "minResources": resources(),
            "minTaskMember": maybe(st.dictionaries(NAMES, st.integers(0, 3), max_size=2))}))})


def queue() -> st.SearchStrategy:
    return st.fixed_dictionaries({
        "apiVersion": st.just("scheduling.volcano.sh/v1beta1"), "kind": st.just("Queue"),
        "metadata": maybe(st.fixed_dictionaries({"name": st.sampled_from(["q1", "q2", "q3"])},
                                                optional={"annotations": annotations()}), 0.05),
        "spec": maybe(st.fixed_dictionaries({}, optional={
            "weight": maybe(st.integers(0, 10)), "parent": maybe(QUEUES), "capability": resources(),
            "deserved": resources(), "reclaimable": maybe(st.booleans())}))})


def job() -> st.SearchStrategy:
    task = maybe(st.fixed_dictionaries({
        "name": maybe(NAMES), "replicas": maybe(st.integers(0, 4) | st.sampled_from([10**9, 2**64])),
        "template": maybe(st.fixed_dictionaries({"spec": pod_spec()}, optional={"metadata": metadata(False)}))},
        optional={"minAvailable": maybe(st.integers(0, 4))}), 0.05)
    return st.fixed_dictionaries({
        "apiVersion": st.just("batch.volcano.sh/v1alpha1"), "kind": st.just("Job"), "metadata": metadata(True),
        "spec": maybe(st.fixed_dictionaries({"tasks": maybe(st.lists(task, min_size=1, max_size=3), 0.05)},
                                            optional={"minAvailable": maybe(st.integers(0, 6)),
                                                      "queue": maybe(QUEUES), "schedulerName": st.just("volcano")}))})


def objects() -> st.SearchStrategy:
    """A cluster: nodes first, then whatever refers to them, plus the odd deep or unicode object."""
    odd = st.sampled_from([{"kind": "Pod", "metadata": {"name": "deep"}, "spec": deep(150)},
                           {"kind": "Pod", "metadata": {"name": "ünï", "namespace": "ns"},
                            "spec": {"containers": []}},
                           {"kind": "Queue", "metadata": {"name": {"a": 1}}}])
    return st.lists(st.one_of(node(), node(), pod(), pod(), podgroup(), queue(), job(), odd), min_size=1, max_size=8)


def config() -> st.SearchStrategy:
    plugin = maybe(st.fixed_dictionaries(
        {"name": maybe(st.sampled_from(["gang", "drf", "proportion", "binpack", "predicates", "sla", "tdm",
                                        "nodeorder", "priority", "numa-aware", "deviceshare"]))},
        optional={"enableJobReady": maybe(st.booleans()),
                  "arguments": maybe(st.dictionaries(st.sampled_from(["binpack.weight", "sla-waiting-time",
                                                                      "tdm.evict.period", "weight"]),
                                                     st.sampled_from([1, "1h", "87600000000h", -1, "x", float("inf"),
                                                                      float("nan"), 10**30, "1e400"]),
                                                     max_size=2))}), 0.1)
    return st.fixed_dictionaries({
        "actions": maybe(st.sampled_from(["enqueue, allocate, backfill", "allocate", "enqueue, allocate, preempt",
                                          "reclaim, allocate"]), 0.1),
        "tiers": maybe(st.lists(st.fixed_dictionaries({"plugins": st.lists(plugin, max_size=3)}), max_size=2), 0.1)})


def clusters() -> st.SearchStrategy:
    """Mostly well-formed clusters that do schedule, so the invariants are tested on real cycles:
    nodes, gangs (PodGroup + pods), bound pods, queues, Volcano Jobs; numbers at the edges."""
    cpu = st.sampled_from(["100m", "500m", "1", "1", "2", "3", "8"])
    req = st.fixed_dictionaries({"cpu": cpu}, optional={"memory": st.sampled_from(["128Mi", "1Gi", "4Gi"])})
    node_ = st.builds(lambda n, c, m, p: {"kind": "Node", "metadata": {"name": n},
                                          "status": {"allocatable": {"cpu": c, "memory": m, "pods": p}}},
                      st.sampled_from(["n1", "n2", "n3"]), st.sampled_from(["4", "8", "16", "0"]),
                      st.sampled_from(["4Gi", "16Gi"]), st.integers(1, 10))

    def gang(name: str, ns: str, min_member: int, queue_name: str, pods: list[tuple[dict, str | None, str]]) -> list:
        group = {"kind": "PodGroup", "metadata": {"name": name, "namespace": ns},
                 "spec": {"minMember": min_member, "queue": queue_name}}
        return [group] + [{"kind": "Pod", "metadata": {"name": f"{name}-{i}", "namespace": ns,
                                                       "annotations": {"scheduling.k8s.io/group-name": name}},
                           "spec": {"schedulerName": "volcano", **({"nodeName": where} if where else {}),
                                    "containers": [{"name": "c", "resources": {"requests": r}}],
                                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": init}}}]},
                           "status": {"phase": "Running" if where else "Pending"}}
                          for i, (r, where, init) in enumerate(pods)]
    gangs = st.builds(gang, st.sampled_from(["g1", "g2", "g3", "g4"]), st.sampled_from(["ns", "team-a"]),
                      st.integers(0, 3), st.sampled_from(["default", "q1"]),
                      st.lists(st.tuples(req, st.sampled_from([None, None, None, "n1"]),
                                         st.sampled_from(["100m", "1", "4"])), min_size=1, max_size=4))
    queues = st.just([{"kind": "Queue", "metadata": {"name": "q1"}, "spec": {"weight": 2}}])
    return st.builds(lambda ns, qs, gs: [*qs, *ns, *(o for g in gs for o in g)],
                     st.lists(node_, min_size=1, max_size=3, unique_by=lambda n: n["metadata"]["name"]), queues,
                     st.lists(gangs, max_size=4, unique_by=lambda g: (g[0]["metadata"]["namespace"],
                                                                      g[0]["metadata"]["name"])))
