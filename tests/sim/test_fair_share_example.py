"""The fairshare example over simulated time: a team arriving behind another team's backlog
waits for the backlog under Volcano's default configuration, and about one job's run with
`examples/fairshare/fairshare.conf`. The shipped workload is cut to 40 + 4 jobs here so the
run is short; `python -m central.bench.fair_share` prints the full one."""

from statistics import mean

from central.bench.fair_share import EXAMPLE, START, waits_by_namespace
from central.framework.conf import DEFAULT_CONF_YAML
from central.scheduler import load_config
from central.sim.timed import RunOptions, read_workload, run_once
from central.sim.trace import read_trace


def team_waits(conf_text: str) -> dict[str, float]:
    workload = read_workload([str(EXAMPLE / "cluster.yaml")], [str(EXAMPLE / "two-teams.jsonl")])
    keep = {f"a-{i:03d}" for i in range(40)} | {f"b-{i:02d}" for i in range(4)}
    workload.submitted = [(where, obj) for where, obj in workload.submitted
                          if obj["kind"] != "Job" or obj["metadata"]["name"] in keep]
    result = run_once(workload, load_config(conf_text, "test"),
                      RunOptions(until=12 * 3600.0, period=1.0, stuck_after=600.0, start=START))
    assert result.still_running == []
    return {ns: mean(waits) for ns, waits in waits_by_namespace(result.jobs).items()}


def test_the_shipped_workload_is_the_one_described():
    jobs = [job for _, job in read_trace(str(EXAMPLE / "two-teams.jsonl"))]
    by_team = {ns: [j for j in jobs if j["metadata"]["namespace"] == ns] for ns in ("team-a", "team-b")}
    assert [len(by_team["team-a"]), len(by_team["team-b"])] == [300, 10]


def test_team_b_waits_for_the_backlog_without_fairshare_and_not_with_it():
    # 40 jobs of team a fill 4 x 8 CPUs in 5 waves of 30 minutes; team b comes at 1h
    without = team_waits(DEFAULT_CONF_YAML)
    assert without["team-b"] >= 1.5 * 3600  # behind the 3 waves left: 1.5h or more
    with_fairshare = team_waits((EXAMPLE / "fairshare.conf").read_text())
    assert with_fairshare["team-b"] <= 30 * 60  # the next wave that frees a slot
