"""Real Volcano on a `caldera up` control plane, in Caldera's place, for the comparison runs.

Caldera's scheduler, controllers and webhook are stopped (by the PIDs `up` recorded in
DIR/state.json) and the objects they installed that would answer for Volcano are deleted:
webhook configurations and admission policies, named from Caldera's own manifests, and the
objects of its CRDs (the CRDs themselves are replaced in place by Volcano's).
Then Volcano is installed from its source tree as its helm chart would, with one local
adaptation: its three components run as local processes with the admin kubeconfig, so the
webhook configurations call a loopback URL instead of a Service.
"""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, TypeVar

import yaml

from central.conformance.build import Build
from central.kube.client import ApiError, KubeClient
from central.localcluster import helm, install, pki
from central.localcluster.build import Progress
from central.localcluster.processes import free_port
from central.localcluster.up import Cluster

T = TypeVar("T")
CHART = Path("installer/helm/chart/volcano")
CRD_FOLDERS = (CHART / "crd/bases", CHART / "charts/jobflow/crd/bases")  # jobflow's before the controllers start
NAMESPACES = Path("installer/namespace.yaml")
ADMISSION_CONF = CHART / "config/volcano-admission.conf"
RELEASE, NAMESPACE = "integration", "volcano-system"
# Volcano CI's `enabled_admissions` (hack/run-e2e-kind.sh): every webhook the suites exercise.
ENABLED_ADMISSIONS = ("/pods/mutate,/queues/mutate,/podgroups/mutate,/jobs/mutate,/jobs/validate,/jobflows/validate,"
                      "/pods/validate,/queues/validate,/podgroups/validate,/hypernodes/validate,/cronjobs/validate")
CALDERA_PROCESSES = ("caldera-scheduler", "caldera-controllers", "caldera-admission")
# Kinds of Caldera's manifests that would intercept or serve what Volcano now serves.
CALDERA_KINDS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "ValidatingAdmissionPolicyBinding",
                 "ValidatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
                 "CustomResourceDefinition")


def caldera_objects(manifests: Path | None = None) -> list[tuple[str, str, str]]:
    """(apiVersion, kind, name) of Caldera's installed objects that Volcano replaces."""
    return [(o["apiVersion"], o["kind"], o["metadata"]["name"])
            for o in install.kustomization_objects(manifests or install.repo_manifests())
            if o["kind"] in CALDERA_KINDS]


def localise_webhooks(docs: list[dict[str, Any]], port: int) -> list[dict[str, Any]]:
    """The chart's webhook configurations calling https://127.0.0.1:PORT<path> instead of the
    admission Service (the webhook manager fills in their caBundle when it starts)."""
    out = []
    for doc in docs:
        if not doc or not doc.get("kind", "").endswith("WebhookConfiguration"):
            continue
        for hook in doc.get("webhooks") or []:
            path = ((hook.get("clientConfig") or {}).get("service") or {}).get("path", "/")
            hook["clientConfig"] = {"url": f"https://127.0.0.1:{port}{path}"}
        out.append(doc)
    return out


def render_webhooks(src: Path, port: int, say: Progress) -> list[dict[str, Any]]:
    """templates/webhooks.yaml of Volcano's chart, rendered by helm with CI's values."""
    values = yaml.safe_dump({"custom": {"enabled_admissions": ENABLED_ADMISSIONS}})
    argv = [str(helm.helm_binary(progress=say)), "template", RELEASE, str(src / CHART), "--namespace", NAMESPACE,
            "--show-only", "templates/webhooks.yaml", "--values", "-"]
    done = subprocess.run(argv, input=values, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"helm template failed: {done.stderr.strip()[-300:]}")
    return localise_webhooks(list(yaml.safe_load_all(done.stdout)), port)


def replace_caldera(cluster: Cluster, built: Build, say: Progress = print, feature_gates: str = "",
                    scheduler: bool = True) -> Path:
    """Stop Caldera, install and start Volcano, its webhook and scheduler with `feature_gates`
    as Volcano's chart passes them; return the scheduler's configuration file (the file the
    ConfigMap sync keeps current). Without `scheduler` the scheduler is left for the caller
    to start with `start_scheduler` (the e2e bench's backlog: pods first, then the scheduler)."""
    admin = cluster.admin()
    for name in CALDERA_PROCESSES:
        cluster.sup.stop(name)
    _delete_caldera(admin)
    discovery = install.Discovery(admin)
    for doc in yaml.safe_load_all((built.src / NAMESPACES).read_text()):
        if doc:
            install.apply(admin, discovery, doc)
    for folder in CRD_FOLDERS:
        for path in sorted((built.src / folder).glob("*.yaml")):
            for crd in yaml.safe_load_all(path.read_text()):
                if crd:
                    _create_crd(admin, discovery, crd)

    home = cluster.dir / "volcano"
    (home / "config").mkdir(parents=True, exist_ok=True)
    conf = home / "config" / "volcano-scheduler-ci.conf"
    conf.write_text((built.src / CHART / "config/volcano-scheduler-ci.conf").read_text())
    admission_conf = home / "volcano-admission.conf"
    admission_conf.write_text((built.src / ADMISSION_CONF).read_text())
    ca = pki.Pair(cluster.dir / "pki" / "ca.crt", cluster.dir / "pki" / "ca.key")
    serving = pki.issue(ca, home / "tls", "webhook", "127.0.0.1", ips=("127.0.0.1",), server=True)
    kubeconfig = str(cluster.kubeconfig)

    port = free_port()
    for doc in render_webhooks(built.src, port, say):
        install.apply(admin, discovery, doc)
    gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
    say("starting Volcano's webhook manager, controller manager and scheduler ...")
    webhook = cluster.sup.start("vc-webhook-manager", [
        str(built.component("vc-webhook-manager")), f"--kubeconfig={kubeconfig}",
        f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}", f"--ca-cert-file={ca.cert}",
        f"--admission-conf={admission_conf}", f"--webhook-url=https://127.0.0.1:{port}",
        "--listen-address=127.0.0.1", f"--port={port}", "--scheduler-name=volcano",
        f"--enabled-admission={ENABLED_ADMISSIONS}", "--enable-healthz=true",
        f"--healthz-address=127.0.0.1:{free_port()}", "--logtostderr", "-v=3", *gates])
    cluster.sup.wait_ready(webhook, lambda: _webhooks_have_ca(admin), 120)
    _start_component(cluster, built, "vc-controller-manager", [])
    if scheduler:
        start_scheduler(cluster, built, conf, feature_gates)
    return conf


