"""A lying agent on the real control plane: with node-1's own identity token, reports that no
node can have reach the scheduler's receiver. node-1 is faulted (a Warning Event, the fault
metric, no pod placed there), every other node keeps scheduling, and node-1 comes back once
its real agent reports again."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator

import grpc
import pytest

from central.localcluster.up import Cluster
from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc
from tests.e2e.conftest import Tenant, volcano_job, wait_for

pytestmark = pytest.mark.e2e

AGENT = "caldera-nodeagent-node-1"
FAULT_METRIC = 'caldera_scheduling_faults_total{kind="Node",source="agent-report"}'


def send_as_node_1(cluster: Cluster, report: pb.NodeReport) -> pb.Ack:
    """One report over node-1's agent stream, authenticated as its agent is."""
    identity = cluster.dir / "pods" / AGENT / "scheduler-identity"
    credentials = grpc.ssl_channel_credentials(root_certificates=(identity / "ca.crt").read_bytes())
    address = f"127.0.0.1:{cluster.ports['caldera-scheduler:--agent-address']}"
    options = [("grpc.ssl_target_name_override", "caldera-scheduler.caldera-system.svc")]
    with grpc.secure_channel(address, credentials, options=options) as channel:
        metadata = [("authorization", "Bearer " + (identity / "token").read_text().strip())]
        [ack] = list(pb_grpc.NodeReportServiceStub(channel).Report(iter([report]), metadata=metadata, timeout=10))
    return ack


def fault_count(cluster: Cluster) -> float:
    port = cluster.ports["caldera-scheduler:--listen-port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        for line in response.read().decode().splitlines():
            if line.startswith(FAULT_METRIC):
                return float(line.split()[-1])
    return 0.0


@pytest.fixture
def node_1_silenced(tenant: Tenant) -> Iterator[Cluster]:
    """node-1's real agent stopped for the test, started again after it."""
    cluster = tenant.cluster
    assert cluster.runner is not None
    cluster.sup.stop(AGENT)
    try:
        yield cluster
    finally:
        spec = next(n for n in cluster.nodes if n.name == "node-1")
        agent = cluster.runner.start_agent(spec)
        cluster.sup.wait_ready(agent, lambda: exporter_ready(cluster.ports[f"{AGENT}:exporter"]), 60)


def exporter_ready(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def node_1_events(tenant: Tenant) -> list[dict]:
    return tenant.kube.get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=node-1,"
                           "reason=InvalidSchedulingData")["items"]


def test_a_report_from_year_292_million_faults_its_node_alone(tenant: Tenant, node_1_silenced: Cluster) -> None:
    cluster = node_1_silenced
    before = fault_count(cluster)
    lying = pb.NodeReport(node_name="node-1", agent_epoch="thief", sequence=1, full=True, timestamp_unix_ms=2**63 - 1)
    lying.resources.batch_cpu_millicores = 10**9  # more than any node: it must not be published
    assert send_as_node_1(cluster, lying).accepted  # the stream takes it; the scheduler refuses its content
    wait_for(lambda: any("timestamp_unix_ms" in e["message"] for e in node_1_events(tenant)),
             "a Warning Event on node-1 naming the field")
    assert fault_count(cluster) > before
    tenant.submit(volcano_job("spread", tenant.queue, replicas=4, cpu="3"))
    bound = wait_for(lambda: len(pods := [p for p in tenant.pods() if p["spec"].get("nodeName")]) == 4 and pods,
                     "all four pods bound on the other nodes", timeout=90)
    assert "node-1" not in {p["spec"]["nodeName"] for p in bound}
    allocatable = tenant.kube.get("/api/v1/nodes/node-1")["status"]["allocatable"]
    assert allocatable.get("kubernetes.io/batch-cpu") != str(10**9)


def test_a_report_claiming_more_than_its_node_is_refused(tenant: Tenant, node_1_silenced: Cluster) -> None:
    cluster = node_1_silenced
    lying = pb.NodeReport(node_name="node-1", agent_epoch="thief", sequence=2, full=True,
                          timestamp_unix_ms=int(time.time() * 1000))
    lying.topology.numa_nodes.add(id=0, cpus=range(4096))  # node-1 has 16
    lying.gpus.gpus.add(index=0, memory_total_bytes=80 << 30, healthy=True)  # and no GPU
    assert send_as_node_1(cluster, lying).accepted
    wait_for(lambda: any("more CPUs than the Node's capacity (16)" in e["message"] for e in node_1_events(tenant)),
             "a Warning Event on node-1 naming the CPUs")
