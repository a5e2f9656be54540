"""etcd, kube-apiserver and kube-controller-manager on loopback, as a real cluster runs them:
TLS everywhere, client certificates for the system identities, Node and RBAC authorisation,
the default admission chain plus NodeRestriction, bound ServiceAccount tokens."""

from __future__ import annotations

import ssl
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from central.localcluster import pki
from central.localcluster.processes import StartError, Supervisor, port_in_use

ISSUER = "https://kubernetes.default.svc.cluster.local"
SERVICE_RANGE = "10.0.0.0/24"
# Every on-by-default controller (GC, namespaces, ServiceAccounts and their tokens, PV binding,
# PDB status for the Eviction API, node lifecycle, ...) but node IPAM, which needs a pod network.
CONTROLLERS = "*,-node-ipam-controller"

# Identities that are not ServiceAccounts, as client certificates: (file stem, user, groups).
IDENTITIES = (
    ("admin", "caldera-local-admin", ("system:masters",)),
    ("kube-controller-manager", "system:kube-controller-manager", ()),
    ("simkubelet", "caldera-local:simkubelet", ()),
    ("kube-scheduler", "system:kube-scheduler", ()),
)


@dataclass(frozen=True)
class Endpoints:
    apiserver: str  # https://127.0.0.1:PORT
    etcd: str


def write_kubeconfig(path: Path, server: str, ca: Path, *, cert: pki.Pair | None = None,
                     token: str | None = None, namespace: str = "default") -> Path:
    """A self-contained kubeconfig (file paths to the local PKI, or a bearer token)."""
    if token:
        user = {"token": token}
    elif cert is not None:
        user = {"client-certificate": str(cert.cert), "client-key": str(cert.key)}
    else:
        raise ValueError("a kubeconfig needs a client certificate or a token")
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "caldera-local",
           "clusters": [{"name": "caldera-local", "cluster": {"server": server, "certificate-authority": str(ca)}}],
           "users": [{"name": "caldera-local", "user": user}],
           "contexts": [{"name": "caldera-local",
                         "context": {"cluster": "caldera-local", "user": "caldera-local", "namespace": namespace}}]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


AUTHZ_CONFIG = "authorization.yaml"
# The node agent's pod reads, and only those, go to Caldera's webhook: it allows a list or watch
# that names the token's own node (central.admission.authorizer). Unreachable, they are denied.
AGENT_PODS_READ = (
    "request.user == 'system:serviceaccount:caldera-system:caldera-nodeagent'",
    "has(request.resourceAttributes)",
    "request.resourceAttributes.resource == 'pods'",
    "!has(request.resourceAttributes.subresource) || request.resourceAttributes.subresource == ''",
    "request.resourceAttributes.verb in ['list', 'watch']",
)


def write_authorization_config(directory: Path, webhook_kubeconfig: Path | None = None) -> Path:
    """The apiserver's AuthorizationConfiguration: Node, then (given its kubeconfig) the agents'
    pod-read webhook, then RBAC. The apiserver reloads the file when it changes."""
    authorizers: list[dict[str, object]] = [{"type": "Node", "name": "node"}]
    if webhook_kubeconfig is not None:
        authorizers.append({"type": "Webhook", "name": "caldera-agent-pods", "webhook": {
            "timeout": "3s", "subjectAccessReviewVersion": "v1", "matchConditionSubjectAccessReviewVersion": "v1",
            "failurePolicy": "Deny", "authorizedTTL": "30s", "unauthorizedTTL": "10s",
            "connectionInfo": {"type": "KubeConfigFile", "kubeConfigFile": str(webhook_kubeconfig)},
            "matchConditions": [{"expression": e} for e in AGENT_PODS_READ]}})
    authorizers.append({"type": "RBAC", "name": "rbac"})
    path = directory / AUTHZ_CONFIG
    path.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AuthorizationConfiguration",
                                    "authorizers": authorizers}, sort_keys=False))
    return path


WEBHOOK_CLIENTS = Path("pki") / "webhook-clients"  # under the cluster's directory


