"""Scheduler metrics: Volcano's names, served over HTTP, bounded queue series."""

from __future__ import annotations

import threading
import urllib.request

from central.framework.conf import DEFAULT_CONF_YAML
from central.kube.client import VOLCANO_SCHEDULING, path
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from central.scheduler.metrics import SchedulerMetrics, serve
from tests.builders import node, pod
from tests.waiting import eventually


def scrape(port: int, what: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{what}") as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, ""


def sample(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_cycle_metrics_under_volcano_names(real):
    kube = real.kube
    real.put(node("n1", pods=10))
    real.put(pod("p0"))
    real.put({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "team"},
              "spec": {"weight": 1, "capability": {"cpu": "4", "memory": "8Gi"}}})
    metrics = SchedulerMetrics()
    scheduler = Scheduler(kube, ClusterCache(), run_cycle,
                          ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default")),
                          period=0.05, metrics=metrics)
    server = serve(metrics.registry, 0, scheduler.synced, host="127.0.0.1")
    port = server.server_address[1]
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    try:
        assert scrape(port, "/readyz")[0] == 503  # not synced yet
        thread.start()
        eventually(lambda: real.pod("p0")["spec"].get("nodeName"), what="the bind")
        eventually(lambda: scheduler.cycles >= 3, what="cycles")
        assert scrape(port, "/readyz")[0] == 200 and scrape(port, "/healthz")[0] == 200
        _, text = scrape(port)
        assert sample(text, "volcano_e2e_scheduling_latency_milliseconds_count") >= 3
        assert sample(text, 'volcano_schedule_attempts_total{result="scheduled"}') == 1
        assert sample(text, 'volcano_action_scheduling_latency_milliseconds_count{action="allocate"}') >= 3
        assert sample(text, "volcano_open_session_duration_milliseconds_count") >= 3
        assert sample(text, 'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionOpen",plugin="gang"}') >= 3
        assert sample(text, 'volcano_plugin_scheduling_latency_milliseconds_count{OnSession="OnSessionClose",plugin="gang"}') >= 3
        assert sample(text, 'volcano_queue_capacity_milli_cpu{queue_name="team"}') == 4000
        assert sample(text, 'volcano_queue_allocated_milli_cpu{queue_name="default"}') == 1000
        # proportion's share (the default queue asks for 1 CPU of 4), not the Queue's empty spec.deserved
        assert sample(text, 'volcano_queue_deserved_milli_cpu{queue_name="default"}') == 1000
        # a deleted queue's series go away
        kube.delete(path(VOLCANO_SCHEDULING, "queues", None, "team"))
        eventually(lambda: 'queue_name="team"' not in scrape(port)[1], what="the team series removed")
    finally:
        stop.set()
        thread.join(10)
        server.shutdown()


def test_queue_podgroup_counts_are_read_at_scrape_time():
    from prometheus_client import CollectorRegistry, generate_latest

    from central.scheduler.metrics import QueuePodGroupCounts

    queues = {"team": {"metadata": {"name": "team"}, "status": {"state": "Open", "running": 2, "inqueue": 1}}}
    registry = CollectorRegistry()
    registry.register(QueuePodGroupCounts(queues))
    text = generate_latest(registry).decode()
    assert sample(text, 'volcano_queue_pod_group_running_count{queue_name="team"}') == 2
    del queues["team"]  # a deleted queue has no series left
    assert "team" not in generate_latest(registry).decode()


def test_the_health_and_metrics_port_drops_idle_clients_and_caps_connections():
    from prometheus_client import CollectorRegistry

    from central.scheduler.metrics import BoundedHTTPServer
    from tests.bounded_http import connections_over_the_cap_are_refused, idle_client_is_dropped

    server = serve(CollectorRegistry(), 0, lambda: True, host="127.0.0.1", max_connections=2, io_timeout_s=0.5)
    assert isinstance(server, BoundedHTTPServer)
    try:
        idle_client_is_dropped(server.server_port, 0.5)
        connections_over_the_cap_are_refused(server.server_port, 2, "/healthz")
    finally:
        server.shutdown()
        server.server_close()
