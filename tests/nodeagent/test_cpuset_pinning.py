"""The agent pins a pod to the CPUs the scheduler chose: on a fake tree, and on real cgroup v1."""

import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from nodeagent.cgroup.driver import CgroupWriter
from nodeagent.cgroup.layout import CgroupLayout
from nodeagent.collect.kubelet import KubeletCpuState
from nodeagent.health import Health
from nodeagent.pods import PodInfo, pods_from_pod_list
from nodeagent.qos.cpuset import CpusetPinner

REAL_CPUSET = Path("/sys/fs/cgroup/cpuset")


def fake_tree(root: Path, uid: str) -> Path:
    pod = root / "cpuset" / "kubepods" / f"pod{uid}"
    for d in (pod, pod / "ctr-a", pod / "ctr-b"):
        d.mkdir(parents=True)
        (d / "cpuset.cpus").write_text("0-7")
    return pod


def test_annotation_reaches_the_pod_info():
    doc = {"items": [{"metadata": {"uid": "u1", "name": "p", "annotations": {"caldera.sh/cpuset": "2-3"}},
                      "status": {"phase": "Running", "qosClass": "Guaranteed"}, "spec": {}}]}
    assert pods_from_pod_list(doc, "LS")[0].cpuset == "2-3"


def test_pins_pod_and_containers_once(tmp_path):
    pod_dir = fake_tree(tmp_path, "u1")
    writer = CgroupWriter(Health())
    pinner = CpusetPinner(CgroupLayout(tmp_path, 1, "cgroupfs"), writer)
    pods = [PodInfo("ns", "p", "u1", qos_class="Guaranteed", qos_level="LC", cpuset="2-3")]
    assert pinner.run(pods, KubeletCpuState("none", "none"), list(range(8))) == 1
    assert {(d.name, (d / "cpuset.cpus").read_text()) for d in (pod_dir, pod_dir / "ctr-a", pod_dir / "ctr-b")} == {
        ("podu1", "2-3"), ("ctr-a", "2-3"), ("ctr-b", "2-3")}
    assert pinner.run(pods, KubeletCpuState("none", "none"), list(range(8))) == 0  # already done
    assert writer.results[("cpuset.cpus", "ok")] == 3


@pytest.mark.parametrize("kubelet, cpuset, online, pinned", [
    pytest.param(KubeletCpuState("static", "single-numa-node"), "2-3", range(8), 0, id="kubelet-pins-itself"),
    pytest.param(KubeletCpuState("none", "none"), "9-10", range(8), 0, id="offline-cpus-refused"),
    pytest.param(KubeletCpuState("none", "none"), "3-1", range(8), 0, id="garbage-refused"),
    pytest.param(KubeletCpuState("none", "none"), "0-99999999", range(8), 0, id="unbounded-range-refused-unexpanded"),
    pytest.param(KubeletCpuState("none", "none"), "0,²", range(8), 0, id="non-ascii-digit-refused"),
])
def test_what_is_not_written(tmp_path, kubelet, cpuset, online, pinned):
    pod_dir = fake_tree(tmp_path, "u1")
    writer = CgroupWriter(Health())
    pinner = CpusetPinner(CgroupLayout(tmp_path, 1, "cgroupfs"), writer)
    pods = [PodInfo("ns", "p", "u1", qos_class="Guaranteed", cpuset=cpuset)]
    assert pinner.run(pods, kubelet, list(online)) == pinned
    assert (pod_dir / "cpuset.cpus").read_text() == "0-7"


@pytest.mark.realcgroup
def test_real_cgroup_v1_cpuset_pins_a_running_process(tmp_path):
    if not (REAL_CPUSET / "cpuset.cpus").exists() or not os.access(REAL_CPUSET, os.W_OK):
        pytest.skip("needs a writable cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset")
    cpus = (REAL_CPUSET / "cpuset.cpus").read_text().strip()
    mems = (REAL_CPUSET / "cpuset.mems").read_text().strip()
    online = [int(c) for c in _expand(cpus)]
    if len(online) < 2:
        pytest.skip("needs at least two CPUs to pin to a subset")
    group = REAL_CPUSET / f"caldera-test-{uuid.uuid4().hex[:8]}"
    uid = uuid.uuid4().hex[:8]
    dirs = [group, group / "kubepods", group / "kubepods" / f"pod{uid}", group / "kubepods" / f"pod{uid}" / "ctr"]
    proc = None
    try:
        for d in dirs:
            d.mkdir()
            (d / "cpuset.cpus").write_text(cpus)
            (d / "cpuset.mems").write_text(mems)
        proc = subprocess.Popen(["sleep", "30"])
        (dirs[-1] / "tasks").write_text(str(proc.pid))
        (tmp_path / "cpuset").symlink_to(group)  # the layout's root/cpuset is our private subtree
        pinner = CpusetPinner(CgroupLayout(tmp_path, 1, "cgroupfs"), CgroupWriter(Health()))
        target = str(online[-1])
        pods = [PodInfo("ns", "p", uid, qos_class="Guaranteed", qos_level="LC", cpuset=target)]
        assert pinner.run(pods, KubeletCpuState("none", "none"), online) == 1
        status = Path(f"/proc/{proc.pid}/status").read_text()
        allowed = next(line.split(":")[1].strip() for line in status.splitlines() if line.startswith("Cpus_allowed_list"))
        assert allowed == target  # the kernel now runs the pod's process on that CPU only
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
            time.sleep(0.05)
        for d in reversed(dirs):
            if d.exists():
                d.rmdir()


def _expand(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def test_cpu_lists_are_bounded_before_they_are_expanded():
    import tracemalloc

    from nodeagent.host.paths import parse_cpu_list
    assert parse_cpu_list("0-3,8", limit=9) == [0, 1, 2, 3, 8]
    tracemalloc.start()
    with pytest.raises(ValueError, match="CPUs 0-7"):
        parse_cpu_list("0-99999999", limit=8)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 1_000_000  # expanded, the range would take some 800 MB
