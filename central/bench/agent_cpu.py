"""Node agent and receiver costs: prints the figures, asserts nothing.

1. Agent: runs `python -m nodeagent` on this machine's real /sys, /proc and cgroups at the
   default 1 s period, streaming to a local receiver and scraped every 10 s, and reports its
   start-up time (to /readyz), CPU (% of one core) and RSS after a warm-up.
2. Receiver: runs the central receiver in its own process, drives it with concurrent agent
   streams from this process, and reports the receiver's CPU per 1,000 reports/s, for small
   delta reports and for full reports with 30 pods.

    python -m central.bench.agent_cpu [--agent-seconds 30] [--reports 20000] [--streams 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import psutil

from nodeagent.api.v1 import agent_pb2 as pb
from nodeagent.api.v1 import agent_pb2_grpc as pb_grpc

# the folder holding the central and nodeagent packages (a checkout, or site-packages)
SOURCE = Path(__file__).resolve().parents[2]

SERVE = """
import sys, time
sys.path.insert(0, {repo!r})
from central.agents import NodeReportStore, ReceiverServer
server = ReceiverServer(NodeReportStore(), "127.0.0.1:0", tls=None, max_reports_per_s=1e9)
print(server.start(), flush=True)
sys.stdin.read()
"""


def start_receiver() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-c", SERVE.format(repo=str(SOURCE))],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None  # a pipe, as asked
    return proc, int(proc.stdout.readline())


def bench_agent(seconds: float) -> None:
    receiver, port = start_receiver()
    metrics_port = 19470
    agent = subprocess.Popen(
        [sys.executable, "-m", "nodeagent", "--stream.server", f"127.0.0.1:{port}", "--stream.insecure", "true",
         "--exporter.address", "127.0.0.1", "--exporter.port", str(metrics_port), "--log-level", "ERROR",
         "--collect.gpu", "true"],
        cwd=SOURCE, env={**os.environ, "PYTHONPATH": str(SOURCE)})
    started = time.monotonic()
    try:
        proc = psutil.Process(agent.pid)
        while True:  # start-up: until /readyz answers 200 (first sample taken)
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/readyz", timeout=1).read()
                break
            except OSError:
                time.sleep(0.02)
        print(f"agent: ready {time.monotonic() - started:.2f} s after start")
        time.sleep(4)  # start-up and imports are not the steady state
        cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
        sent0 = _reports_sent(metrics_port)
        peak_rss = 0
        next_scrape = t0
        while time.monotonic() - t0 < seconds:
            if time.monotonic() >= next_scrape:
                urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5).read()
                next_scrape += 10
            peak_rss = max(peak_rss, proc.memory_info().rss)
            time.sleep(0.5)
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        wall = time.monotonic() - t0
        sent = _reports_sent(metrics_port) - sent0
        print(f"agent: period 1 s, {wall:.0f} s measured: CPU {100 * cpu / wall:.2f} % of one core, "
              f"RSS {proc.memory_info().rss / 2**20:.1f} MiB (peak {peak_rss / 2**20:.1f} MiB), "
              f"{60 * sent / wall:.1f} reports per minute")
    finally:
        agent.terminate()
        agent.wait(timeout=10)
        if receiver.stdin is not None:  # closing it tells the receiver to end
            receiver.stdin.close()
        receiver.wait(timeout=10)


def _reports_sent(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith("nodeagent_reports_sent_total"))


def make_report(node: str, seq: int, full: bool) -> pb.NodeReport:
    report = pb.NodeReport(node_name=node, agent_epoch="bench", sequence=seq, full=full,
                           timestamp_unix_ms=int(time.time() * 1000))
    report.resources.cpu_usage_cores.last = seq % 7
    report.resources.memory_usage_bytes.avg = 1e9 + seq
    if full:
        report.topology.threads = 64
        report.topology.numa_nodes.add(id=0, cpus=list(range(32)), memory_total_bytes=1 << 37)
        report.topology.numa_nodes.add(id=1, cpus=list(range(32, 64)), memory_total_bytes=1 << 37)
        for i in range(30):
            pod = report.pods.pods.add(namespace="batch", name=f"job-{i}", uid=f"uid-{i}", qos_level="BE")
            pod.cpu_usage_cores.avg = i / 10
        report.qos.offline_cpu_quota_cores = 12.5
    return report


def drive(port: int, streams: int, per_stream: int, full: bool) -> int:
    acked = [0] * streams

    def one(i: int) -> None:
        node = f"node-{i}"
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.NodeReportServiceStub(channel)
            first = [make_report(node, 1, True)]
            rest = (make_report(node, s, full) for s in range(2, per_stream + 1))
            for ack in stub.Report(iter(first + list(rest))):
                acked[i] += ack.accepted

    threads = [threading.Thread(target=one, args=(i,)) for i in range(streams)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(acked)


def bench_receiver(total: int, streams: int) -> None:
    for full in (False, True):
        receiver, port = start_receiver()
        try:
            proc = psutil.Process(receiver.pid)
            drive(port, streams, 50, full)  # warm-up: connections, code paths
            cpu0, t0 = sum(proc.cpu_times()[:2]), time.monotonic()
            count = drive(port, streams, total // streams, full)
            cpu, wall = sum(proc.cpu_times()[:2]) - cpu0, time.monotonic() - t0
            size = make_report("node-0", 2, full).ByteSize()
            print(f"receiver: {'full' if full else 'delta'} reports of {size} B, {streams} streams: "
                  f"{count} reports in {wall:.1f} s ({count / wall:.0f}/s), receiver CPU {cpu:.2f} s = "
                  f"{1000 * cpu / count:.3f} s of CPU per 1,000 reports, i.e. "
                  f"{100 * cpu / count * 1000:.1f} % of one core per 1,000 reports/s")
        finally:
            if receiver.stdin is not None:
                receiver.stdin.close()
            receiver.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent-seconds", type=float, default=30)
    parser.add_argument("--reports", type=int, default=20000)
    parser.add_argument("--streams", type=int, default=20)
    args = parser.parse_args()
    print(f"machine: {psutil.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    bench_agent(args.agent_seconds)
    bench_receiver(args.reports, args.streams)


if __name__ == "__main__":
    main()
