"""Where the kubelet puts pod cgroups, for cgroup v1 and v2 and both kubelet cgroup drivers.

    cgroupfs: kubepods/burstable/pod<uid>                              (Guaranteed: kubepods/pod<uid>)
    systemd:  kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
On v1 each controller has its own tree (root/cpu/..., root/memory/...); on v2 there is one.
Version and driver are detected from the tree (cgroup.controllers; kubepods.slice) unless
configured, because guessing the driver wrong silently finds no pods (Volcano #4912).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Driver = Literal["systemd", "cgroupfs"]
QOS_CLASSES = ("Guaranteed", "Burstable", "BestEffort")


@dataclass(frozen=True)
class CgroupLayout:
    root: Path
    version: int
    driver: Driver

    def qos_dir(self, qos_class: str) -> str:
        """The kubelet's QoS-class cgroup, relative to a controller root."""
        if qos_class == "Guaranteed":
            return "kubepods.slice" if self.driver == "systemd" else "kubepods"
        tier = qos_class.lower()
        if self.driver == "systemd":
            return f"kubepods.slice/kubepods-{tier}.slice"
        return f"kubepods/{tier}"

    def pod_dir(self, uid: str, qos_class: str) -> str:
        parent = self.qos_dir(qos_class)
        if self.driver == "systemd":
            prefix = "kubepods" if qos_class == "Guaranteed" else f"kubepods-{qos_class.lower()}"
            return f"{parent}/{prefix}-pod{uid.replace('-', '_')}.slice"
        return f"{parent}/pod{uid}"

    def path(self, controller: str, rel: str) -> Path:
        """Absolute directory of `rel` for `controller` (v2 has one unified tree)."""
        return self.root / rel if self.version == 2 else self.root / controller / rel


def detect_layout(root: Path, version: int | None = None, driver: Driver | None = None) -> CgroupLayout:
    if version is None:
        version = 2 if (root / "cgroup.controllers").exists() else 1
    if driver is None:
        base = root if version == 2 else root / "cpu"
        driver = "systemd" if (base / "kubepods.slice").exists() else "cgroupfs"
    return CgroupLayout(root, version, driver)
