"""The agent's /metrics behind a bearer token, reviewed by a real kube-apiserver (TokenReview,
then SubjectAccessReview on the non-resource URL /metrics), as kube-rbac-proxy does."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

from central.localcluster import controlplane
from central.localcluster.install import service_account_token
from nodeagent.agent import Agent
from nodeagent.config import load_config
from nodeagent.exporter import MetricsServer
from nodeagent.metricsauth import MetricsAuthorizer
from nodeagent.pods import StaticPodSource
from tests.nodeagent.fakes import FakeNvml, fake_proc, fake_sys, write

RBAC = "rbac.authorization.k8s.io/v1"


def build_agent(tmp_path: Path) -> Agent:
    write(tmp_path / "cg", "cgroup.controllers", "cpu memory\n")
    cfg = load_config(None, {"node.name": "node-1", "paths.sys_root": str(fake_sys(tmp_path / "sys")),
                             "paths.proc_root": str(fake_proc(tmp_path / "proc")),
                             "paths.cgroup_root": str(tmp_path / "cg")})
    return Agent(cfg, pod_source=StaticPodSource([]), nvml=FakeNvml([]))


def scrape(port: int, token: str | None, path: str = "/metrics") -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}")
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def test_metrics_need_a_token_whose_user_may_get_them(real, tmp_path: Path) -> None:
    ns = real.namespace
    for name in ("prometheus", "tenant"):
        real.admin.create(f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": name}})
    role = f"metrics-reader-{ns}"
    real.admin.create(f"/apis/{RBAC}/clusterroles", {"metadata": {"name": role},
                      "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]})
    real.admin.create(f"/apis/{RBAC}/clusterrolebindings", {
        "metadata": {"name": role}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": ns}]})
    try:
        prometheus, tenant = (service_account_token(real.admin, ns, name, controlplane.ISSUER)
                              for name in ("prometheus", "tenant"))
        reviews: list[str] = []

        def create(path: str, body: dict) -> dict:
            reviews.append(body["kind"])
            return real.admin.create(path, body)

        server = MetricsServer(build_agent(tmp_path), "127.0.0.1", 0, max_pod_series=1,
                               authorizer=MetricsAuthorizer(create))
        port = server.start()
        try:
            code, body = scrape(port, prometheus)
            assert code == 200 and "nodeagent_build_info" in body
            assert scrape(port, prometheus)[0] == 200 and reviews == ["TokenReview", "SubjectAccessReview"]  # cached
            code, body = scrape(port, tenant)
            assert code == 403 and f"system:serviceaccount:{ns}:tenant may not get /metrics" in body
            assert scrape(port, None) == (401, "a bearer token is required\n")
            assert scrape(port, "not-a-token")[0] == 401
            assert scrape(port, None, "/healthz")[0] == 200  # the kubelet's probes carry no token
        finally:
            server.stop()
    finally:
        for kind in ("clusterrolebindings", "clusterroles"):
            real.admin.delete(f"/apis/{RBAC}/{kind}/{role}")
