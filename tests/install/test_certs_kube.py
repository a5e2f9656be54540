"""`caldera certs` on a real kube-apiserver, in the test's namespace: Secrets made once, kept,
renewed, never a foreign one overwritten; the webhook configurations' caBundle filled in."""

from __future__ import annotations

import base64
import datetime as dt

import pytest

from central.certs.command import (
    CA_SECRET,
    SCHEDULER_SECRET,
    WEBHOOK_SECRET,
    default_targets,
    ensure_certificates,
    inject_ca_bundle,
    write_files,
)
from central.certs.issue import CA_CRT, TLS_CRT, KeyPair, issue_serving, new_ca
from central.errors import InputError
from central.kube.client import CORE, path

ADMISSION_NAMESPACE = "caldera-system"  # where the webhook configurations point
NOW = dt.datetime(2026, 11, 24, tzinfo=dt.timezone.utc)


def secret(real, name: str) -> dict:
    return real.kube.get(path(CORE, "secrets", real.namespace, name))


def data(real, name: str, key: str) -> bytes:
    return base64.b64decode(secret(real, name)["data"][key])


def test_first_run_creates_ca_and_both_serving_secrets(real):
    kube, ns = real.kube, real.namespace
    outcomes = ensure_certificates(kube, ns, default_targets(ns, ip_addresses=("127.0.0.1",)), now=NOW)
    assert [(o.secret, o.action) for o in outcomes] == [(WEBHOOK_SECRET, "created"), (SCHEDULER_SECRET, "created")]
    hook = secret(real, WEBHOOK_SECRET)
    assert hook["type"] == "kubernetes.io/tls" and set(hook["data"]) == {"ca.crt", "tls.crt", "tls.key"}
    assert hook["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "caldera-certs"
    assert data(real, WEBHOOK_SECRET, CA_CRT) == data(real, SCHEDULER_SECRET, CA_CRT) == data(real, CA_SECRET, CA_CRT)


def test_second_run_keeps_everything_and_a_late_run_renews_under_the_same_ca(real):
    kube, ns = real.kube, real.namespace
    targets = default_targets(ns)
    ensure_certificates(kube, ns, targets, now=NOW)
    before = {name: secret(real, name)["metadata"]["resourceVersion"] for name in (CA_SECRET, WEBHOOK_SECRET)}
    again = ensure_certificates(kube, ns, targets, now=NOW + dt.timedelta(days=100))
    assert {o.action for o in again} == {"kept"}
    assert before == {name: secret(real, name)["metadata"]["resourceVersion"] for name in before}
    late = ensure_certificates(kube, ns, targets, now=NOW + dt.timedelta(days=300))
    assert [o.action for o in late] == ["renewed", "renewed"] and "expires" in late[0].reason
    assert secret(real, CA_SECRET)["metadata"]["resourceVersion"] == before[CA_SECRET]  # trust unchanged


def test_a_new_name_reissues(real):
    kube, ns = real.kube, real.namespace
    ensure_certificates(kube, ns, default_targets(ns), now=NOW)
    outcomes = ensure_certificates(kube, ns, default_targets(ns, ip_addresses=("127.0.0.1",)), now=NOW)
    assert [o.action for o in outcomes] == ["renewed", "renewed"]
    assert "does not cover 127.0.0.1" in outcomes[0].reason


def test_a_corrupt_managed_secret_is_replaced(real):
    kube, ns = real.kube, real.namespace
    ensure_certificates(kube, ns, default_targets(ns), now=NOW)
    broken = secret(real, WEBHOOK_SECRET)
    broken["data"][TLS_CRT] = base64.b64encode(b"not a certificate").decode()
    real.kube.request("PUT", path(CORE, "secrets", real.namespace, WEBHOOK_SECRET), body=broken)
    outcome = ensure_certificates(kube, ns, default_targets(ns), now=NOW)[0]
    assert (outcome.action, outcome.reason) == ("renewed", "tls.crt is not a PEM certificate")


def _foreign_secret(real, pair: KeyPair, ca_pem: bytes) -> None:
    real.kube.create(path(CORE, "secrets", real.namespace), {
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
        "metadata": {"name": WEBHOOK_SECRET, "namespace": real.namespace,
                     "labels": {"app.kubernetes.io/managed-by": "cert-manager"}},
        "data": {k: base64.b64encode(v).decode() for k, v in
                 {"ca.crt": ca_pem, "tls.crt": pair.cert_pem, "tls.key": pair.key_pem}.items()}})


def test_a_valid_foreign_secret_is_kept_and_a_broken_one_named(real):
    kube, ns = real.kube, real.namespace
    ca = new_ca("cert-manager-ca", NOW)
    request = default_targets(ns)[0].request
    _foreign_secret(real, issue_serving(ca, request, NOW), ca.cert_pem)
    outcome = ensure_certificates(kube, ns, default_targets(ns), now=NOW)[0]
    assert (outcome.action, outcome.ca_pem) == ("kept", ca.cert_pem)
    with pytest.raises(InputError, match=f"Secret {ns}/{WEBHOOK_SECRET}: tls.crt expired .* not made by"):
        ensure_certificates(kube, ns, default_targets(ns), now=NOW + dt.timedelta(days=400))


def webhook_configuration(kind: str, name: str) -> dict:
    hooks = [{"name": f"{r}.volcano.sh", "admissionReviewVersions": ["v1"], "sideEffects": "None",
              "clientConfig": {"service": {"name": "caldera-admission-service", "namespace": ADMISSION_NAMESPACE,
                                           "path": f"/{r}/validate"}, "caBundle": ""}}
             for r in ("jobs", "queues")]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": hooks}


def test_inject_ca_bundle_fills_every_webhook_and_is_idempotent(real):
    real.put(webhook_configuration("MutatingWebhookConfiguration", "caldera-mutate"))
    real.put(webhook_configuration("ValidatingWebhookConfiguration", "caldera-validate"))
    assert inject_ca_bundle(real.kube, b"PEM") == 2
    assert inject_ca_bundle(real.kube, b"PEM") == 0
    hooks = real.kube.get("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/caldera-validate")
    assert {w["clientConfig"]["caBundle"] for w in hooks["webhooks"]} == {base64.b64encode(b"PEM").decode()}
    assert inject_ca_bundle(real.kube, b"PEM", url="https://127.0.0.1:8443") == 2
    hooks = real.kube.get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/caldera-mutate")
    assert [w["clientConfig"].get("url") for w in hooks["webhooks"]] == [
        "https://127.0.0.1:8443/jobs/validate", "https://127.0.0.1:8443/queues/validate"]
    assert all("service" not in w["clientConfig"] for w in hooks["webhooks"])


def test_command_prints_one_line_per_secret_and_writes_files(real, tmp_path, capsys):
    from central.cli import main

    assert main(["certs", "--kubeconfig", real.kubeconfig, "--namespace", real.namespace,
                 "--ip-address", "127.0.0.1",
                 "--out-dir", str(tmp_path / "tls")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"Secret {real.namespace}/{WEBHOOK_SECRET}: created, valid until ")
    assert sorted(p.name for p in (tmp_path / "tls" / SCHEDULER_SECRET).iterdir()) == ["ca.crt", "tls.crt", "tls.key"]
    assert main(["certs", "--kubeconfig", real.kubeconfig, "--namespace", real.namespace,
                 "--ip-address", "nope"]) == 2
    assert "--ip-address: 'nope' is not an IP address" in capsys.readouterr().err


def test_write_files_is_private(tmp_path):
    ca = new_ca("c", NOW)
    from central.certs.command import Outcome
    folder = write_files(tmp_path, Outcome("s", "created", "", issue_serving(ca, default_targets("c")[0].request, NOW),
                                           ca.cert_pem))
    assert oct((folder / "tls.key").stat().st_mode & 0o777) == "0o600"


def test_the_webhook_fills_in_its_own_ca_bundle_and_follows_a_new_ca(real, tmp_path):
    from central.admission.webhookconfig import CaBundleInjector
    from central.certs.command import WEBHOOK_CONFIGURATIONS

    ca_file = tmp_path / "ca.crt"
    injector = CaBundleInjector(real.kube, str(ca_file), WEBHOOK_CONFIGURATIONS)
    injector.sync()
    assert "No such file" in injector.problem
    ca_file.write_bytes(b"CA-1")
    injector.sync()
    assert "404" in injector.problem  # the configurations are not there yet: retried, not fatal
    real.put(webhook_configuration("MutatingWebhookConfiguration", "caldera-mutate"))
    real.put(webhook_configuration("ValidatingWebhookConfiguration", "caldera-validate"))
    injector.sync()
    assert injector.problem is None
    ca_file.write_bytes(b"CA-2")
    injector.sync()
    hooks = real.kube.get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/caldera-mutate")
    assert {w["clientConfig"]["caBundle"] for w in hooks["webhooks"]} == {base64.b64encode(b"CA-2").decode()}
    for hook in hooks["webhooks"]:  # a re-apply of daemonset/ writes back its empty caBundle
        hook["clientConfig"]["caBundle"] = ""
    real.kube.request("PUT", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/caldera-mutate",
                      body=hooks)
    injector.sync()  # the same CA file: filled in again all the same
    hooks = real.kube.get("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/caldera-mutate")
    assert {w["clientConfig"]["caBundle"] for w in hooks["webhooks"]} == {base64.b64encode(b"CA-2").decode()}


def test_an_unreachable_api_server_is_one_line_and_exit_1(tmp_path, capsys):
    import yaml

    from central.cli import main
    from tests.ports import free_port

    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}],
        "users": [{"name": "x", "user": {"token": "t"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}]}))
    assert main(["certs", "--kubeconfig", str(kubeconfig)]) == 1
    assert "caldera certs: error: cannot reach the API server" in capsys.readouterr().err


