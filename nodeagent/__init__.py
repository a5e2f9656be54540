"""Caldera's node agent (a DaemonSet): measure the node, protect online pods, report upstream.

host/      where the host's trees are mounted, tolerant readers, the PSI format
collect/   collectors reading configurable host roots (sysfs, procfs, cgroups, kubelet, NVML)
cgroup/    where pod cgroups live (v1/v2, systemd/cgroupfs) and a guarded, counted writer
qos/       co-location strategies: CPU suppression, memory protection, watermark eviction
report.py  collector output -> NodeReport sections; stream.py sends them to the scheduler
exporter.py Prometheus /metrics; agent.py the loop; cli.py `caldera agent`; api/ the contract
bench/     benchmarks of the agent's internals (`python -m nodeagent.bench.<name>`)
"""
