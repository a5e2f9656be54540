"""The time-aware configuration on its two shipped workloads, over simulated time under the
real cycle: the gang that starves under Volcano's default configuration starts within 45
minutes, every small job finishes and CPU utilisation stays at 0.60 or above; team b,
arriving behind team a's backlog, starts within 45 minutes on average."""

from datetime import datetime, timezone
from pathlib import Path
from statistics import mean

from central.framework.conf import DEFAULT_CONF_YAML
from central.scheduler import load_config
from central.sim.timed import RunOptions, read_workload, run_once
from central.sim.timeline import TimedResult
from central.sim.trace import read_trace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "time-aware"
CONF = Path(__file__).resolve().parents[2] / "examples" / "configs" / "time-aware.conf"
START = datetime(2026, 1, 5, tzinfo=timezone.utc)


def run(workload: str, conf_text: str, until_h: float, keep: int | None = None) -> TimedResult:
    loaded = read_workload([str(EXAMPLE / "cluster.yaml")], [str(EXAMPLE / workload)])
    if keep is not None:  # team a's first `keep` jobs and all of team b's
        names = {f"a-{i:03d}" for i in range(keep)} | {f"b-{i:02d}" for i in range(10)}
        loaded.submitted = [(where, obj) for where, obj in loaded.submitted
                            if obj["kind"] != "Job" or obj["metadata"]["name"] in names]
    return run_once(loaded, load_config(conf_text, "test"),
                    RunOptions(until=until_h * 3600.0, period=1.0, stuck_after=600.0, start=START))


def test_the_shipped_workloads_are_the_ones_described():
    gang = [j for _, j in read_trace(str(EXAMPLE / "starving-gang.jsonl"))]
    small = [j for j in gang if j["metadata"]["name"].startswith("small-")]
    assert len(small) == 360 and len(gang) == 361  # one every 2 minutes for 12 hours, and the gang
    teams = [j["metadata"]["namespace"] for _, j in read_trace(str(EXAMPLE / "two-teams.jsonl"))]
    assert (teams.count("team-a"), teams.count("team-b")) == (300, 10)


def test_the_gang_starts_within_45_minutes_and_every_small_job_finishes():
    result = run("starving-gang.jsonl", CONF.read_text(), 14)
    gang = result.jobs["default/gang"]
    assert gang["started"] is not None and gang["started"] - gang["submitted"] <= 45 * 60
    assert all(job["finished"] is not None for job in result.jobs.values())
    assert result.metrics["utilization"]["cpu"] >= 0.60


def test_the_gang_starves_under_volcanos_default_configuration():
    result = run("starving-gang.jsonl", DEFAULT_CONF_YAML, 14)
    gang = result.jobs["default/gang"]
    assert gang["started"] is None or gang["started"] - gang["submitted"] > 11 * 3600


def test_team_b_starts_within_45_minutes_on_average():
    # 80 of team a's 300 jobs: still 2.5 hours of backlog when team b comes (the bench
    # `python -m central.bench.time_aware` runs the whole workload)
    result = run("two-teams.jsonl", CONF.read_text(), 12, keep=80)
    waits = [j["started"] - j["submitted"] for key, j in result.jobs.items() if key.startswith("team-b/")]
    assert len(waits) == 10 and mean(waits) <= 45 * 60
    assert all(job["finished"] is not None for job in result.jobs.values())