def test_the_webhook_writes_its_scheduler_name_into_the_shipped_pods_match_condition(real, tmp_path):
    """daemonset/'s own configuration says 'volcano'; a webhook run with --scheduler-name
    batch-x makes the apiserver send batch-x's pods instead (the CEL still compiles), and an
    apply of the manifests writing 'volcano' back is undone on the next pass."""
    from central.admission.webhookconfig import POD_WEBHOOK, CaBundleInjector
    from central.certs.command import WEBHOOK_CONFIGURATIONS
    from central.localcluster.install import kustomization_objects, repo_manifests

    [shipped] = [o for o in kustomization_objects(repo_manifests()) if o["kind"] == "ValidatingWebhookConfiguration"]
    real.put(shipped)
    real.put(webhook_configuration("MutatingWebhookConfiguration", "caldera-mutate"))
    url = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/caldera-validate"
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(b"CA")
    injector = CaBundleInjector(real.kube, str(ca_file), WEBHOOK_CONFIGURATIONS, scheduler_name="batch-x")

    def conditions() -> dict[str, list[str]]:
        return {w["name"]: [c["expression"] for c in w.get("matchConditions") or []]
                for w in real.kube.get(url)["webhooks"]}

    injector.sync()
    assert injector.problem is None
    after = conditions()
    [pods] = after[POD_WEBHOOK]
    assert "object.spec.schedulerName == 'batch-x'" in pods and "'volcano'" not in pods
    assert pods.replace("'batch-x'", "'volcano'") == " ".join(
        c["expression"] for w in shipped["webhooks"] if w["name"] == POD_WEBHOOK for c in w["matchConditions"])
    version = real.kube.get(url)["metadata"]["resourceVersion"]
    injector.sync()
    assert real.kube.get(url)["metadata"]["resourceVersion"] == version  # nothing to write
    current = real.kube.get(url)
    for hook in current["webhooks"]:
        for condition in hook.get("matchConditions") or []:
            condition["expression"] = condition["expression"].replace("'batch-x'", "'volcano'")
    real.kube.request("PUT", url, body=current)  # as `kubectl apply -k daemonset/` would
    injector.sync()
    assert conditions() == after
