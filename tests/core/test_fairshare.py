"""fairshare: per-namespace decayed usage orders jobs within a queue, gates enqueue when asked,
and survives a scheduler restart through the Queue's annotation."""

import json
from datetime import datetime, timedelta, timezone

import pytest

from central.errors import InputError
from central.model.cache import ClusterCache
from central.plugins.fairshare import ANNOTATION, fair_shares
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.testing import RecordingSink
from tests.builders import node, queue
from tests.scenarios.harness import objects_of

T0 = datetime(2026, 1, 5, tzinfo=timezone.utc)
HOUR = timedelta(hours=1)


def conf(arguments: str = "", actions: str = "allocate"):
    args = "fairshare.resourceKey: cpu" + (", " + arguments if arguments else "")
    return load_config(f'actions: "{actions}"\ntiers:\n'
                       f"- plugins: [{{name: priority}}, {{name: gang}}, {{name: fairshare, arguments: {{{args}}}}}]\n"
                       "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n")


WITHOUT = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: priority}, {name: gang}]\n'
                      "- plugins: [{name: drf}, {name: predicates}, {name: proportion}, {name: nodeorder}]\n")


def cache_of(pods, podgroups, queue_annotations=None):
    cache = ClusterCache()
    for obj in [node("n1", cpu="4", memory="16Gi"), queue("default", weight=1, annotations=queue_annotations)]:
        cache.apply(obj)
    for obj in objects_of({"podgroups": podgroups, "pods": pods}):
        cache.apply(obj)
    return cache


RUNNING_A = {"team-a/old-0": {"group": "old", "cpu": 4, "node": "n1"}}
RUNNING_A_GROUP = {"team-a/old": {"minMember": 1, "queue": "default", "phase": "Running"}}
# one slot, two waiting jobs: team a's created first
WAITING = {"team-a/next-0": {"group": "next", "cpu": 4}, "team-b/first-0": {"group": "first", "cpu": 4}}
WAITING_GROUPS = {"team-a/next": {"minMember": 1, "queue": "default", "phase": "Inqueue", "created": "2026-01-01T00:00:00Z"},
                  "team-b/first": {"minMember": 1, "queue": "default", "phase": "Inqueue", "created": "2026-01-01T01:00:00Z"}}


def test_max_min_fair_shares():
    # 12 to split: b asks 2 (less than 12/3 = 4) and gets it; 10 left for a and c, 5 each
    assert fair_shares({"a": 20, "b": 2, "c": 9}, 12) == {"b": 2, "a": 5, "c": 5}
    assert fair_shares({"a": 3, "b": 0}, 12) == {"a": 3}  # nothing asked, no share
    assert fair_shares({"a": 3}, 0) == {}


@pytest.mark.parametrize("arguments, key", [
    ('fairshare.halfLifeMinutes: "0"', "fairshare.halfLifeMinutes"),
    ("fairshare.flushIntervalSeconds: ten", "fairshare.flushIntervalSeconds"),
    ("fairshare.resourceKey.gpu-queue: nvidia.com/gpu", "fairshare.resourceKey.gpu-queue"),  # gpu-queue not targeted
    ("fairshare.halflife: 5", "fairshare.halflife"),
])
def test_bad_arguments_are_refused_by_name(arguments, key):
    with pytest.raises(InputError) as err:
        conf(arguments)
    assert key in str(err.value)


def test_usage_decays_by_half_life_and_accrues_what_ran():
    cache = cache_of(RUNNING_A, RUNNING_A_GROUP)
    c = conf('fairshare.halfLifeMinutes: "240"')
    run_cycle(cache, c, now=T0)  # the first session only starts the clock
    assert cache.plugin_memory[("fairshare", "memory")].usage == {}
    run_cycle(cache, c, now=T0 + 4 * HOUR)
    # 4000 millicores ran for 14,400 s
    assert cache.plugin_memory[("fairshare", "memory")].usage["default"]["team-a"] == pytest.approx(57.6e6)
    cache.delete("Pod", "team-a", "old-0")
    run_cycle(cache, c, now=T0 + 8 * HOUR)
    # half of it left, plus what the previous session left running (4000m) over the next 14,400 s
    assert cache.plugin_memory[("fairshare", "memory")].usage["default"]["team-a"] == pytest.approx(28.8e6 + 57.6e6)
    run_cycle(cache, c, now=T0 + 12 * HOUR)
    assert cache.plugin_memory[("fairshare", "memory")].usage["default"]["team-a"] == pytest.approx(43.2e6)


