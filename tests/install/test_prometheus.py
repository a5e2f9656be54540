"""A real Prometheus (Debian's `prometheus` package) scrapes a running scheduler, controllers,
admission webhook and node agent; promtool checks the alert rules; every dashboard query and every alert rule is
evaluated through Prometheus' HTTP API and must return data (rules: evaluate without error,
and every metric they name has series). Skips where prometheus/promtool are not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.builders import job, node, pod, task
from tests.kube.certs import self_signed
from tests.ports import free_port
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]
MONITORING = ROOT / "daemonset" / "monitoring"

pytestmark = pytest.mark.skipif(not (shutil.which("prometheus") and shutil.which("promtool")),
                                reason="prometheus/promtool not installed (apt-get install prometheus)")


def rule_file(tmp_path: Path) -> Path:
    """spec.groups of the PrometheusRule: the plain rule file a Prometheus without the operator loads."""
    rules = yaml.safe_load((MONITORING / "rules.yaml").read_text())
    path = tmp_path / "caldera.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": rules["spec"]["groups"]}))
    return path


def dashboard_queries() -> list[str]:
    """Every panel's query as Grafana sends it with the variables at All."""
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    every = {f"${v['name']}": v["allValue"] for v in dashboard["templating"]["list"] if v.get("includeAll")}
    queries = []
    for target in (t for panel in dashboard["panels"] for t in panel.get("targets", [])):
        expr = target["expr"].replace("$__rate_interval", "30s")
        for name, value in every.items():
            expr = expr.replace(name, value)
        queries.append(expr)
    return queries


def test_promtool_accepts_the_rules(tmp_path):
    result = subprocess.run(["promtool", "check", "rules", str(rule_file(tmp_path))], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def host_memory() -> str:
    """The Node's memory: at least this machine's, whose NUMA cells the agent reports (a report
    of more memory than the Node has is refused, as a lying node's would be)."""
    kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
               if line.startswith("MemTotal:"))
    return f"{max(16, -(-kib // 2**20) + 1)}Gi"


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "caldera", *args], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


@pytest.fixture
def caldera(real, tmp_path) -> Iterator[dict[str, Any]]:
    """Scheduler (with the agents' endpoint), controllers, the webhook and one agent, on a real
    kube-apiserver."""
    kubeconfig = real.kubeconfig
    real.put(node("n1", memory=host_memory(), pods=10))
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "research"},
              "spec": {"weight": 1, "deserved": {"cpu": "2", "memory": "1Gi"}}})
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
              "metadata": {"name": "pg1"}, "spec": {"minMember": 1, "queue": "research"}})
    workload = pod("p0", group="pg1")
    workload["spec"]["containers"][0]["resources"]["requests"]["memory"] = "512Mi"
    real.put(workload)
    ports = {name: free_port() for name in ("scheduler", "controllers", "agent", "stream", "webhook", "admission")}
    cert, key = self_signed(tmp_path)
    agent_config = tmp_path / "agent.yaml"
    agent_config.write_text(yaml.safe_dump({
        "node": {"name": "n1"}, "pods": {"source": "none"}, "qos": {"enabled": False},
        "collect": {"period_s": 0.5, "window_s": 5.0},
        "stream": {"server": f"127.0.0.1:{ports['stream']}", "insecure": True, "heartbeat_s": 1.0},
        "exporter": {"address": "127.0.0.1", "port": ports["agent"]}}))
    procs = [
        _spawn(["scheduler", "--kubeconfig", kubeconfig, "--no-leader-elect", "--schedule-period", "0.2",
                "--listen-address", "127.0.0.1", "--listen-port", str(ports["scheduler"]),
                "--agent-address", f"127.0.0.1:{ports['stream']}", "--agent-insecure", "--agent-auth", "none"],
               tmp_path / "scheduler.log"),
        _spawn(["controllers", "--kubeconfig", kubeconfig, "--no-leader-elect", "--listen-address", "127.0.0.1",
                "--listen-port", str(ports["controllers"])], tmp_path / "controllers.log"),
        _spawn(["agent", "--config", str(agent_config)], tmp_path / "agent.log"),
        _spawn(["webhook", "--kubeconfig", kubeconfig, "--bind-address", "127.0.0.1", "--port", str(ports["admission"]),
                "--health-port", str(ports["webhook"]), "--tls-cert-file", cert, "--tls-key-file", key],
               tmp_path / "webhook.log"),
    ]
    ports["ca"] = cert
    try:
        yield ports
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture
def prometheus(caldera, tmp_path) -> Iterator[str]:
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rule_file(tmp_path))],
        "scrape_configs": [{"job_name": name, "static_configs": [{"targets": [f"127.0.0.1:{caldera[name]}"]}]}
                           for name in ("scheduler", "controllers", "agent", "webhook")]}))
    proc = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=(tmp_path / "prometheus.log").open("w"), stderr=subprocess.STDOUT)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(20)


