"""The install manifests as a product: one image at the package's version, Pod Security, the
certificates Job, the admission policies that narrow RBAC."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Iterator

import pytest
import yaml

from tests.manifests import by_kind, documents

ROOT = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
IMAGE = "ghcr.io/caldera/caldera"
WORKLOADS = ("Deployment", "DaemonSet", "Job", "CronJob")


def pod_specs() -> Iterator[tuple[str, dict[str, Any]]]:
    for doc in documents():
        if doc["kind"] in WORKLOADS:
            template = doc["spec"]["jobTemplate"]["spec"]["template"] if doc["kind"] == "CronJob" \
                else doc["spec"]["template"]
            yield f"{doc['kind']}/{doc['metadata']['name']}", template["spec"]


def test_every_container_runs_the_one_image_at_the_package_version():
    [override] = yaml.safe_load((ROOT / "daemonset" / "kustomization.yaml").read_text())["images"]
    assert (override["name"], override["newTag"]) == (IMAGE, VERSION)
    images = {c["image"] for _, spec in pod_specs() for c in spec["containers"] + spec.get("initContainers", [])}
    assert images == {f"{IMAGE}:{VERSION}"}


def test_every_pod_but_the_agent_meets_the_restricted_pod_security_standard():
    for name, spec in pod_specs():
        if name == "DaemonSet/caldera-nodeagent":
            continue
        pod_security = spec.get("securityContext") or {}
        assert pod_security.get("runAsNonRoot") is True, name
        assert pod_security.get("seccompProfile") == {"type": "RuntimeDefault"}, name
        assert not {"hostNetwork", "hostPID", "hostIPC"} & spec.keys(), name
        allowed = {"name", "secret", "configMap", "projected", "emptyDir"}  # no hostPath
        assert all(set(v) <= allowed for v in spec.get("volumes", [])), name
        for container in spec["containers"]:
            security = container["securityContext"]
            assert security["allowPrivilegeEscalation"] is False and security["capabilities"] == {"drop": ["ALL"]}, name
            assert security.get("readOnlyRootFilesystem") is True, name


def test_the_namespace_enforces_what_its_pods_need_and_audits_restricted():
    labels = by_kind("Namespace")["caldera-system"]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"  # the agent: host paths
    assert labels["pod-security.kubernetes.io/audit"] == labels["pod-security.kubernetes.io/warn"] == "restricted"


def test_the_agent_is_unprivileged_with_no_capabilities_and_no_secret_of_the_node():
    spec = dict(pod_specs())["DaemonSet/caldera-nodeagent"]
    [agent] = spec["containers"]
    assert agent["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert agent["securityContext"]["privileged"] is False
    host_paths = {v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    assert "/etc/caldera/agent-tls" not in host_paths  # identity is a projected token now
    projected = [v for v in spec["volumes"] if "projected" in v]
    assert projected and all("secret" not in s or s["secret"]["items"] == [{"key": "ca.crt", "path": "ca.crt"}]
                             for v in projected for s in v["projected"]["sources"])


def test_certs_job_and_cronjob_run_the_same_pod_with_a_role_limited_to_three_secrets():
    job = by_kind("Job")["caldera-certs"]["spec"]["template"]
    cron = by_kind("CronJob")["caldera-certs-renew"]["spec"]["jobTemplate"]["spec"]["template"]
    assert job == cron
    assert job["spec"]["containers"][0]["command"] == ["caldera", "certs"]
    role = by_kind("Role")["caldera-certs"]
    named = [r for r in role["rules"] if "resourceNames" in r]
    assert {n for r in named for n in r["resourceNames"]} == {"caldera-ca", "caldera-admission-tls",
                                                             "caldera-scheduler-tls"}
    assert [r["verbs"] for r in role["rules"] if "resourceNames" not in r] == [["create"]]


def test_certs_defaults_match_the_manifests():
    from central.certs import command as certs

    secrets = {v["secret"]["secretName"] for d in documents() if d["kind"] == "Deployment"
               for v in d["spec"]["template"]["spec"].get("volumes", []) if "secret" in v}
    assert {certs.WEBHOOK_SECRET, certs.SCHEDULER_SECRET} <= secrets
    services = {d["metadata"]["name"] for d in documents() if d["kind"] == "Service"}
    assert {certs.WEBHOOK_SERVICE, certs.SCHEDULER_SERVICE} <= services
    assert set(certs.WEBHOOK_CONFIGURATIONS.values()) == set(by_kind("MutatingWebhookConfiguration")) | set(
        by_kind("ValidatingWebhookConfiguration"))


def test_every_admission_policy_is_bound_and_names_an_account_that_exists():
    policies, bindings = by_kind("ValidatingAdmissionPolicy"), by_kind("ValidatingAdmissionPolicyBinding")
    assert set(policies) == {b["spec"]["policyName"] for b in bindings.values()}
    assert all(b["spec"]["validationActions"] == ["Deny"] for b in bindings.values())
    accounts = {f"system:serviceaccount:{d['metadata']['namespace']}:{d['metadata']['name']}"
                for d in documents() if d["kind"] == "ServiceAccount"}
    for policy in policies.values():
        assert policy["spec"]["failurePolicy"] == "Fail"
        [condition] = policy["spec"]["matchConditions"]
        assert condition["expression"].split("== ")[1].strip("'") in accounts


@pytest.mark.parametrize("account, forbidden", [
    pytest.param("caldera-controllers", {("", "secrets", v) for v in ("get", "list", "watch", "update")},
                 id="controllers-never-read-secrets"),
    # a scaled job's svc host lists are rewritten by an unconditional update, which
    # policies.yaml judges on the old object too (a Job controls it and stays its owner)
    pytest.param("caldera-controllers", {("", "configmaps", v) for v in ("get", "list", "watch")},
                 id="controllers-never-read-configmaps"),
    pytest.param("caldera-scheduler", {("", "secrets", "get"), ("", "configmaps", "get")}, id="scheduler"),
    pytest.param("caldera-nodeagent", {("", "secrets", "get"), ("", "nodes", "update")}, id="agent"),
])
def test_least_privilege(account, forbidden):
    from tests.manifests import allowed
    assert not allowed(account) & forbidden