def start_scheduler(cluster: Cluster, built: Build, conf: Path, feature_gates: str = "") -> None:
    """vc-scheduler with the configuration file `conf`, once `replace_caldera` installed Volcano."""
    gates = [f"--feature-gates={feature_gates}"] if feature_gates else []
    _start_component(cluster, built, "vc-scheduler", [f"--scheduler-conf={conf}", "--schedule-period=1s", *gates])


def _start_component(cluster: Cluster, built: Build, name: str, extra: list[str]) -> None:
    healthz = free_port()
    proc = cluster.sup.start(name, [
        str(built.component(name)), f"--kubeconfig={cluster.kubeconfig}", "--leader-elect=false",
        "--scheduler-name=volcano", "--enable-healthz=true", f"--healthz-address=127.0.0.1:{healthz}",
        f"--listen-address=127.0.0.1:{free_port()}", "--logtostderr", "-v=3", *extra])
    cluster.sup.wait_ready(proc, lambda: _http_ok(healthz), 120)


def _delete_caldera(admin: KubeClient) -> None:
    """Delete Caldera's webhook configurations and admission policies, then every object of its
    custom resources (the default queues its controllers made). Its CRDs stay for Volcano's to
    replace in place: a deleted CRD lingers for minutes while the API server's finalizer retries
    "storage is (re)initializing" with back-off (seen here at over 120 s)."""
    discovery = install.Discovery(admin)
    crds = []
    for api_version, kind, name in caldera_objects():
        try:
            url = discovery.collection(api_version, kind, None) + "/" + name
        except ApiError:  # a kind this apiserver does not serve: nothing of it was installed
            continue
        obj = admin.get_or_none(url)
        if obj is not None and kind == "CustomResourceDefinition":
            crds.append(obj)
        elif obj is not None:
            admin.delete(url)
    for crd in crds:
        served = next(v["name"] for v in crd["spec"]["versions"] if v.get("served"))
        base, plural = f"/apis/{crd['spec']['group']}/{served}", crd["spec"]["names"]["plural"]
        for item in _patiently(lambda: admin.get(f"{base}/{plural}").get("items") or []):
            meta = item["metadata"]
            where = f"/namespaces/{meta['namespace']}" if meta.get("namespace") else ""
            _patiently(lambda: admin.delete(f"{base}{where}/{plural}/{meta['name']}"))


def _patiently(call: Callable[[], T], timeout: float = 60) -> T:
    """`call`, retried while the API server answers what passes on its own within seconds: 429
    "storage is (re)initializing" from a CRD's starting watch cache, and 500 from a webhook
    whose configuration was just deleted but is still in the API server's informer."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except ApiError as err:
            if err.code not in (429, 500) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _create_crd(admin: KubeClient, discovery: install.Discovery, crd: dict[str, Any]) -> None:
    """Volcano's CRD in place of Caldera's of the same name (the same group, kind and versions),
    or created where Caldera has none. Server-side apply would store the whole schema in
    managedFields; a replace is what `kubectl replace` does."""
    url = discovery.collection(crd["apiVersion"], crd["kind"], None)
    name = crd["metadata"]["name"]
    old = admin.get_or_none(f"{url}/{name}")
    if old is None:
        admin.create(url, crd)
    else:
        crd["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        admin.request("PUT", f"{url}/{name}", body=crd)
    install._wait_established(admin, name)
    served = next(v["name"] for v in crd["spec"]["versions"] if v.get("served"))
    _patiently(lambda: admin.get(f"/apis/{crd['spec']['group']}/{served}/{crd['spec']['names']['plural']}"))


def _webhooks_have_ca(admin: KubeClient) -> bool:
    for kind in ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"):
        for config in admin.get(f"/apis/admissionregistration.k8s.io/v1/{kind}").get("items", []):
            if config["metadata"]["name"].startswith("volcano-admission-service"):
                if not all(h["clientConfig"].get("caBundle") for h in config.get("webhooks", [])):
                    return False
    return True


def _http_ok(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except OSError:
        return False
