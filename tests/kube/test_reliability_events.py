"""Watch events arrive in any interleaving across objects (a pod before its
node or PodGroup, a deletion before the re-creation of another object, resyncs repeating an
update); each object's own events keep their order, as a watch guarantees. The cache must never
raise and must end exactly as an in-order replay ends (Volcano #1957, #3445, #1857)."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from central.model.cache import ClusterCache
from central.scheduler.feeder import CacheFeeder
from tests.builders import node, pod, podgroup, queue

NODES, GROUPS, PODS = ["n1", "n2"], ["g1", "g2"], ["p1", "p2", "p3"]


def history(draw: Any, versions: st.SearchStrategy, deletable: bool = True) -> list[tuple[str, dict[str, Any]]]:
    """One object's events in order: ADDED, some MODIFIED (resyncs repeat one), maybe DELETED."""
    objs = draw(st.lists(versions, min_size=1, max_size=3))
    events = [("ADDED", objs[0])] + [("MODIFIED", o) for o in objs[1:]]
    if draw(st.booleans()):
        events.append(("MODIFIED", objs[-1]))  # a resync
    if deletable and draw(st.integers(0, 3)) == 0:
        events.append(("DELETED", objs[-1]))
    return events


@st.composite
def streams(draw: Any) -> tuple[list[list[tuple[str, dict[str, Any]]]], list[int]]:
    per_object = [history(draw, st.builds(node, st.just(n), cpu=st.integers(1, 8).map(str), memory=st.just("8Gi"),
                                          pods=st.none())) for n in NODES]
    per_object += [history(draw, st.builds(queue, st.just(q), weight=st.integers(1, 3))) for q in ("q1",)]
    per_object += [history(draw, st.builds(podgroup, st.just(g), st.just("ns"), min_member=st.integers(0, 3),
                                           queue=st.sampled_from(["default", "q1"]))) for g in GROUPS]
    per_object += [history(draw, st.builds(pod, st.just(p), st.just("ns"), group=st.sampled_from(GROUPS),
                                           node=st.sampled_from([None, *NODES]), cpu=st.integers(1, 3).map(str),
                                           phase=st.sampled_from(["Pending", "Running", "Succeeded"])))
                   for p in PODS]
    slots = [i for i, events in enumerate(per_object) for _ in events]
    order = draw(st.permutations(slots))  # the k-th slot of object i is its k-th event: per-object order kept
    return per_object, order


def replay(events: list[tuple[str, dict[str, Any]]]) -> ClusterCache:
    cache = ClusterCache()
    feeder = CacheFeeder(cache)
    for event, obj in events:
        feeder.handler(obj["kind"])(event, copy.deepcopy(obj))
    return cache


def state(cache: ClusterCache) -> Any:
    rows = {name: n.index for name, n in cache.nodes.items()}
    return (
        {name: (cache.table.alloc[row].tolist(), cache.table.used[row].tolist(), int(cache.table.pods[row]))
         for name, row in rows.items()},
        {uid: (t.status, t.node, t.job_uid) for uid, t in cache.tasks.items()},
        {uid: (j.min_available, j.queue, sorted(j.tasks), j.has_podgroup) for uid, j in cache.jobs.items()},
        {name: q.weight for name, q in cache.queues.items()},
    )


@settings(max_examples=100, deadline=None)
@given(streams())
def test_any_interleaving_of_watch_events_ends_as_the_ordered_replay(generated):
    per_object, order = generated
    in_order = [event for events in per_object for event in events]
    cursor = [0] * len(per_object)
    shuffled = []
    for i in order:
        shuffled.append(per_object[i][cursor[i]])
        cursor[i] += 1
    assert state(replay(shuffled)) == state(replay(in_order))
