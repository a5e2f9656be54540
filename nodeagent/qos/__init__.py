"""Co-location QoS: keep online (LC/HLS/LS) pods fast by squeezing offline (BE) pods.

Strategies only ever write the offline pods' shared parent cgroup; online pods' cgroups are
registered as protected in the writer, which refuses any write under them.
"""
