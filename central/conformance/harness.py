"""One suite on one system: a fresh `caldera up` cluster shaped as Volcano CI's (kube-scheduler
beside the system under test, as in kind), Caldera (or Volcano in its place) with the suites'
scheduler ConfigMap synced to the scheduler's file, the suite run by ginkgo, then the cluster
stopped; its logs and report are kept."""

from __future__ import annotations

import shutil
from pathlib import Path

from central.conformance import environment, ginkgo, volcano
from central.conformance.build import Build
from central.conformance.confsync import ConfigMapSync
from central.conformance.report import SuiteResult
from central.localcluster import build, controlplane
from central.localcluster.build import Progress
from central.localcluster.processes import StartError
from central.localcluster.up import up

CALDERA, VOLCANO = "caldera", "volcano"
SYSTEMS = (CALDERA, VOLCANO)
# Where `caldera up` materialises the scheduler's ConfigMap volume (daemonset/scheduler.yaml).
CALDERA_CONF = Path("pods/caldera-scheduler/config/volcano-scheduler.conf")


def run_suite(built: Build, suite: str, system: str, out: Path, focus: str | None = None,
              timeout: float = ginkgo.SUITE_TIMEOUT, keep: bool = False, say: Progress = print) -> SuiteResult:
    """Results of `suite` on `system`; out/ keeps report.json, ginkgo.log and the cluster's logs/."""
    conf = environment.ci_scheduler_conf(built.src)
    cluster_dir = out / "cluster"
    shutil.rmtree(cluster_dir, ignore_errors=True)
    say(f"== {suite} on {system}: starting a cluster in {cluster_dir} ...")
    gates = environment.feature_gates(suite)
    cluster = up(cluster_dir, environment.nodes(suite), agents=False, scheduler_conf=conf, say=say, feature_gates=gates)
    try:
        # Volcano CI's kind cluster runs kube-scheduler too: some specs fill nodes with its pods.
        controlplane.start_kube_scheduler(cluster.sup, build.binaries(["kube-scheduler"], progress=say), qps=50, burst=100)
        admin = cluster.admin()
        environment.prepare(admin, conf)
        if system == VOLCANO:
            target = volcano.replace_caldera(cluster, built, say, gates)
        else:
            target = cluster.dir / CALDERA_CONF
            if not target.exists():
                raise StartError(f"Caldera's scheduler configuration is not at {target}; "
                                 "daemonset/scheduler.yaml's config volume moved?")
        sync = ConfigMapSync(admin, target).start()
        try:
            return ginkgo.run(built, suite, cluster.kubeconfig, out, focus, timeout, say)
        finally:
            sync.stop()
    finally:
        cluster.sup.stop_all()
        shutil.rmtree(out / "logs", ignore_errors=True)
        if (cluster_dir / "logs").exists():
            shutil.copytree(cluster_dir / "logs", out / "logs")
        if not keep:
            shutil.rmtree(cluster_dir, ignore_errors=True)
