"""Reading the host: where its /sys, /proc, cgroup and kubelet trees are mounted, tolerant file
readers, and the pressure (PSI) file format.

Below both the cgroup drivers and the collectors, which read the host through it, so neither
package needs the other to reach a file.
"""