def webhook_client_ca(directory: Path) -> Path:
    """The CA Caldera's webhook verifies callers against (`--client-ca-file`): only the API
    server holds a certificate it signed, so a plain client is refused at the TLS handshake."""
    return directory / WEBHOOK_CLIENTS / "ca.crt"


def write_webhook_client(directory: Path, webhook_port: int = 0) -> tuple[pki.Pair, Path]:
    """The client certificate the API server presents to Caldera's webhooks (a CA of its own,
    not the cluster's: no user's client certificate passes), and the AdmissionConfiguration
    that hands it to the admission webhook plugins (`--admission-control-config-file`)."""
    where = directory / WEBHOOK_CLIENTS
    ca = pki.new_ca(where, "caldera-webhook-client-ca")
    client = pki.issue(ca, where, "apiserver", "kube-apiserver-webhook-client")
    kubeconfig = where / "admission-kubeconfig"
    # for Caldera's webhook's host and port alone (any other webhook, Volcano's beside it in
    # `caldera conformance`, is not handed a certificate its CA never signed); "*" without a port
    host = f"127.0.0.1:{webhook_port}" if webhook_port else "*"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [
        {"name": host, "user": {"client-certificate": str(client.cert), "client-key": str(client.key)}}]}))
    plugin = {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
              "kubeConfigFile": str(kubeconfig)}
    config = directory / "admission.yaml"
    config.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                      "plugins": [{"name": name, "configuration": plugin} for name in
                                                  ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")]}))
    return client, config


def enable_agent_authorizer(directory: Path, url: str, ca_pem: bytes) -> None:
    """Add the agents' pod-read webhook at `url` (served with a certificate from `ca_pem`) to the
    apiserver's authorization chain; it takes effect at the apiserver's next reload."""
    ca = directory / "pki" / "webhook-ca.crt"
    ca.write_bytes(ca_pem)
    kubeconfig = directory / "kubeconfigs" / "authorization-webhook"
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "webhook",
        "clusters": [{"name": "webhook", "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": "apiserver", "user": {  # the client certificate the webhook asks for
            "client-certificate": str(directory / WEBHOOK_CLIENTS / "apiserver.crt"),
            "client-key": str(directory / WEBHOOK_CLIENTS / "apiserver.key")}}],
        "contexts": [{"name": "webhook", "context": {"cluster": "webhook", "user": "apiserver"}}]}))
    write_authorization_config(directory, kubeconfig)


def _get(url: str, context: ssl.SSLContext | None = None, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, context=context, timeout=timeout) as resp:  # noqa: S310 (loopback only)
        body: bytes = resp.read()
        return body


