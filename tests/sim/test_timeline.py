"""`caldera simulate --until`: jobs run to completion over simulated time, through the real
job controller and scheduling cycle."""

from datetime import datetime, timezone

import pytest

from central.framework.conf import DEFAULT_CONF_YAML
from central.scheduler import load_config
from central.sim.timed import RunOptions, Workload, run_once
from tests.builders import node, simulated_job

START = datetime(2026, 1, 5, tzinfo=timezone.utc)
CONF = load_config(DEFAULT_CONF_YAML, "default")


def run(objects, nodes=(node("n1", cpu="4"),), until=3600.0, period=1.0):
    workload = Workload(static=[("test", n) for n in nodes], submitted=[("test", o) for o in objects])
    return run_once(workload, CONF, RunOptions(until=until, period=period, stuck_after=600.0, start=START))


def test_a_job_runs_for_its_duration_and_completes():
    result = run([simulated_job("a", replicas=2)])
    a = result.jobs["default/a"]
    assert a["phase"] == "Completed"
    assert a["submitted"] == 0.0
    assert a["started"] == pytest.approx(1.0, abs=1.0)  # the first cycle after the controller made its pods
    assert a["finished"] == pytest.approx(a["started"] + 600.0, abs=1.0)
    assert result.time == a["finished"]  # nothing left to do: the run ends there, not at --until
    assert result.still_running == []


def test_empty_stretches_are_skipped():
    result = run([simulated_job("long", duration="168h")], until=8 * 86400.0)
    assert result.jobs["default/long"]["phase"] == "Completed"
    assert result.instants < 20  # a week of waiting is one jump, not 604,800 cycles


def test_submit_at_delays_a_job():
    late = simulated_job("late", **{"sim.caldera.sh/submit-at": "5m"})
    result = run([late])
    assert result.jobs["default/late"]["submitted"] == 300.0
    assert result.jobs["default/late"]["started"] >= 300.0


def test_a_failing_pod_fails_the_job_after_its_retries():
    restart = {"event": "PodFailed", "action": "RestartJob"}
    result = run([simulated_job("bad", exit_code=3, policies=[restart])])
    bad = result.jobs["default/bad"]
    assert bad["phase"] == "Failed"
    # Volcano fails the job at the restart that reaches maxRetry (2): two runs of 600s each
    assert bad["finished"] == pytest.approx(2 * 600.0, abs=5.0)


def test_a_pod_without_duration_lives_as_its_command_says():
    # the same reading as the simulated kubelet's: `sh -c "sleep 300; exit 3"` fails after 300 s
    bad = simulated_job("scripted", duration=None, policies=[{"event": "PodFailed", "action": "AbortJob"}])
    template = bad["spec"]["tasks"][0]["template"]["spec"]
    template["restartPolicy"] = "Never"
    template["containers"][0].update(command=["/bin/sh"], args=["-c", "sleep 300; exit 3"])
    result = run([bad])
    scripted = result.jobs["default/scripted"]
    assert scripted["phase"] == "Aborted"
    assert scripted["finished"] == pytest.approx(scripted["started"] + 300.0, abs=2.0)


def test_jobs_wait_for_room_and_run_one_after_another():
    second = simulated_job("second", cpu="4", **{"sim.caldera.sh/submit-at": "1s"})
    result = run([simulated_job("first", cpu="4"), second])
    first, second = result.jobs["default/first"], result.jobs["default/second"]
    assert second["started"] >= first["finished"]
    assert result.metrics["mean_wait_s"] == pytest.approx((first["started"] + second["started"] - 1) / 2)
    assert result.metrics["utilization"]["cpu"] > 0.95


def test_until_stops_the_run_and_names_what_still_runs():
    result = run([simulated_job("forever", duration=None)], until=7200.0)
    assert result.time == 7200.0
    assert result.still_running == ["default/forever"]
    assert result.jobs["default/forever"]["finished"] is None


def test_a_job_without_enough_peers_is_stuck():
    # min-peers 3 but only 2 pods fit: they hold the node and never progress
    starved = simulated_job("starved", replicas=3, min_available=1, cpu="2", **{"sim.caldera.sh/min-peers": "3"})
    result = run([starved], until=3600.0)
    stuck = result.metrics["stuck"]["default/starved"]
    assert (stuck["running"], stuck["needs"]) == (2, 3)
    assert stuck["for_s"] > 3500


PREEMPT = load_config("""
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit, arguments: {overcommit-factor: 2.0}}, {name: drf}, {name: predicates},
            {name: nodeorder}]
""", "preempt")  # the preemptor's PodGroup must be Inqueue on a full cluster: overcommit 2, no proportion


def test_preemption_acts_in_time():
    # low: two 2-CPU pods (minAvailable 1, so gang lets one go); high arrives at 10m and needs 2 CPUs
    low = simulated_job("low", replicas=2, min_available=1, cpu="2", duration="1h")
    high = simulated_job("high", cpu="2", duration="10m", **{"sim.caldera.sh/submit-at": "10m"})
    high["spec"]["priorityClassName"] = "high"
    urgent = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 1000}
    workload = Workload(static=[("test", urgent), ("test", node("n1", cpu="4"))],
                        submitted=[("test", low), ("test", high)])
    result = run_once(workload, PREEMPT, RunOptions(until=4 * 3600.0, period=1.0, stuck_after=600.0, start=START))
    assert len(result.last.evictions) == 1 and result.last.evictions[0].startswith("default/low-main-")
    low_, high_ = result.jobs["default/low"], result.jobs["default/high"]
    assert 600 <= high_["started"] < 610 and high_["phase"] == "Completed"
    # the evicted pod, re-created by the job controller, runs its hour once high is done
    assert low_["phase"] == "Completed"
    assert low_["finished"] == pytest.approx(high_["finished"] + 3600, abs=5)


