"""--native-podgroups on an API server that does not serve Kubernetes' gang API (the bare
control plane of these tests runs without the GenericWorkload feature gate): one warning
line, and scheduling goes on with Volcano's PodGroups."""

from __future__ import annotations

import logging
import threading

from central.framework.conf import DEFAULT_CONF_YAML
from central.model.cache import ClusterCache
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from central.scheduler.loop import ConfigFile, Scheduler
from tests.builders import node, pod, podgroup
from tests.waiting import eventually


def test_an_api_server_without_the_gang_api_gets_one_line_and_volcano_gangs_still_bind(real, caplog):
    real.put(node("n1", pods=10))
    real.put(podgroup("pair", "default", min_member=2))
    for i in range(2):
        real.put(pod(f"pair-{i}", group="pair", cpu="1"))
    conf = ConfigFile(None, load_config, load_config(DEFAULT_CONF_YAML, "default"))
    scheduler = Scheduler(real.kube, ClusterCache(), run_cycle, conf, period=0.05, native_podgroups=True)
    stop = threading.Event()
    thread = threading.Thread(target=scheduler.run, args=(stop,), daemon=True)
    with caplog.at_level(logging.INFO):
        thread.start()
        try:
            eventually(lambda: all(real.pod(f"pair-{i}")["spec"].get("nodeName") for i in range(2)),
                       what="the Volcano gang bound")
        finally:
            stop.set()
            thread.join(10)
    warnings = [r.getMessage() for r in caplog.records
                if r.levelno == logging.WARNING and "--native-podgroups" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true" in warnings[0]
    assert not scheduler.reflectors["NativePodGroup"].served
