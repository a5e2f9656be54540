"""The suites' scheduler ConfigMap kept in the scheduler's file, as a kubelet keeps a volume."""

from __future__ import annotations

from central.conformance.confsync import CONFIGMAP, KEY, NAMESPACE, ConfigMapSync, configured_text, write_if_changed


class FakeKube:
    def __init__(self, data):
        self.data = data
        self.urls = []

    def get_or_none(self, url):
        self.urls.append(url)
        return None if self.data is None else {"data": self.data}


def test_the_file_is_replaced_only_when_the_text_changes(tmp_path):
    target = tmp_path / "config" / "volcano-scheduler.conf"
    target.parent.mkdir()
    assert write_if_changed(target, "actions: allocate\n")
    before = target.stat().st_ino
    assert not write_if_changed(target, "actions: allocate\n")
    assert target.stat().st_ino == before
    assert write_if_changed(target, "actions: enqueue, allocate\n")
    assert target.read_text() == "actions: enqueue, allocate\n"
    # nothing is left in the watched folder but the file itself
    assert [p.name for p in target.parent.iterdir()] == ["volcano-scheduler.conf"]


def test_a_missing_configmap_or_key_leaves_the_file():
    assert configured_text(None) is None
    assert configured_text({"data": {"other": "x"}}) is None
    assert configured_text({"data": {KEY: "actions: allocate"}}) == "actions: allocate"


def test_sync_reads_the_integration_configmap_and_counts_writes(tmp_path):
    target = tmp_path / "conf"
    target.write_text("old")
    kube = FakeKube({KEY: "new"})
    sync = ConfigMapSync(kube, target)
    assert sync.sync_once() and target.read_text() == "new"
    assert not sync.sync_once()
    kube.data = None
    assert not sync.sync_once() and target.read_text() == "new"
    assert sync.writes == 1
    assert kube.urls[0] == f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP}"


def test_the_thread_follows_edits_until_stopped(tmp_path):
    import time
    target = tmp_path / "conf"
    kube = FakeKube({KEY: "one"})
    sync = ConfigMapSync(kube, target, interval=0.01).start()
    try:
        assert target.read_text() == "one"  # start() syncs once before returning
        kube.data = {KEY: "two"}
        deadline = time.monotonic() + 5
        while target.read_text() != "two" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert target.read_text() == "two"
    finally:
        sync.stop()
    kube.data = {KEY: "three"}
    time.sleep(0.05)
    assert target.read_text() == "two"