def test_the_namespace_that_used_less_goes_first():
    cache = cache_of(RUNNING_A, RUNNING_A_GROUP)
    c = conf()
    run_cycle(cache, c, now=T0)
    run_cycle(cache, c, now=T0 + HOUR)
    cache.delete("Pod", "team-a", "old-0")  # team a's job is done; both now run nothing
    for obj in objects_of({"podgroups": WAITING_GROUPS, "pods": WAITING}):
        cache.apply(obj)
    result = run_cycle(cache, c, now=T0 + HOUR + timedelta(seconds=1))
    assert result.binds == {"team-b/first-0": "n1"}

    without = cache_of(WAITING, WAITING_GROUPS)
    assert run_cycle(without, WITHOUT, now=T0).binds == {"team-a/next-0": "n1"}  # first come, first served


def test_a_restart_keeps_the_order_through_the_queue_annotation():
    c = conf('fairshare.persistState: "true", fairshare.flushIntervalSeconds: "30"')
    before = cache_of(RUNNING_A, RUNNING_A_GROUP)
    sink = RecordingSink()
    run_cycle(before, c, sink, now=T0)
    run_cycle(before, c, sink, now=T0 + HOUR)
    written = sink.of("queue_annotations")
    assert [name for name, _ in written] == ["default"]  # the first session had no usage to write
    record = written[-1][1][ANNOTATION]
    assert record == '{"lastUpdate":"2026-01-05T01:00:00Z","usage":{"team-a":14400000.0}}'

    # a new scheduler: nothing in memory, team a's job gone, the Queue as the last write left it
    restarted = cache_of(WAITING, WAITING_GROUPS, queue_annotations={ANNOTATION: record})
    result = run_cycle(restarted, c, RecordingSink(), now=T0 + HOUR + timedelta(minutes=1))
    assert result.binds == {"team-b/first-0": "n1"}

    forgot = cache_of(WAITING, WAITING_GROUPS)  # the same restart without the annotation
    assert run_cycle(forgot, c, now=T0 + HOUR + timedelta(minutes=1)).binds == {"team-a/next-0": "n1"}


def test_annotations_are_written_at_most_once_per_flush_interval():
    c = conf('fairshare.persistState: "true", fairshare.flushIntervalSeconds: "30"')
    cache, sink = cache_of(RUNNING_A, RUNNING_A_GROUP), RecordingSink()
    for second in (0, 10, 20, 30, 40, 61):
        run_cycle(cache, c, sink, now=T0 + timedelta(seconds=second))
    written = [value[ANNOTATION] for _, value in sink.of("queue_annotations")]
    # at 30 and 61 only (the session at 0 had no usage yet; 10, 20 and 40 were too soon)
    assert [json.loads(record)["lastUpdate"] for record in written] == ["2026-01-05T00:00:30Z", "2026-01-05T00:01:01Z"]


def test_without_persist_state_nothing_is_written_or_read():
    record = '{"lastUpdate":"2026-01-05T01:00:00Z","usage":{"team-a":14400000.0}}'
    cache, sink = cache_of(WAITING, WAITING_GROUPS, queue_annotations={ANNOTATION: record}), RecordingSink()
    result = run_cycle(cache, conf(), sink, now=T0 + HOUR)
    assert result.binds == {"team-a/next-0": "n1"}
    assert sink.of("queue_annotations") == []


def test_enqueue_gate_holds_a_namespace_at_its_fair_share():
    # 4 CPUs: a runs 4 and asks 4 more, b asks 4: max-min gives each 2, so a is above its share
    pods = {**RUNNING_A, **WAITING}
    # (enqueue asks the plugins only about jobs with minResources, as Volcano's)
    groups = {**RUNNING_A_GROUP, **{k: {**v, "phase": "Pending", "minResources": {"cpu": "4"}}
                                    for k, v in WAITING_GROUPS.items()}}
    def enqueue(gate: str):
        return load_config('actions: "enqueue"\ntiers:\n- plugins: [{name: fairshare, arguments: '
                           f'{{fairshare.resourceKey: cpu, fairshare.enableEnqueueGate: "{gate}"}}}}]\n')
    result = run_cycle(cache_of(pods, groups), enqueue("true"), now=T0)
    assert result.podgroups["team-a/next"]["phase"] == "Pending"
    assert result.podgroups["team-b/first"]["phase"] == "Inqueue"
    assert result.pending_reasons["team-a/next-0"] == (
        "PodGroup team-a/next is not admitted yet: namespace team-a runs 4 cpu in queue default, "
        "at or above its fair share 2 (fairshare)")
    ungated = run_cycle(cache_of(pods, groups), enqueue("false"), now=T0)
    assert ungated.podgroups["team-a/next"]["phase"] == "Inqueue"
