"""docs/migrating-from-volcano.md followed with the real Volcano, on the real control plane.

Volcano's vc-scheduler and vc-controller-manager (built from a pinned commit under
~/.cache/caldera/volcano/<commit>/bin: test infrastructure, never in the product) run Jobs on a
`caldera up` cluster whose Caldera scheduler and controllers are stopped; Caldera's webhook
stands in for Volcano's admission throughout. Beside Volcano, Caldera's scheduler under its
own name schedules only the Job that names it. The switch-over: Volcano's scheduler stops, a
Job is submitted (Volcano's controllers make its PodGroup, which waits to be admitted),
Volcano's controllers stop, Caldera's start under `volcano`; running pods must keep their node
and uid, the pending Job be scheduled by Caldera, the Queue keep its state. Opt-in
(CALDERA_VOLCANO_E2E=1): it needs Volcano's binaries (about 20 CPU-minutes to build) and
starts a cluster of its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from central.kube.client import KubeClient
from central.localcluster import build, install
from central.localcluster.build import cache_dir
from central.localcluster.simkubelet import NodeSpec
from central.localcluster.up import Cluster, down, up
from tests.builders import job, queue, task
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
VOLCANO = cache_dir().parent / "volcano"
CHART = Path("installer/helm/chart/volcano")
CRD_FOLDERS = (CHART / "crd/bases", CHART / "charts/jobflow/crd/bases")
JOBS = "/apis/batch.volcano.sh/v1alpha1/namespaces/default/jobs"


def volcano_home() -> Path | None:
    """The newest cached Volcano build that has the scheduler and the controller manager."""
    homes = [h for h in VOLCANO.glob("*") if (h / "bin" / "vc-scheduler").exists()
             and (h / "bin" / "vc-controller-manager").exists() and (h / "src").is_dir()]
    return max(homes, key=lambda h: h.stat().st_mtime) if homes else None


def why_not() -> str | None:
    if os.environ.get("CALDERA_VOLCANO_E2E") != "1":
        return "set CALDERA_VOLCANO_E2E=1 to run Volcano's own binaries (built under ~/.cache/caldera/volcano)"
    if volcano_home() is None:
        return f"no Volcano build with vc-scheduler and vc-controller-manager under {VOLCANO}"
    return build.unavailable()


pytestmark = [pytest.mark.e2e, pytest.mark.skipif(why_not() is not None, reason=why_not() or "")]


def start_volcano(cluster: Cluster, home: Path, name: str) -> None:
    port, healthz = cluster.sup.ports.take(), cluster.sup.ports.take()
    extra = []
    if name == "vc-scheduler":
        conf = cluster.dir / "volcano-scheduler.conf"
        conf.write_text((home / "src" / CHART / "config" / "volcano-scheduler.conf").read_text())
        extra = [f"--scheduler-conf={conf}", "--schedule-period=1s"]
    proc = cluster.sup.start(name, [str(home / "bin" / name), f"--kubeconfig={cluster.kubeconfig}",
                                    "--leader-elect=false", "--scheduler-name=volcano", "--enable-healthz=true",
                                    f"--healthz-address=127.0.0.1:{healthz}", f"--listen-address=127.0.0.1:{port}",
                                    "--logtostderr", "-v=2", *extra])
    cluster.sup.wait_ready(proc, lambda: _ok(healthz), 120)


def _ok(port: int) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def pods(admin: KubeClient, job_name: str) -> list[dict[str, Any]]:
    listing = admin.get(f"/api/v1/namespaces/default/pods?labelSelector=volcano.sh%2Fjob-name%3D{job_name}")
    return listing.get("items", [])


def bound(admin: KubeClient, job_name: str, count: int) -> dict[str, tuple[str, str]] | None:
    """pod name -> (uid, node) once `count` pods of the Job are bound, else None."""
    found = {p["metadata"]["name"]: (p["metadata"]["uid"], p["spec"].get("nodeName", "")) for p in pods(admin, job_name)}
    return found if len(found) == count and all(node for _, node in found.values()) else None


def podgroup_of(admin: KubeClient, job_name: str) -> dict[str, Any] | None:
    listing = admin.get("/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups")
    return next((g for g in listing.get("items", []) if any(
        r.get("kind") == "Job" and r.get("name") == job_name for r in g["metadata"].get("ownerReferences") or [])), None)


def settings(admin: KubeClient, scheduler_name: str) -> None:
    path = "/api/v1/namespaces/caldera-system/configmaps/caldera-settings"
    admin.merge_patch(path, {"data": {"scheduler-name": scheduler_name}})


def a_job(name: str, scheduler: str, replicas: int, cpu: str) -> dict[str, Any]:
    return job(name, "default", queue="research", schedulerName=scheduler, minAvailable=replicas,
               tasks=[task("worker", replicas, cpu=cpu)])


@pytest.fixture(scope="module")
def volcano(tmp_path_factory) -> Iterator[tuple[Cluster, KubeClient, dict[str, tuple[str, str]]]]:
    """A cluster whose Jobs Volcano runs (Caldera's scheduler and controllers stopped), with a
    Queue and a Job Volcano has bound; the bound pods (name -> uid, node) come along."""
    home = volcano_home()
    assert home is not None
    directory = tmp_path_factory.mktemp("volcano") / "c"
    cluster = up(directory, [NodeSpec("node-1", cpu="8", memory="32Gi")], agents=False, say=lambda _: None)
    try:
        admin = cluster.admin()
        for name in ("caldera-scheduler", "caldera-controllers"):  # Volcano's turn
            cluster.sup.stop(name)
        discovery = install.Discovery(admin)
        served = {d["metadata"]["name"] for d in yaml.safe_load_all((ROOT / "daemonset" / "crds.yaml").read_text()) if d}
        for folder in CRD_FOLDERS:  # the CRDs Caldera does not serve, which Volcano's controllers watch
            for path in sorted((home / "src" / folder).glob("*.yaml")):
                crd = yaml.safe_load(path.read_text())
                if crd["metadata"]["name"] not in served:
                    admin.create(discovery.collection(crd["apiVersion"], crd["kind"], None), crd)
                    install._wait_established(admin, crd["metadata"]["name"])
        for name in ("vc-controller-manager", "vc-scheduler"):
            start_volcano(cluster, home, name)
        admin.create("/apis/scheduling.volcano.sh/v1beta1/queues", queue("research", weight=1))
        admin.create(JOBS, a_job("running", "volcano", 2, "1"))
        before = eventually(lambda: bound(admin, "running", 2), timeout=90, what="Volcano binding the running Job")
        yield cluster, admin, before
    finally:
        down(directory)


def test_beside_volcano_caldera_schedules_only_the_job_that_names_it(volcano) -> None:
    cluster, admin, before = volcano
    settings(admin, "caldera")
    cluster.start("caldera-scheduler")
    try:
        admin.create(JOBS, a_job("trial", "caldera", 1, "1"))
        [(_, node)] = eventually(lambda: bound(admin, "trial", 1), timeout=90,
                                 what="Caldera binding the trial Job").values()
        assert node == "node-1"
        assert bound(admin, "running", 2) == before  # Volcano's pods left alone
        assert "caldera-controllers" not in {p.name for p in cluster.sup.procs}  # Volcano's reconcile every Job
    finally:
        cluster.sup.stop("caldera-scheduler")


def test_switch_over_hands_every_job_to_caldera_without_losing_a_pod(volcano) -> None:
    cluster, admin, before = volcano
    cluster.sup.stop("vc-scheduler")  # the doc's order: the scheduler first
    admin.create(JOBS, a_job("pending", "volcano", 2, "2"))
    # Volcano's controllers make its PodGroup, which no scheduler admits now: no pods yet
    group = eventually(lambda: podgroup_of(admin, "pending"), timeout=60, what="Volcano's PodGroup of the Job")
    assert (group.get("status") or {}).get("phase", "Pending") == "Pending" and pods(admin, "pending") == []
    cluster.sup.stop("vc-controller-manager")
    settings(admin, "volcano")
    cluster.start("caldera-controllers")
    cluster.start("caldera-scheduler")

    eventually(lambda: bound(admin, "pending", 2), timeout=90, what="Caldera binding the pending Job")
    assert bound(admin, "running", 2) == before  # never rebound, never recreated
    assert admin.get("/apis/scheduling.volcano.sh/v1beta1/queues/research")["status"]["state"] == "Open"
    groups = [g["metadata"]["name"] for g in admin.get(
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups")["items"]]
    assert len([g for g in groups if g.startswith("pending")]) == 1  # Volcano's, adopted
