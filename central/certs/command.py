"""`caldera certs`: keep the CA and the serving certificates in Secrets, valid and current.

Run at install time (a Job) and on a schedule (a CronJob), as Volcano's admission init does.
Each run is idempotent: a Secret that is still good is kept untouched, one that is missing,
unreadable, signed by another CA, missing a requested name or within the last third of its life
is (re)issued. Secrets this command made carry the label `app.kubernetes.io/managed-by:
caldera-certs`; a Secret without it (cert-manager's, an operator's) is never overwritten: it is
kept if a server could use it, and reported as an error naming the Secret if not.

The webhook fills in its own caBundle at start (`inject_ca_bundle`, called by `caldera
webhook --ca-bundle-file`), so nothing is patched by hand. The pure certificate logic is
`central.certs.issue`; this module only reads and writes objects.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TypeVar

from central.certs.issue import (
    CA_CRT,
    CA_KEY,
    TLS_CRT,
    TLS_KEY,
    CertError,
    KeyPair,
    ServingRequest,
    ca_problem,
    certificate_problem,
    issue_serving,
    new_ca,
    service_dns_names,
    serving_problem,
)
from central.errors import InputError
from central.kube.client import CORE, ApiError, KubeClient, path
from central.kube.command_errors import api_errors

log = logging.getLogger(__name__)
T = TypeVar("T")

ADMISSION_REGISTRATION = "/apis/admissionregistration.k8s.io/v1"
MANAGED_BY = ("app.kubernetes.io/managed-by", "caldera-certs")
NAMESPACE = "caldera-system"
CA_SECRET = "caldera-ca"
WEBHOOK_SECRET, WEBHOOK_SERVICE = "caldera-admission-tls", "caldera-admission-service"
SCHEDULER_SECRET, SCHEDULER_SERVICE = "caldera-scheduler-tls", "caldera-scheduler"
WEBHOOK_CONFIGURATIONS = {"mutatingwebhookconfigurations": "caldera-mutate",
                          "validatingwebhookconfigurations": "caldera-validate"}


@dataclass(frozen=True)
class Target:
    """One serving certificate: the Secret it lives in and the names it covers."""
    secret: str
    request: ServingRequest


@dataclass(frozen=True)
class Outcome:
    secret: str
    action: str  # "kept", "created", "renewed"
    reason: str
    pair: KeyPair
    ca_pem: bytes

    def line(self, namespace: str) -> str:
        until = self.pair.cert.not_valid_after_utc
        why = f" ({self.reason})" if self.reason else ""
        return f"Secret {namespace}/{self.secret}: {self.action}{why}, valid until {until:%Y-%m-%d}"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _decode(secret: dict[str, Any], key: str) -> bytes:
    try:
        return base64.b64decode((secret.get("data") or {}).get(key) or "", validate=True)
    except (ValueError, TypeError):
        return b""


def _managed(secret: dict[str, Any]) -> bool:
    labels = (secret.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY[0]) == MANAGED_BY[1]


def _write(client: KubeClient, namespace: str, name: str, data: dict[str, bytes], secret_type: str,
           existing: dict[str, Any] | None) -> None:
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Secret", "type": secret_type,
        "metadata": {"name": name, "namespace": namespace, "labels": dict([MANAGED_BY])},
        "data": {k: base64.b64encode(v).decode() for k, v in data.items()},
    }
    if existing is None:
        client.create(path(CORE, "secrets", namespace), body)  # 409: another run won; the caller re-reads
        return
    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    body["metadata"]["labels"] = {**(existing["metadata"].get("labels") or {}), **body["metadata"]["labels"]}
    client.request("PUT", path(CORE, "secrets", namespace, name), body=body)


def retry_on_conflict(step: Callable[[], T]) -> T:
    """Run `step()` again when someone changed the object between its read and its write (409)."""
    for attempt in range(5):
        try:
            return step()
        except ApiError as err:
            if err.code != 409 or attempt == 4:
                raise
    raise AssertionError("unreachable")


def ensure_ca(client: KubeClient, namespace: str, name: str = CA_SECRET,
              now: dt.datetime | None = None) -> KeyPair:
    def step() -> KeyPair:
        at = now or _now()
        secret = client.get_or_none(path(CORE, "secrets", namespace, name))
        if secret is not None:
            ca = KeyPair(_decode(secret, CA_CRT), _decode(secret, CA_KEY))
            problem = ca_problem(ca, at)
            if problem is None:
                return ca
            if not _managed(secret):
                raise InputError(f"Secret {namespace}/{name}", f"{problem}; it was not made by `caldera certs`, "
                                                               "so it is left alone: repair or delete it")
            log.warning("Secret %s/%s: replacing the CA: %s", namespace, name, problem)
        ca = new_ca(f"caldera-ca@{at:%Y%m%d%H%M%S}", at)
        _write(client, namespace, name, {CA_CRT: ca.cert_pem, CA_KEY: ca.key_pem}, "Opaque", secret)
        return ca
    return retry_on_conflict(step)


def ensure_serving(client: KubeClient, namespace: str, target: Target, ca: KeyPair,
                   now: dt.datetime | None = None) -> Outcome:
    def step() -> Outcome:
        at = now or _now()
        secret = client.get_or_none(path(CORE, "secrets", namespace, target.secret))
        problem: str | None
        if secret is None:
            problem, action = "", "created"
        else:
            stored = KeyPair(_decode(secret, TLS_CRT), _decode(secret, TLS_KEY))
            stored_ca = _decode(secret, CA_CRT)
            if not _managed(secret):
                return _foreign(namespace, target, secret, stored, stored_ca, at)
            problem = serving_problem(stored, stored_ca, ca, target.request, at)
            if problem is None:
                return Outcome(target.secret, "kept", "", stored, stored_ca)
            action = "renewed"
        pair = issue_serving(ca, target.request, at)
        _write(client, namespace, target.secret, {CA_CRT: ca.cert_pem, TLS_CRT: pair.cert_pem,
                                                  TLS_KEY: pair.key_pem}, "kubernetes.io/tls", secret)
        return Outcome(target.secret, action, problem or "", pair, ca.cert_pem)
    return retry_on_conflict(step)


def _foreign(namespace: str, target: Target, secret: dict[str, Any], pair: KeyPair, ca_pem: bytes,
             at: dt.datetime) -> Outcome:
    """A Secret someone else manages (cert-manager): used as it is if a server can serve it."""
    problem = certificate_problem(pair, at)
    if problem is None and not ca_pem:
        problem = "ca.crt is missing (clients need it to trust the server)"
    if problem:
        raise InputError(f"Secret {namespace}/{target.secret}", f"{problem}; it was not made by `caldera certs`, "
                                                                "so it is left alone: repair or delete it")
    return Outcome(target.secret, "kept", "not managed by caldera certs", pair, ca_pem)


def ensure_certificates(client: KubeClient, namespace: str, targets: list[Target],
                        now: dt.datetime | None = None, ca_secret: str = CA_SECRET) -> list[Outcome]:
    """The CA, then every target's serving certificate: the whole of one `caldera certs` run."""
    ca = ensure_ca(client, namespace, ca_secret, now)
    return [ensure_serving(client, namespace, target, ca, now) for target in targets]


