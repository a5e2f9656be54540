"""vcctl's table layouts, as its Go format strings print them (pkg/cli: PrintJobs, PrintQueues,
PrintPods), written out literally: every column padded, rows keep their trailing spaces."""

from __future__ import annotations

from central.vcctl.pod import COLUMNS as POD_COLUMNS
from central.vcctl.tables import job_table, pod_table, queue_table
from tests.builders import job, queue


def running_job() -> dict:
    j = job("test-job", "ns1")
    j["metadata"]["creationTimestamp"] = "2026-03-04T05:06:07Z"
    j["status"] = {"state": {"phase": "Running"}, "minAvailable": 3, "running": 3}
    return j


def test_job_list_is_printjobs() -> None:
    assert job_table([running_job()]) == (
        "Name       Creation       Phase       JobType     Replicas    Min   Pending   Running   Succeeded   "
        "Failed    Unknown     RetryCount\n"
        "test-job   2026-03-04     Running     Batch       3           3     0         3         0           "
        "0         0           0         \n")


def test_job_list_across_namespaces_is_printjobs() -> None:
    assert job_table([running_job()], all_namespaces=True).splitlines()[1].startswith(
        "ns1         test-job   2026-03-04     Running     Batch       3           3     ")


def test_queue_list_is_printqueues() -> None:
    q = queue("q1", weight=2, parent="root")
    q["status"] = {"state": "Open", "running": 1, "inqueue": 2}
    assert queue_table([q]) == (
        "Name                     Weight  State   Parent  Inqueue Pending Running Unknown Completed\n"
        "q1                       2       Open    root    2       0       1       0       0       \n")


def test_pod_list_is_printpods() -> None:
    pod = {"metadata": {"name": "test-job-worker-0", "namespace": "ns1", "creationTimestamp": "2000-01-01T00:00:00Z"},
           "spec": {"containers": [{"name": "c"}]},
           "status": {"phase": "Running", "containerStatuses": [{"ready": True, "restartCount": 0}]}}
    lines = pod_table([pod], POD_COLUMNS).splitlines(keepends=True)
    # each column: its widest value + 8, or its header + 2
    assert lines[0].startswith("Name                     Ready      Status         Restart  Age")
    assert lines[1].startswith("test-job-worker-0        1/1        Running        0        ")
