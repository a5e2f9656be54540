"""One scheduling cycle: open a session, run the configured actions, close, hand over."""

from __future__ import annotations

import time
from datetime import datetime

from central.framework.action import ActionHandle
from central.framework.closing import CycleResult
from central.framework.conf import SchedulerConf
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.model.sink import ClusterSink


def run_cycle(cache: ClusterCache, conf: SchedulerConf, sink: ClusterSink | None = None,
              now: datetime | None = None) -> CycleResult:
    """Open a session, run the actions in order, close it, and hand the decisions to `sink`.

    The session is a transaction: if anything raises before it has closed (bad user data
    does not: it faults its object, see `central.framework.faults`), the cache is rolled
    back to where the session found it and the error goes to the caller; nothing reaches
    the sink. `result.timings` holds seconds per step: "open", each action by name, "close".
    """
    timings: dict[str, float] = {}
    started = time.perf_counter()
    ssn = Session(cache, conf, now)
    timings["open"] = time.perf_counter() - started
    try:
        handle = ActionHandle(ssn)
        for name in conf.actions:
            step = time.perf_counter()
            conf.registry.actions[name](conf.action_settings(name)).execute(handle)
            timings[name] = time.perf_counter() - step
        step = time.perf_counter()
        result = ssn.close()
    except BaseException:
        ssn.rollback()
        raise
    timings["close"] = time.perf_counter() - step
    result.timings = timings
    if sink is not None:
        for pod, reason in result.evictions.items():
            sink.evict(pod, reason)
        for pod, node in result.nominated.items():
            sink.nominate(pod, node)
        for pod in result.ungated:
            sink.remove_queue_gate(pod)
        for pod, node in result.binds.items():
            if pod in result.annotations:
                sink.annotate(pod, result.annotations[pod])
            if pod in result.claim_bindings:
                sink.bind_claims(pod, result.claim_bindings[pod])
            if pod in result.device_claims:
                sink.reserve_device_claims(pod, result.device_claims[pod])
            sink.bind(pod, node)
        for podgroup in sorted(result.changed_podgroups):
            sink.update_podgroup_status(podgroup, result.podgroups[podgroup])
        for queue, status in result.queues.items():
            sink.update_queue_status(queue, status)
        for queue, annotations in result.queue_annotations.items():
            sink.annotate_queue(queue, annotations)
        for node, resources in cache.take_batch_changes().items():
            sink.publish_node_resources(node, resources)
    return result
