"""`caldera explain job NAME -n NS`: where a waiting job stands, why, and when it should start.

It reads the cluster as the scheduler does (Nodes, Pods, PodGroups, Queues, PriorityClasses,
HyperNodes) and the scheduler's configuration (the ConfigMap `volcano-scheduler-configmap`
in `--scheduler-namespace`, or `--scheduler-conf FILE`), then runs the forward estimate of
`central.scheduler.estimate` on it. NAME is a Volcano Job (its PodGroup `<job>-<uid>`) or a
PodGroup. Nothing is written.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from central.errors import InputError
from central.framework.conf import DEFAULT_CONF_YAML, SchedulerConf
from central.kube.client import CORE, ApiError, KubeClient, path
from central.kube.command_errors import api_errors
from central.model.cache import ClusterCache
from central.model.jobs import expand_job
from central.scheduler import load_config
from central.scheduler.estimate import PodMaker, describe, explain
from central.sim.manifests import Manifests, load_into
from central.vcctl.common import add_connection, connect

SCHEDULER_CONFIGMAP = ("volcano-scheduler-configmap", "volcano-scheduler.conf")
KINDS = (("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"), ("Node", "/api/v1/nodes"),
         ("HyperNode", "/apis/topology.volcano.sh/v1alpha1/hypernodes"),
         ("Queue", "/apis/scheduling.volcano.sh/v1beta1/queues"),
         ("PodGroup", "/apis/scheduling.volcano.sh/v1beta1/podgroups"), ("Pod", "/api/v1/pods"))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    job = sub.add_parser("job", help="explain a waiting Volcano Job or PodGroup")
    job.add_argument("name", metavar="NAME")
    add_connection(job, namespaced=True)
    job.add_argument("--scheduler-conf", type=Path, help="a volcano-scheduler.conf (default: the cluster's ConfigMap)")
    job.add_argument("--scheduler-namespace", default="caldera-system",
                     help="where the scheduler's ConfigMap volcano-scheduler-configmap is (default caldera-system)")
    job.add_argument("-o", "--output", choices=("table", "json"), default="table", help="table (default) or json")


@api_errors("job")
def run(args: argparse.Namespace) -> int:
    client = connect(args)
    conf = scheduler_conf(client, args.scheduler_namespace, args.scheduler_conf)
    cache = live_cache(client)
    uid = _podgroup_of(client, cache, args.namespace, args.name)
    now = datetime.now(timezone.utc)
    explanation = explain(cache, conf, now, [uid], copied=True, pods_of=job_pods(client))[uid]
    print(json.dumps(explanation.to_json(), indent=2) if args.output == "json" else describe(explanation, now))
    return 0


def live_cache(client: KubeClient) -> ClusterCache:
    """The cluster as the scheduler's cache holds it, read once."""
    cache = ClusterCache()
    objects: list[tuple[str, dict[str, Any]]] = []
    for kind, url in KINDS:
        try:
            items = client.request("GET", url).get("items") or []
        except ApiError as err:
            if err.code == 404 and kind == "HyperNode":  # a cluster without Volcano's topology CRD
                continue
            raise
        objects += [(f"{kind} {_name(o)}", dict(o, kind=kind)) for o in items]
    load_into(cache, Manifests(objects=objects))
    return cache


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else str(meta.get("name"))


def job_pods(client: KubeClient) -> PodMaker:
    """The pods the Job controller makes for a Volcano Job's PodGroup once it is admitted."""
    jobs = {}
    for job in client.request("GET", "/apis/batch.volcano.sh/v1alpha1/jobs").get("items") or []:
        meta = job.get("metadata") or {}
        jobs[f"{meta.get('namespace')}/{meta.get('name')}-{meta.get('uid')}"] = job

    def make(uid: str) -> list[dict[str, Any]]:
        job = jobs.get(uid)
        if job is None:
            return []
        try:
            return expand_job(job)[1]
        except InputError:  # a Job its controller cannot read makes no pods there either
            return []
    return make


def scheduler_conf(client: KubeClient, namespace: str, file: Path | None = None) -> SchedulerConf:
    """`file`, else the scheduler's ConfigMap in `namespace`, else Volcano's default."""
    if file is not None:
        return load_config(file.read_text(), str(file))
    name, key = SCHEDULER_CONFIGMAP
    found = client.get_or_none(path(CORE, "configmaps", namespace, name))
    text = ((found or {}).get("data") or {}).get(key)
    return load_config(text or DEFAULT_CONF_YAML, f"ConfigMap {namespace}/{name}")


def _podgroup_of(client: KubeClient, cache: ClusterCache, namespace: str, name: str) -> str:
    """The PodGroup of the Volcano Job `name` (`<name>-<uid>`), else the PodGroup `name`."""
    job = client.get_or_none(f"/apis/batch.volcano.sh/v1alpha1/namespaces/{namespace}/jobs/{name}")
    candidates = ([f"{namespace}/{name}-{job['metadata']['uid']}"] if job is not None else []) + [f"{namespace}/{name}"]
    for uid in candidates:
        if uid in cache.jobs and cache.jobs[uid].has_podgroup:
            return uid
    if job is not None:
        raise InputError(f"job {namespace}/{name}", "its PodGroup is not there yet: the job controller makes it first")
    raise InputError(f"job {namespace}/{name}", "no such Volcano Job or PodGroup")
