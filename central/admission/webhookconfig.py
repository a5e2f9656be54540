"""The webhook's own configurations, kept current by the webhook: the caBundle of its
Mutating/ValidatingWebhookConfigurations, and the scheduler name in the pods webhook's
matchCondition (`caldera webhook --ca-bundle-file`).
"""

from __future__ import annotations

import logging
import re
import threading

from central.certs.command import ADMISSION_REGISTRATION, inject_ca_bundle, retry_on_conflict
from central.kube.client import ApiError, KubeClient, path

log = logging.getLogger(__name__)

POD_WEBHOOK = "validatepod.caldera.sh"  # daemonset/admission.yaml's pods webhook (never one of Volcano's names)
_SCHEDULER_TEST = re.compile(r"object\.spec\.schedulerName == '(?:[^'\\]|\\.)*'")


def follow_scheduler_name(client: KubeClient, configuration: str, scheduler_name: str) -> bool:
    """Make the pods webhook's matchConditions of ValidatingWebhookConfiguration `configuration`
    send the pods of `scheduler_name` (the `object.spec.schedulerName == '...'` test), so the
    manifest's literal never has to be kept in step with --scheduler-name by hand. True if it
    was rewritten; a configuration without that test is left alone."""
    literal = "'" + scheduler_name.replace("\\", "\\\\").replace("'", "\\'") + "'"
    where = path(ADMISSION_REGISTRATION, "validatingwebhookconfigurations", name=configuration)

    def step() -> bool:
        obj = client.get(where)
        changed = False
        for webhook in obj.get("webhooks") or []:
            if webhook.get("name") != POD_WEBHOOK:
                continue
            for condition in webhook.get("matchConditions") or []:
                old = condition.get("expression")
                if not isinstance(old, str):  # nothing of ours to follow (the API server refuses it anyway)
                    continue
                new = _SCHEDULER_TEST.sub(lambda _: f"object.spec.schedulerName == {literal}", old)
                if new != old:
                    condition["expression"] = new
                    changed = True
        if changed:
            client.request("PUT", where, body=obj)
        return changed
    return retry_on_conflict(step)


class CaBundleInjector:
    """Keeps the webhook configurations' caBundle equal to `ca_file` and, with `scheduler_name`,
    the pods webhook's matchCondition on that scheduler, so no one patches them by hand. Both
    are checked every period (each written only when it differs): the file may change (a renewed
    CA), and a re-apply of the manifests writes back their empty caBundle and 'volcano'.
    Failures are logged once per new message and retried; until the first success /readyz
    stays not ready."""

    def __init__(self, client: KubeClient, ca_file: str, configurations: dict[str, str], url: str = "",
                 period_s: float = 30.0, scheduler_name: str = ""):
        self.client, self.ca_file, self.configurations, self.url = client, ca_file, configurations, url
        self.period_s = period_s
        self.scheduler_name = scheduler_name
        self.injected: bytes | None = None
        self.problem: str | None = "caBundle not injected yet"
        self._stop = threading.Event()

    def sync(self) -> None:
        try:
            with open(self.ca_file, "rb") as handle:
                ca = handle.read()
            if inject_ca_bundle(self.client, ca, self.configurations, self.url) or ca != self.injected:
                log.info("caBundle of %s: current", ", ".join(self.configurations.values()))
            self.injected = ca
            validating = self.configurations.get("validatingwebhookconfigurations")
            if self.scheduler_name and validating and follow_scheduler_name(self.client, validating,
                                                                            self.scheduler_name):
                log.info("pods webhook of %s: now sends the pods of scheduler %s", validating, self.scheduler_name)
            self.problem = None
        except (OSError, ApiError) as err:
            message = f"cannot fill in the caBundle from {self.ca_file} or the scheduler name: {err}"
            if message != self.problem:
                log.error("%s", message)
            self.problem = message

    def start(self) -> "CaBundleInjector":
        def loop() -> None:
            while not self._stop.is_set():
                self.sync()
                self._stop.wait(5.0 if self.problem else self.period_s)
        threading.Thread(target=loop, daemon=True, name="ca-bundle").start()
        return self

    def stop(self) -> None:
        self._stop.set()
