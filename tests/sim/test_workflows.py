"""CronJobs and JobFlows in `caldera simulate --until`: their controllers start Jobs over
simulated time, through the same decisions as on a cluster."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML
from central.scheduler import load_config
from central.sim.timed import RunOptions, TimedResult, Workload, read_workload, run_once
from tests.builders import node, simulated_job

START = datetime(2026, 1, 5, tzinfo=timezone.utc)


def run(objects: list[dict[str, Any]], until: float, nodes: tuple[dict[str, Any], ...] = (node("n1", cpu="4"),)
        ) -> TimedResult:
    workload = Workload(static=[("test", n) for n in nodes], submitted=[("test", o) for o in objects])
    options = RunOptions(until=until, period=1.0, stuck_after=600.0, start=START)
    return run_once(workload, load_config(DEFAULT_CONF_YAML, "default"), options)


def cronjob(name: str, schedule: str, duration: str, policy: str = "Allow", **spec: Any) -> dict[str, Any]:
    job = simulated_job("x", duration=duration)
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedule": schedule, "concurrencyPolicy": policy,
                     "jobTemplate": {"spec": job["spec"]}, **spec}}


def flow(name: str, *flows: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobFlow", "metadata": {"name": name, "namespace": "default"},
            "spec": {"flows": list(flows)}}


def template(name: str, duration: str) -> dict[str, Any]:
    return {"apiVersion": "flow.volcano.sh/v1alpha1", "kind": "JobTemplate",
            "metadata": {"name": name, "namespace": "default"}, "spec": simulated_job(name, duration=duration)["spec"]}


def test_a_cronjob_starts_a_job_at_each_schedule_time() -> None:
    # created at 00:00, so the first schedule time after it is 00:10; the controller looks again
    # 0.1 s after each schedule time, as Volcano's does
    result = run([cronjob("every10", "*/10 * * * *", "2m")], until=3600.0)
    assert sorted((j["submitted"], j["phase"]) for j in result.jobs.values()) == [
        (600.1, "Completed"), (1200.1, "Completed"), (1800.1, "Completed"), (2400.1, "Completed"), (3000.1, "Completed")]
    assert "default/every10-29459530" in result.jobs  # named by the scheduled minute since the epoch


def test_forbid_starts_a_missed_run_once_the_active_one_ends() -> None:
    result = run([cronjob("slow", "*/10 * * * *", "15m", "Forbid", successfulJobsHistoryLimit=1)], until=3600.0)
    runs = {k.rsplit("-", 1)[1]: j["submitted"] for k, j in result.jobs.items()}
    # the 00:20 run waits for the 00:10 one to end (00:25:02) and starts then; the 00:30 run,
    # missed too, is dropped for the later 00:40 one (the most recent missed time, as Kubernetes)
    assert runs == {"29459530": 600.1, "29459540": 1502.0, "29459560": 2403.0, "29459570": 3304.0}


def test_replace_terminates_the_active_job() -> None:
    result = run([cronjob("hasty", "*/10 * * * *", "15m", "Replace")], until=1300.0)
    assert sorted((j["submitted"], j["phase"], j["finished"]) for j in result.jobs.values()) == [
        (600.1, "Terminated", 1200.1), (1200.1, "Running", None)]


def test_a_jobflow_starts_each_job_once_its_dependencies_completed() -> None:
    objects = [template("prep", "5m"), template("train", "10m"), template("eval", "1m"),
               flow("pipeline", {"name": "prep"}, {"name": "train", "dependsOn": {"targets": ["prep"]}},
                    {"name": "eval", "dependsOn": {"targets": ["train"]}})]
    result = run(objects, nodes=(node("n1", cpu="4"),), until=7200.0)
    jobs = {k.split("/", 1)[1]: j for k, j in result.jobs.items()}
    assert set(jobs) == {"pipeline-prep", "pipeline-train", "pipeline-eval"}
    assert jobs["pipeline-train"]["submitted"] == pytest.approx(jobs["pipeline-prep"]["finished"])
    assert jobs["pipeline-eval"]["submitted"] == pytest.approx(jobs["pipeline-train"]["finished"])
    assert all(j["phase"] == "Completed" for j in jobs.values())


def test_a_bad_cronjob_is_refused_before_the_run(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    path.write_text(yaml.safe_dump(cronjob("bad", "every day", "1m")))
    with pytest.raises(InputError) as err:
        read_workload([str(path)])
    assert "bad" in str(err.value) and "spec.schedule" in str(err.value)
