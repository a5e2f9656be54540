"""The install manifests under daemonset/ as tests read them: the objects, the RBAC each
ServiceAccount is granted, and each Deployment's arguments as its command parses them."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any

import yaml

from central.model.fields import YAML_LOADER

ROOT = Path(__file__).resolve().parents[1] / "daemonset"


def documents() -> list[dict[str, Any]]:
    """Every object the kustomization installs, in its order."""
    kustomization = yaml.safe_load((ROOT / "kustomization.yaml").read_text())
    docs = []
    for name in kustomization["resources"]:
        docs += [d for d in yaml.load_all((ROOT / name).read_text(), Loader=YAML_LOADER) if d]  # noqa: S506
    return docs


def by_kind(kind: str) -> dict[str, dict[str, Any]]:
    """The installed objects of `kind`, by name."""
    return {d["metadata"]["name"]: d for d in documents() if d["kind"] == kind}


def allowed(account: str) -> set[tuple[str, str, str]]:
    """(group, resource, verb) granted to the service account by every role bound to it, on
    any object of the kind (a rule limited to named objects, `resourceNames`, is left out)."""
    roles = {(d["kind"], d["metadata"]["name"]): d for d in documents() if d["kind"] in ("Role", "ClusterRole")}
    grants = set()
    for binding in documents():
        if binding["kind"] in ("RoleBinding", "ClusterRoleBinding") and any(
                s["name"] == account for s in binding["subjects"]):
            for rule in roles[(binding["roleRef"]["kind"], binding["roleRef"]["name"])]["rules"]:
                if rule.get("resourceNames"):
                    continue
                grants |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return grants


COMMANDS = {"caldera-scheduler": "central.scheduler.command", "caldera-controllers": "central.controllers.loops.command",
            "caldera-admission": "central.admission.webhook"}


def parsed_args(name: str, objects: list[dict[str, Any]] | None = None) -> argparse.Namespace:
    """The Deployment's args as its command reads them, each $(VAR) filled in from its env as
    a kubelet does, from the ConfigMaps among `objects` (default: daemonset/'s)."""
    from central.localcluster.podrunner import expand

    objects = documents() if objects is None else objects
    [deployment] = [o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    configmaps = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ConfigMap"}
    env = {}
    for var in container.get("env") or []:
        ref = (var.get("valueFrom") or {}).get("configMapKeyRef")
        if ref:
            env[var["name"]] = configmaps[ref["name"]]["data"][ref["key"]]
    parser = argparse.ArgumentParser(exit_on_error=False)
    importlib.import_module(COMMANDS[name]).add_arguments(parser)
    return parser.parse_args([expand(arg, env) for arg in container.get("args") or []])