def start(sup: Supervisor, bins: dict[str, Path], port: int = 0, controllers: str = CONTROLLERS,
          webhook_port: int = 0) -> Endpoints:
    """Start etcd, kube-apiserver and kube-controller-manager under `sup` and wait for each;
    `controllers` is the controller manager's --controllers."""
    d = sup.dir
    pkidir = d / "pki"
    ca = pki.new_ca(pkidir)
    serving = pki.issue(ca, pkidir, "apiserver", "kube-apiserver", server=True,
                        dns=("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                             "kubernetes.default.svc.cluster.local"), ips=("127.0.0.1", "10.0.0.1"))
    clients = {stem: pki.issue(ca, pkidir, stem, user, orgs) for stem, user, orgs in IDENTITIES}
    sa = pki.signing_key(pkidir)
    _, admission_config = write_webhook_client(d, webhook_port)

    if port and port_in_use(port):
        raise StartError(f"port {port} on 127.0.0.1 is in use (asked for kube-apiserver's --port); choose another")
    if port and not sup.ports.allows(port):
        raise StartError(f"--port {port} is outside --port-range {sup.ports.lo}-{sup.ports.hi}")
    if port:
        sup.ports.given.add(port)
    api_port = port or sup.ports.take()
    etcd_port, peer_port = sup.ports.take(), sup.ports.take()
    etcd_url = f"http://127.0.0.1:{etcd_port}"
    peer_url = f"http://127.0.0.1:{peer_port}"
    etcd = sup.start("etcd", [str(bins["etcd"]), "--name=local", f"--data-dir={d / 'etcd'}",
                              f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
                              f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
                              f"--initial-cluster=local={peer_url}", "--unsafe-no-fsync", "--log-level=warn"])
    sup.wait_ready(etcd, lambda: b"true" in _get(etcd_url + "/health"), 60)

    server = f"https://127.0.0.1:{api_port}"
    api = sup.start("kube-apiserver", [
        str(bins["kube-apiserver"]), f"--etcd-servers={etcd_url}", f"--secure-port={api_port}",
        "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
        # a loopback address cannot back the `kubernetes` Service endpoints; nothing in-cluster needs it
        "--endpoint-reconciler-type=none",
        f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}", f"--client-ca-file={ca.cert}",
        f"--service-account-issuer={ISSUER}", f"--service-account-key-file={sa.cert}",
        f"--service-account-signing-key-file={sa.key}", f"--api-audiences={ISSUER}",
        f"--authorization-config={write_authorization_config(d)}", "--enable-admission-plugins=NodeRestriction",
        f"--admission-control-config-file={admission_config}",
        f"--service-cluster-ip-range={SERVICE_RANGE}", "--allow-privileged=true", "--profiling=false",
        f"--cert-dir={pkidir / 'generated'}"])
    context = ssl.create_default_context(cafile=str(ca.cert))
    admin = clients["admin"]
    context.load_cert_chain(str(admin.cert), str(admin.key))
    sup.wait_ready(api, lambda: _get(server + "/readyz", context) == b"ok", 120)

    kcm_config = write_kubeconfig(d / "kubeconfigs" / "kube-controller-manager", server, ca.cert,
                                  cert=clients["kube-controller-manager"])
    kcm = sup.start("kube-controller-manager", [
        str(bins["kube-controller-manager"]), f"--kubeconfig={kcm_config}",
        f"--authentication-kubeconfig={kcm_config}", f"--authorization-kubeconfig={kcm_config}",
        "--bind-address=127.0.0.1", f"--secure-port={sup.ports.take()}",
        f"--service-account-private-key-file={sa.key}", f"--root-ca-file={ca.cert}",
        "--use-service-account-credentials=true", f"--controllers={controllers}", "--leader-elect=false",
        f"--service-cluster-ip-range={SERVICE_RANGE}", "--concurrent-gc-syncs=5", "--profiling=false",
        f"--cert-dir={pkidir / 'generated'}"])
    # Ready once the token controller has given the default namespace its ServiceAccount.
    sup.wait_ready(kcm, lambda: bool(_get(server + "/api/v1/namespaces/default/serviceaccounts/default", context)), 120)

    write_kubeconfig(d / "kubeconfig", server, ca.cert, cert=admin)
    write_kubeconfig(d / "kubeconfigs" / "simkubelet", server, ca.cert, cert=clients["simkubelet"])
    write_kubeconfig(d / "kubeconfigs" / "kube-scheduler", server, ca.cert, cert=clients["kube-scheduler"])
    return Endpoints(server, etcd_url)


def start_kube_scheduler(sup: Supervisor, bins: dict[str, Path], qps: float, burst: int) -> None:
    """kube-scheduler with its default profile, as user system:kube-scheduler (the built-in
    RBAC for it applies), on the apiserver `start` launched under the same `sup`. The client
    rate limits are the only settings changed (the defaults, 50/100, would cap binds)."""
    kubeconfig = sup.dir / "kubeconfigs" / "kube-scheduler"
    conf = sup.dir / "kube-scheduler.yaml"
    conf.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": str(kubeconfig), "qps": qps, "burst": burst},
        "leaderElection": {"leaderElect": False}}))
    port = sup.ports.take()
    proc = sup.start("kube-scheduler", [
        str(bins["kube-scheduler"]), f"--config={conf}", f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}", "--bind-address=127.0.0.1", f"--secure-port={port}",
        f"--cert-dir={sup.dir / 'pki' / 'generated'}"])
    # /healthz is open to anyone (--authorization-always-allow-paths); its serving cert is self-signed
    sup.wait_ready(proc, lambda: _get(f"https://127.0.0.1:{port}/healthz", ssl._create_unverified_context()) == b"ok",
                   120)
