"""The experiments Volcano reports (examples/experiments/), each outcome checked."""

from pathlib import Path

from central.cli import main

EXPERIMENTS = Path(__file__).resolve().parents[2] / "examples" / "experiments"


def simulate(capsys, *args):
    import json

    assert main(["simulate", "--output", "json", "--now", "2026-01-05T00:00:00Z", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_gang_deadlock(capsys):
    here = EXPERIMENTS / "gang-deadlock"
    cluster = ["--manifests", str(here / "cluster.yaml")]
    loose = simulate(capsys, *cluster, "--manifests", str(here / "jobs-no-gang.yaml"), "--until", "4h")
    # without a gang every job holds some of its pods, none ever has all six: deadlock
    assert sorted(loose["still_running"]) == [f"default/tf-{i}" for i in range(1, 6)]
    assert len(loose["metrics"]["stuck"]) == 5
    assert loose["metrics"]["mean_jct_s"] is None
    gangs = simulate(capsys, *cluster, "--manifests", str(here / "jobs-gang.yaml"), "--until", "4h")
    # as gangs every job completes, two, two, then one at a time (16 CPUs, 6 per job)
    assert gangs["still_running"] == [] and gangs["metrics"]["stuck"] == {}
    starts = sorted(round(j["started"] / 600) for j in gangs["jobs"].values())
    assert starts == [0, 0, 1, 1, 2]
    assert all(j["phase"] == "Completed" for j in gangs["jobs"].values())


def test_task_topology_shortens_jobs(capsys):
    here = EXPERIMENTS / "task-topology"
    runs = simulate(capsys, "--manifests", str(here / "cluster.yaml"), "--manifests", str(here / "jobs.yaml"),
                    "--until", "4h", "--config", str(here / "spread.conf"),
                    "--config", str(here / "task-topology.conf"))
    spread, topology = runs["runs"]["spread.conf"], runs["runs"]["task-topology.conf"]
    # spread: every job spans nodes and runs 1.3x longer; task-topology keeps each job on one node
    assert spread["metrics"]["mean_jct_s"] == 3600 * 1.3 + 1
    assert topology["metrics"]["mean_jct_s"] == 3600 + 1
    for job in ("tf-1", "tf-2", "tf-3"):
        assert len({node for pod, node in topology["binds"].items() if pod.startswith(f"default/{job}-")}) == 1



def test_spark_min_resources_keeps_drivers_from_holding_the_cluster(capsys):
    here = EXPERIMENTS / "spark-minresources"
    cluster = ["--manifests", str(here / "cluster.yaml"), "--until", "4h"]
    loose = simulate(capsys, *cluster, "--manifests", str(here / "apps-no-minresources.yaml"))
    whole = simulate(capsys, *cluster, "--manifests", str(here / "apps-minresources.yaml"))
    assert loose["still_running"] == [] and whole["still_running"] == []
    # without minResources twelve drivers start at once and four executors fit, one per application
    assert sorted(round(j["started"]) for j in loose["jobs"].values()) == [30] * 4 + [1230] * 8
    # with it, four whole applications at a time, in three rounds
    assert sorted(round(j["started"]) for j in whole["jobs"].values()) == [30] * 4 + [630] * 4 + [1230] * 4
    assert (loose["metrics"]["makespan_s"], whole["metrics"]["makespan_s"]) == (2430, 1830)
    assert whole["metrics"]["mean_jct_s"] < 0.62 * loose["metrics"]["mean_jct_s"]  # 1230 s against 2030 s
