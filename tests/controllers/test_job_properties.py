"""Properties of the job controller under random pod histories and policies."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from central.controllers.bus import command
from central.controllers.jobs import ABORTED, COMPLETED, FAILED, TERMINATED
from tests.builders import job, task
from tests.controllers.fakeloop import FakeCluster

PHASES = {
    "Pending",
    "Running",
    "Restarting",
    "Completing",
    "Completed",
    "Aborting",
    "Aborted",
    "Terminating",
    "Terminated",
    "Failed",
}
policies = st.lists(
    st.sampled_from(
        [
            {"event": "PodFailed", "action": "RestartJob"},
            {"event": "PodFailed", "action": "RestartTask"},
            {"event": "PodFailed", "action": "RestartPod"},
            {"exitCode": 2, "action": "AbortJob"},
            {"event": "TaskCompleted", "action": "CompleteJob"},
            {"event": "PodEvicted", "action": "TerminateJob"},
            {"event": "Unknown", "action": "AbortJob", "timeout": "1m"},
        ]
    ),
    max_size=2,
    unique_by=lambda p: p.get("event", p.get("exitCode")),
)
moves = st.lists(
    st.tuples(
        st.sampled_from(["phase", "enqueue", "gone", "command", "wait"]),
        st.integers(0, 2),
        st.sampled_from(["Running", "Succeeded", "Failed", "Unknown", "Evicted"]),
        st.sampled_from(["AbortJob", "ResumeJob", "RestartJob"]),
    ),
    max_size=25,
)


@settings(deadline=None, max_examples=200)
@given(policies, moves, st.booleans())
def test_random_histories_keep_the_invariants(
    job_policies: list[dict[str, Any]], history: list[tuple[str, int, str, str]], graceful: bool
) -> None:
    c = FakeCluster(job(tasks=[task("ps"), task("worker", 2)], policies=job_policies, maxRetry=3), graceful=graceful)
    finished_retry = None
    for move, index, phase, action in history:
        names = sorted(c.pods)
        if move == "phase" and names:
            name = names[index % len(names)]
            if phase == "Evicted":
                c.set_phase("Failed", name, reason="Evicted")
            else:
                c.set_phase(phase, name, exit_code=2 if phase == "Failed" else None)
        elif move == "enqueue" and c.podgroup is not None:
            c.enqueue()
        elif move == "gone":
            c.gone()
        elif move == "command":
            c.commands.append(command(action, "Job", "train", "ml", name=f"cmd-{len(c.commands)}-{action.lower()}"))
        d = c.step(advance=61 if move == "wait" else 0)  # FakeCluster asserts nothing is created twice
        status = c.status
        assert c.phase in PHASES
        assert not set(d.delete_pods) & {p["metadata"]["name"] for p in d.create_pods}
        live = [p for p in c.pods.values() if not p["metadata"].get("deletionTimestamp")]
        assert sum(status[k] for k in ("pending", "running", "succeeded", "failed", "unknown")) == len(live)
        assert status["retryCount"] <= 3
        assert all(
            p["metadata"]["annotations"]["volcano.sh/job-version"] == str(status["version"])
            for p in (p for p in d.create_pods)
        )
        if c.phase in (COMPLETED, TERMINATED, FAILED):
            # a finished job stays finished: nothing it does creates pods or changes its retries
            assert not d.create_pods and d.create_podgroup is None
            if finished_retry is None:
                finished_retry = status["retryCount"]
            assert status["retryCount"] == finished_retry
        if c.phase == ABORTED:
            assert not d.create_pods