def default_targets(namespace: str, webhook: tuple[str, str] = (WEBHOOK_SECRET, WEBHOOK_SERVICE),
                    scheduler: tuple[str, str] = (SCHEDULER_SECRET, SCHEDULER_SERVICE),
                    dns_names: tuple[str, ...] = (), ip_addresses: tuple[str, ...] = ()) -> list[Target]:
    """The webhook's and the scheduler's certificates, each a (Secret, Service) pair;
    `dns_names`/`ip_addresses` go into both (a local run reaches both servers at 127.0.0.1)."""
    def target(secret: str, service: str) -> Target:
        names = service_dns_names(service, namespace) + tuple(dns_names)
        return Target(secret, ServingRequest(f"{service}.{namespace}.svc", names, tuple(ip_addresses)))
    return [target(*webhook), target(*scheduler)]


def write_files(directory: Path, outcome: Outcome) -> Path:
    """The Secret as a mounted volume would show it: `directory/<secret>/{ca.crt,tls.crt,tls.key}`."""
    folder = directory / outcome.secret
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in ((CA_CRT, outcome.ca_pem), (TLS_CRT, outcome.pair.cert_pem), (TLS_KEY, outcome.pair.key_pem)):
        target = folder / name
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
    return folder


def inject_ca_bundle(client: KubeClient, ca_pem: bytes, configurations: dict[str, str] | None = None,
                     url: str = "") -> int:
    """Set caBundle on every webhook of the named configurations; returns how many changed.

    `configurations` maps the resource (mutatingwebhookconfigurations, ...) to the object's
    name. With `url` (e.g. https://127.0.0.1:8443 for a webhook run outside the cluster),
    clientConfig becomes `url + <the service's path>` instead of the Service. Writes are
    conditional on resourceVersion and retried on conflict; unchanged objects are not written."""
    bundle = base64.b64encode(ca_pem).decode()
    changed = 0
    for resource, name in (configurations or WEBHOOK_CONFIGURATIONS).items():
        def step() -> int:
            where = path(ADMISSION_REGISTRATION, resource, name=name)
            obj = client.get(where)
            webhooks = obj.get("webhooks") or []
            before = [dict(w.get("clientConfig") or {}) for w in webhooks]
            for webhook in webhooks:
                config = webhook.setdefault("clientConfig", {})
                if url:
                    route = (config.get("service") or {}).get("path") or _url_path(config.get("url", ""))
                    config.pop("service", None)
                    config["url"] = url.rstrip("/") + route
                config["caBundle"] = bundle
            if [w["clientConfig"] for w in webhooks] == before:
                return 0
            client.request("PUT", where, body=obj)
            return 1
        changed += retry_on_conflict(step)
    return changed