def command(action, kind, name, at):
    return {"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command", "action": action,
            "metadata": {"name": f"{name}-{action.lower()}", "namespace": "default",
                         "annotations": {"sim.caldera.sh/submit-at": at}},
            "target": {"kind": kind, "name": name}}


def test_commands_act_in_time():
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"},
             "spec": {"weight": 1}}
    late = simulated_job("late", **{"sim.caldera.sh/submit-at": "10m"})
    late["spec"]["queue"] = "q"
    aborted = simulated_job("aborted", duration="1h")
    result = run([queue, command("CloseQueue", "Queue", "q", "5m"), late, aborted,
                  command("AbortJob", "Job", "aborted", "20m")], until=7200.0)
    assert result.jobs["default/late"]["started"] is None  # its queue closed before it came
    assert result.jobs["default/aborted"]["phase"] == "Aborted"
    assert result.jobs["default/aborted"]["finished"] == pytest.approx(1200, abs=2)


TDM = load_config("""
actions: "enqueue, allocate, backfill, shuffle"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins:
  - {name: predicates}
  - {name: proportion}
  - {name: nodeorder}
  - {name: tdm, arguments: {tdm.revocable-zone.night: "01:00-02:00"}}
""", "tdm")


def test_tdm_windows_open_and_close_in_time():
    revocable = node("rev", cpu="4")
    revocable["metadata"]["labels"] = {"volcano.sh/revocable-zone": "night"}
    short, long_ = simulated_job("short", duration="30m"), simulated_job("long", duration="3h")
    for j in (short, long_):
        j["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["volcano.sh/preemptable"] = "true"
    workload = Workload(static=[("test", revocable)], submitted=[("test", short), ("test", long_)])
    result = run_once(workload, TDM, RunOptions(until=4 * 3600.0, period=1.0, stuck_after=600.0, start=START))
    # the lent node opens at 01:00 (START is midnight UTC) and is taken back at 02:00
    assert 3600 <= result.jobs["default/short"]["started"] <= 3600 + 61
    assert result.jobs["default/short"]["phase"] == "Completed"
    assert result.last.evictions == ["default/long-main-0"]
    assert result.jobs["default/long"]["finished"] is None


RECLAIM = load_config("""
actions: "enqueue, allocate, reclaim, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}]
- plugins: [{name: overcommit, arguments: {overcommit-factor: 2.0}}, {name: drf}, {name: predicates},
            {name: proportion}, {name: nodeorder}]
""", "reclaim")  # overcommit 2: on a full cluster the reclaimer's PodGroup must still be admitted


def test_reclaim_acts_in_time():
    queues = [{"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": name},
               "spec": {"weight": 1, "reclaimable": True}} for name in ("a", "b")]
    greedy = simulated_job("greedy", replicas=4, min_available=1, cpu="1", duration="1h")
    greedy["spec"]["queue"] = "a"
    later = simulated_job("later", replicas=2, cpu="1", duration="10m", **{"sim.caldera.sh/submit-at": "10m"})
    later["spec"]["queue"] = "b"
    workload = Workload(static=[("test", node("n1", cpu="4"))], submitted=[("test", q) for q in queues]
                        + [("test", greedy), ("test", later)])
    result = run_once(workload, RECLAIM, RunOptions(until=4 * 3600.0, period=1.0, stuck_after=600.0, start=START))
    # queue b takes back its deserved half of the node from a, at once
    assert len(result.last.evictions) == 2 and all(p.startswith("default/greedy-") for p in result.last.evictions)
    assert 600 <= result.jobs["default/later"]["started"] < 610
    assert result.jobs["default/greedy"]["phase"] == "Completed"


def test_a_cooldown_holds_preemption_off_until_it_ends():
    # As above, with cdp and a 30m cooldown on low's pods: high, submitted at 10m, waits until
    # low's pods have run 30m (they started at about 1s).
    cdp = load_config("""
actions: "enqueue, allocate, preempt, backfill"
tiers:
- plugins: [{name: priority}, {name: gang}, {name: conformance}, {name: cdp}]
- plugins: [{name: overcommit, arguments: {overcommit-factor: 2.0}}, {name: drf}, {name: predicates},
            {name: nodeorder}]
""", "cdp")
    low = simulated_job("low", replicas=2, min_available=1, cpu="2", duration="1h")
    low["spec"]["tasks"][0]["template"]["metadata"]["annotations"]["volcano.sh/cooldown-time"] = "30m"
    high = simulated_job("high", cpu="2", duration="10m", **{"sim.caldera.sh/submit-at": "10m"})
    high["spec"]["priorityClassName"] = "high"
    urgent = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 1000}
    workload = Workload(static=[("test", urgent), ("test", node("n1", cpu="4"))],
                        submitted=[("test", low), ("test", high)])
    result = run_once(workload, cdp, RunOptions(until=4 * 3600.0, period=1.0, stuck_after=3600.0, start=START))
    assert 1800 <= result.jobs["default/high"]["started"] < 1815
    assert result.jobs["default/high"]["phase"] == "Completed"
