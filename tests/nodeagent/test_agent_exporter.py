"""The whole agent on fake host trees: QoS writes, the exporter scraped over HTTP, the stream."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from central.agents import NodeReportStore, ReceiverServer
from nodeagent.agent import Agent
from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.config import load_config
from nodeagent.exporter import MetricsServer
from nodeagent.pods import PodInfo, StaticPodSource
from nodeagent.report import sections
from tests.nodeagent.fakes import FakeDevice, FakeNvml, fake_pod_cgroup, fake_proc, fake_sys, write

ONLINE = PodInfo("shop", "web-0", "11111111-1111-1111-1111-111111111111", "Burstable", "LC", 1000)
OFFLINE = PodInfo("batch", "train-0", "22222222-2222-2222-2222-222222222222", "BestEffort", "BE", 0)


def build_agent(tmp_path: Path, **overrides: object) -> Agent:
    cg = tmp_path / "cg"
    write(cg, "cgroup.controllers", "cpu memory\n")
    layout = CgroupLayout(cg, 2, "systemd")
    fake_pod_cgroup(layout, layout.qos_dir("BestEffort"), 0, 0, 0)
    for pod in (ONLINE, OFFLINE):
        fake_pod_cgroup(layout, layout.pod_dir(pod.uid, pod.qos_class), 10**9, 300 << 20, 0)
    cfg = load_config(None, {
        "node.name": "node-1", "paths.sys_root": str(fake_sys(tmp_path / "sys")),
        "paths.proc_root": str(fake_proc(tmp_path / "proc")), "paths.cgroup_root": str(cg),
        "collect.period_s": 0.05, "collect.window_s": 1.0, "exporter.address": "127.0.0.1", "exporter.port": 0,
        **overrides,
    })
    write(tmp_path / "proc", "4242/cgroup", f"0::/kubepods.slice/kubepods-burstable.slice/"
          f"kubepods-burstable-pod{ONLINE.uid.replace('-', '_')}.slice/cri-containerd-1.scope\n")
    nvml = FakeNvml([FakeDevice("GPU-0", "00000000:3B:00.0", util=50, processes=((4242, 3 << 30), (999, 1))),
                     FakeDevice("GPU-1", "0:86:00.0", mig=True)])
    return Agent(cfg, pod_source=StaticPodSource([ONLINE, OFFLINE]), nvml=nvml)


def scrape(port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_tick_suppresses_offline_parent_only(tmp_path: Path) -> None:
    agent = build_agent(tmp_path)
    agent.tick()
    snap = agent.tick()
    offline_parent = tmp_path / "cg/kubepods.slice/kubepods-besteffort.slice/cpu.max"
    online_pod = tmp_path / "cg" / agent.layout.pod_dir(ONLINE.uid, "Burstable") / "cpu.max"
    assert snap.qos.offline_cpu_quota_cores > 0 and offline_parent.read_text().endswith(" 100000")
    assert online_pod.read_text() == "max 100000\n"
    assert {u.pod.name for u in snap.pods} == {"web-0", "train-0"}


def test_scrape_metrics_over_http(tmp_path: Path) -> None:
    agent = build_agent(tmp_path)
    server = MetricsServer(agent, "127.0.0.1", 0, max_pod_series=1)
    port = server.start()
    try:
        assert scrape(port, "/readyz")[0] == 503
        agent.tick()
        agent.tick()
        status, text = scrape(port)
        assert status == 200 and scrape(port, "/readyz")[0] == 200 and scrape(port, "/healthz")[0] == 200
        families = {f.name: f for f in text_string_to_metric_families(text)}
        assert all(name.startswith(("nodeagent_", "process_")) for name in families)
        assert "process_resident_memory_bytes" in families
        for name in ("nodeagent_node_cpu_usage_cores", "nodeagent_node_memory_working_set_bytes",
                     "nodeagent_numa_memory_capacity_bytes", "nodeagent_numa_cpu_usage_cores",
                     "nodeagent_gpu_memory_used_bytes",
                     "nodeagent_pod_cpu_usage_cores", "nodeagent_be_cpu_quota_cores", "nodeagent_cgroup_writes",
                     "nodeagent_collector_errors", "nodeagent_evictions", "nodeagent_build_info"):
            assert name in families, name
        numa = families["nodeagent_numa_memory_capacity_bytes"].samples
        assert sorted(s.labels["numa"] for s in numa) == ["0", "1"] and numa[0].labels["node"] == "node-1"
        util = families["nodeagent_gpu_utilization_ratio"].samples
        assert [(s.labels["gpu"], s.value) for s in util] == [("0", 0.5)]  # MIG GPU: absent, not 0
        [gpu_pod] = families["nodeagent_gpu_pod_memory_used_bytes"].samples
        assert (gpu_pod.labels["pod"], gpu_pod.labels["gpu"], gpu_pod.value) == ("web-0", "0", 3 << 30)
        pods = families["nodeagent_pod_cpu_usage_cores"].samples
        assert len(pods) == 1 and set(pods[0].labels) == {"node", "namespace", "pod", "qos_level"}  # capped
        writes = {(s.labels["file"], s.labels["result"]): s.value
                  for s in families["nodeagent_cgroup_writes"].samples if s.name.endswith("_total")}
        assert writes[("cpu.max", "ok")] >= 1
    finally:
        server.stop()


def test_run_streams_to_the_receiver_and_stops(tmp_path: Path) -> None:
    store = NodeReportStore()
    receiver = ReceiverServer(store, "127.0.0.1:0", tls=None)
    port = receiver.start()
    agent = build_agent(tmp_path, **{"stream.server": f"127.0.0.1:{port}", "stream.insecure": True})
    stop = threading.Event()
    thread = threading.Thread(target=agent.run, args=(stop,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while (report := store.latest("node-1")) is None or not report.pods.pods:
            assert time.monotonic() < deadline, "no report with pods arrived"
            time.sleep(0.05)
        assert report.gpus.status == "ok" and len(report.gpus.gpus) == 2
        assert not report.gpus.gpus[1].HasField("utilization_ratio")
        assert report.topology.threads == 7 and report.qos.offline_cpu_quota_cores > 0
        assert [n.id for n in report.resources.numa] == [0, 1]
    finally:
        stop.set()
        thread.join(timeout=10)
        receiver.stop()
    assert not thread.is_alive()
    # A stopped agent leaves the offline pods unthrottled.
    offline_parent = tmp_path / "cg/kubepods.slice/kubepods-besteffort.slice/cpu.max"
    assert offline_parent.read_text() == "max 100000"


@pytest.mark.parametrize("source_error", [OSError("connection refused"), ValueError("bad JSON")])
def test_failing_pod_source_keeps_the_last_list(tmp_path: Path, source_error: Exception) -> None:
    agent = build_agent(tmp_path)
    agent.tick()

    class Broken:
        def pods(self) -> list[PodInfo]:
            raise source_error

    agent.pod_source = Broken()
    snap = agent.tick()
    assert len(snap.pods) == 2 and agent.health.errors[("pods", "source_failed")] == 1


class Offers:
    """Stands in for the ReportStream: records what the agent offers."""

    def __init__(self) -> None:
        from nodeagent.stream import StreamStats

        self.sections: list[dict] = []
        self.stats = StreamStats()

    def offer(self, sections: dict) -> None:
        self.sections.append(sections)


def test_unknown_is_reported_as_unknown_and_never_primed_with_zero(tmp_path: Path) -> None:
    agent = build_agent(tmp_path)
    agent.stream = offers = Offers()
    agent.tick()
    assert offers.sections == []  # one sample: CPU unknown, nothing reaches the scheduler
    assert agent.readiness() == (False, "starting: no usage sample yet")
    agent.tick()
    [first] = offers.sections
    assert first["resources"].HasField("cpu_usage_cores") and first["resources"].HasField("batch_cpu_millicores")
    assert agent.readiness()[0]
    (tmp_path / "proc").rename(tmp_path / "proc-gone")  # /proc unreadable from now on
    snap = agent.tick()
    assert snap.usage.cpu_cores is None and snap.batch_cpu_millicores is None
    assert len(offers.sections) == 1  # an unknown sample is not offered either
    ready, why = agent.readiness()
    assert not ready and "node_usage" in why


def test_failing_pod_source_fails_readiness(tmp_path: Path) -> None:
    agent = build_agent(tmp_path)
    agent.tick()
    agent.tick()

    class Broken:
        def pods(self) -> list[PodInfo]:
            raise OSError("connection refused")

    agent.pod_source = Broken()
    agent.tick()
    assert agent.readiness() == (False, "failing: pods (source_failed)")


def test_batch_qos_and_psi_metrics(tmp_path: Path) -> None:
    write(tmp_path / "proc", "pressure/cpu", "some avg10=12.50 avg60=3.00 avg300=1.00 total=5\n"
          "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
    agent = build_agent(tmp_path)
    write(agent.layout.path("cpu", agent.layout.pod_dir(OFFLINE.uid, OFFLINE.qos_class)), "cpu.pressure",
          "some avg10=40.00 avg60=10.00 avg300=1.00 total=5\nfull avg10=20.00 avg60=5.00 avg300=0.00 total=1\n")
    server = MetricsServer(agent, "127.0.0.1", 0, max_pod_series=10)
    port = server.start()
    try:
        agent.tick()
        agent.tick()
        families = {f.name: f for f in text_string_to_metric_families(scrape(port)[1])}
        [pod_psi] = families["nodeagent_pod_pressure_ratio"].samples
        assert (pod_psi.labels["pod"], pod_psi.labels["resource"], pod_psi.value) == ("train-0", "cpu", 0.4)
        report_pods = {p.name: p for p in sections(agent.snapshot)["pods"].pods}
        assert report_pods["train-0"].cpu_pressure.full_avg10 == 0.2
        assert not report_pods["web-0"].HasField("cpu_pressure")  # unknown, not 0
        assert report_pods["train-0"].kube_qos_class == "BestEffort"
        [batch_cpu] = families["nodeagent_batch_cpu_cores"].samples
        [batch_mem] = families["nodeagent_batch_memory_bytes"].samples
        assert batch_cpu.value == agent.snapshot.batch_cpu_millicores / 1000 and batch_mem.value > 0
        levels = {s.labels["pod"]: (s.labels["qos_level"], s.labels["kube_qos_class"])
                  for s in families["nodeagent_pod_qos_info"].samples}
        assert levels == {"web-0": ("LC", "Burstable"), "train-0": ("BE", "BestEffort")}
        psi = {(s.labels["resource"], s.labels["kind"]): s.value
               for s in families["nodeagent_node_pressure_ratio"].samples}
        assert psi == {("cpu", "some"): 0.125, ("cpu", "full"): 0.0}
    finally:
        server.stop()


def test_unreadable_cgroup_tree_fails_readiness(tmp_path: Path) -> None:
    agent = build_agent(tmp_path)
    agent.tick()
    agent.tick()
    assert agent.readiness()[0]
    (tmp_path / "cg").rename(tmp_path / "cg-gone")
    snap = agent.tick()
    assert all(u.cpu_cores is None and u.memory_bytes is None for u in snap.pods)  # unknown, not 0
    assert agent.readiness() == (False, "failing: pod_usage (no_pod_cgroup_readable)")


def test_the_exporter_is_bounded_and_on_loopback_by_default(tmp_path: Path) -> None:
    from nodeagent.httpserve import BoundedHTTPServer

    assert load_config().exporter.address == "127.0.0.1"
    server = MetricsServer(build_agent(tmp_path), "127.0.0.1", 0, max_pod_series=1)
    try:
        assert isinstance(server.httpd, BoundedHTTPServer)
    finally:
        server.httpd.server_close()
