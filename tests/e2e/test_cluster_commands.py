"""vcctl-style commands against the real apiserver: queue close/open and job suspend/resume go
through Command objects that the controllers act on, as in Volcano."""

from __future__ import annotations

import pytest

from central.kube.client import ApiError
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e



def queue_state(t: Tenant) -> str:
    return (t.kube.get(f"/apis/scheduling.volcano.sh/v1beta1/queues/{t.queue}").get("status") or {}).get("state", "")



def test_closed_queue_refuses_new_jobs_until_opened(tenant: Tenant) -> None:
    wait_for(lambda: queue_state(tenant) == "Open", "the queue Open")
    done = tenant.caldera("queue", "operate", "-n", tenant.queue, "-a", "close")
    assert done.returncode == 0, done.stderr
    wait_for(lambda: queue_state(tenant) == "Closed", "the queue Closed")
    with pytest.raises(ApiError) as refused:
        tenant.submit(volcano_job("late", tenant.queue))
    assert "queue" in refused.value.message.lower()
    assert tenant.caldera("queue", "operate", "-n", tenant.queue, "-a", "open").returncode == 0
    wait_for(lambda: queue_state(tenant) == "Open", "the queue Open again")
    tenant.submit(volcano_job("late", tenant.queue, replicas=1, duration="1s"))
    wait_for(lambda: tenant.phase("late") == "Completed", "the job Completed")


def test_suspend_then_resume(tenant: Tenant) -> None:
    tenant.submit(volcano_job("pausable", tenant.queue, replicas=2))
    wait_for(lambda: tenant.phase("pausable") == "Running", "the job Running")
    out = tenant.caldera("job", "suspend", "-N", "pausable", "-n", tenant.namespace)
    assert out.returncode == 0, out.stderr
    wait_for(lambda: tenant.phase("pausable") == "Aborted", "the job Aborted")
    wait_for(lambda: not tenant.pods("volcano.sh/job-name=pausable"), "its pods gone")
    assert tenant.caldera("job", "resume", "-N", "pausable", "-n", tenant.namespace).returncode == 0
    wait_for(lambda: tenant.phase("pausable") == "Running", "the job Running again", timeout=90)
