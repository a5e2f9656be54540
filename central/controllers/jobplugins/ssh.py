"""The `ssh` job plugin: password-less ssh between a job's pods (what MPI launchers need).

On job add it creates Secret `<job>-ssh` holding an RSA-2048 key pair (generated here with
`cryptography`, or the user's own via `--ssh-private-key`/`--ssh-public-key`), the public
key as `authorized_keys`, and an ssh `config` with one Host entry per pod. Every pod mounts
the Secret at `--ssh-key-file-path` (default /root/.ssh) with mode 0600, which sshd requires.
The key is generated once: the job controller records the plugin in
`status.controlledResources` and does not call on_job_add again.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from central.controllers.jobplugins.base import JobPlugin, add_volume, host, job_name, object_meta, pod_name, tasks

SECRET_MODE = 0o600


def generate_key_pair() -> tuple[str, str]:
    """(private key in OpenSSH PEM, public key in authorized_keys format), RSA-2048."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, public


class SshPlugin(JobPlugin):
    name = "ssh"
    flags = {"ssh-key-file-path": "/root/.ssh", "ssh-private-key": "", "ssh-public-key": "", "ssh-port": "22"}
    ignored = frozenset({"no-root"})

    def secret_name(self, job: Mapping[str, Any]) -> str:
        return f"{job_name(job)}-ssh"

    def ssh_config(self, job: Mapping[str, Any]) -> str:
        port = self.int_option("ssh-port")
        lines = ["StrictHostKeyChecking no", "UserKnownHostsFile /dev/null"]
        name = job_name(job)
        for task, replicas in tasks(job):
            for i in range(replicas):
                lines += [f"Host {pod_name(name, task, i)}", f"  HostName {host(name, task, i)}", f"  Port {port}"]
        return "\n".join(lines) + "\n"

    def on_pod_create(self, job: Mapping[str, Any], pod: dict[str, Any]) -> None:
        items = [
            {"key": k, "path": k, "mode": SECRET_MODE} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")
        ]
        volume = {
            "name": self.secret_name(job),
            "secret": {"secretName": self.secret_name(job), "defaultMode": SECRET_MODE, "items": items},
        }
        add_volume(pod, volume, self.option("ssh-key-file-path"))

    def on_job_add(self, job: Mapping[str, Any]) -> list[dict[str, Any]]:
        private, public = self.option("ssh-private-key"), self.option("ssh-public-key")
        if not (private and public):
            private, public = generate_key_pair()
        files = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public, "config": self.ssh_config(job)}
        return [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "Opaque",
                "metadata": object_meta(job, self.secret_name(job)),
                "data": {k: base64.b64encode(v.encode()).decode() for k, v in files.items()},
            }
        ]

    def on_job_delete(self, job: Mapping[str, Any]) -> list[tuple[str, str]]:
        return [("Secret", self.secret_name(job))]