def api_get(base: str, path: str, **query: str) -> Any:
    url = f"{base}{path}?{urllib.parse.urlencode(query)}" if query else f"{base}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            body = json.loads(answer.read())
    except OSError:
        return None
    return body["data"] if body.get("status") == "success" else None


def has_data(base: str, expr: str) -> bool:
    data = api_get(base, "/api/v1/query", query=expr)
    return bool(data and data["result"])


def admit(caldera: dict[str, Any], route: str, obj: dict[str, Any]) -> bool:
    """One AdmissionReview to the webhook, as the API server sends it; whether it was allowed."""
    body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u", "operation": "CREATE", "object": obj}}
    request = urllib.request.Request(f"https://localhost:{caldera['admission']}{route}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=caldera["ca"]), timeout=10) as answer:
        return json.loads(answer.read())["response"]["allowed"]


def test_every_dashboard_query_and_rule_returns_data(caldera, prometheus, tmp_path):
    eventually(lambda: has_data(prometheus, 'count(up == 1) == 4'), timeout=60, what="all four targets up")
    eventually(lambda: has_data(prometheus, "caldera_webhook_ready == 1"), timeout=60, what="the webhook ready")
    assert admit(caldera, "/jobs/validate", job("ok", "default", tasks=[task("worker")]))
    assert not admit(caldera, "/jobs/validate", job("bad", "default", tasks=[task("worker", replicas=-1)]))
    assert admit(caldera, "/queues/mutate", {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                                             "metadata": {"name": "q"}, "spec": {}})
    # the webhook's own series, by resource, as the dashboard and the alerts read them
    for expr in ('caldera_webhook_requests_total{resource="jobs",verb="validate",allowed="false"} == 1',
                 'caldera_webhook_requests_total{resource="queues",verb="mutate",allowed="true"} == 1',
                 'caldera_webhook_denials_total{resource="jobs",code="400"} == 1',
                 'caldera_webhook_request_duration_seconds_count{resource="jobs"} == 2',
                 "max(caldera_controllers_leader) == 1"):
        eventually(lambda: has_data(prometheus, expr), timeout=30, what=expr)
    missing: list[str] = []
    deadline = time.monotonic() + 90  # rates need two scrapes; the agent's stream its first ack
    for expr in dashboard_queries():
        while not has_data(prometheus, expr) and time.monotonic() < deadline:
            time.sleep(0.5)
        if not has_data(prometheus, expr):
            missing.append(expr)
    assert not missing, f"dashboard queries without data: {missing}"

    def evaluated() -> list[dict[str, Any]] | None:
        groups = (api_get(prometheus, "/api/v1/rules") or {}).get("groups") or []
        rules = [r for g in groups for r in g["rules"]]
        return rules if rules and all(r.get("lastEvaluation", "").startswith("20") for r in rules) else None

    rules = eventually(evaluated, timeout=30, what="every rule evaluated")
    assert {r["health"] for r in rules} == {"ok"}, [(r["name"], r.get("lastError")) for r in rules]
    names = {m for r in rules for m in re.findall(r"\b((?:volcano|caldera|nodeagent)_[a-z0-9_]+)", r["query"])}
    assert names and not [n for n in sorted(names) if not has_data(prometheus, f"count({n})")]
    # a healthy install fires nothing that says the scheduler is not leading or failing
    firing = {r["name"] for r in rules if r.get("state") == "firing"}
    assert not firing & {"CalderaSchedulerNotLeading", "CalderaSchedulingCyclesFailing", "CalderaAgentsStale",
                         "CalderaControllersNotLeading", "CalderaWebhookDown", "CalderaWebhookErrors"}