def _url_path(url: str) -> str:
    rest = url.split("://", 1)[-1]
    return "/" + rest.split("/", 1)[1] if "/" in rest else ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster, then ~/.kube/config)")
    parser.add_argument("--namespace", default=NAMESPACE, help="where the Secrets and Services live")
    parser.add_argument("--ca-secret", default=CA_SECRET, help="Secret holding the CA")
    parser.add_argument("--webhook-secret", default=WEBHOOK_SECRET, help="Secret for the webhook's certificate")
    parser.add_argument("--webhook-service", default=WEBHOOK_SERVICE, help="Service the webhook certificate names")
    parser.add_argument("--scheduler-secret", default=SCHEDULER_SECRET,
                        help="Secret for the scheduler's agent endpoint certificate")
    parser.add_argument("--scheduler-service", default=SCHEDULER_SERVICE,
                        help="Service the scheduler certificate names")
    parser.add_argument("--dns-name", action="append", default=[], metavar="NAME",
                        help="another DNS name for both certificates (repeatable)")
    parser.add_argument("--ip-address", action="append", default=[], metavar="IP",
                        help="an IP address for both certificates, e.g. 127.0.0.1 for a local run (repeatable)")
    parser.add_argument("--out-dir", default="",
                        help="also write each Secret as files: DIR/<secret>/{ca.crt,tls.crt,tls.key}")


@api_errors("certs")
def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        targets = default_targets(args.namespace, (args.webhook_secret, args.webhook_service),
                                  (args.scheduler_secret, args.scheduler_service),
                                  tuple(args.dns_name), tuple(args.ip_address))
    except CertError as err:
        raise InputError("--ip-address", str(err)) from None
    client = KubeClient.connect(args.kubeconfig)
    outcomes = ensure_certificates(client, args.namespace, targets, ca_secret=args.ca_secret)
    for outcome in outcomes:
        print(outcome.line(args.namespace))
        if args.out_dir:
            write_files(Path(args.out_dir), outcome)
    return 0
