"""`caldera simulate`'s table: a summary that stays short, capped details, every pending pod explained."""

from __future__ import annotations

from central.cli import main


def _cluster(tmp_path, pods: int, foreign: int = 0) -> str:
    docs = ["apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}"]
    for i in range(pods):  # 1 CPU each: 4 fit, the rest wait with one and the same reason
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: p{i:02d}, namespace: ns}}\nspec:\n"
                    f"  schedulerName: volcano\n  containers: [{{name: c, resources: {{requests: {{cpu: '1'}}}}}}]")
    for i in range(foreign):
        docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: other{i}, namespace: ns}}\nspec:\n"
                    f"  containers: [{{name: c, resources: {{requests: {{cpu: '1'}}}}}}]")
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join(docs) + "\n")
    return str(path)


def simulate(capsys, *args: str) -> list[str]:
    assert main(["simulate", "--now", "2026-01-05T00:00:00Z", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_summary_groups_reasons_and_details_are_capped(tmp_path, capsys):
    lines = simulate(capsys, "--manifests", _cluster(tmp_path, 30, foreign=2))
    assert any("2 pending pods left to other schedulers (default-scheduler)" in line for line in lines)
    assert any(line.split()[:5] == ["Pods", "4", "bound,", "26", "pending"] for line in lines)
    reason_rows = [line for line in lines if line.strip().startswith("26 ")]
    assert len(reason_rows) == 1  # 26 pods, one reason, one row
    assert any(line.strip() == "... 6 more (--details or -o wide for all)" for line in lines)  # 26 pending, 20 shown
    assert all(line == line.rstrip() for line in lines)  # piped: no trailing blanks
    (tmp_path / "big").mkdir()
    assert len(simulate(capsys, "--manifests", _cluster(tmp_path / "big", 300, foreign=2))) == len(lines)  # bounded


def test_details_wide_and_quiet(tmp_path, capsys):
    cluster = _cluster(tmp_path, 30)
    full = simulate(capsys, "--manifests", cluster, "--details")
    # every row: 4 binds, 30 PodGroups, 26 of them unschedulable, 26 pending pods
    assert sum(line.startswith("ns/p") for line in full) == 4 + 30 + 26 + 26
    assert simulate(capsys, "--manifests", cluster, "-o", "wide") == full
    quiet = simulate(capsys, "--manifests", cluster, "--quiet")
    assert not any(line.startswith("Binds") for line in quiet) and any(line.startswith("Queues") for line in quiet)


def test_details_with_json_is_refused(capsys):
    assert main(["simulate", "-o", "json", "--details"]) == 2
    assert "--details: applies to table output" in capsys.readouterr().err


def test_deserved_is_the_share_proportion_computed(tmp_path, capsys):
    """Weights 1 and 3 over 8 CPUs, both queues asking for more: proportion gives 2 and 6,
    whatever the Queues' own spec.deserved says."""
    docs = ["apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '8', memory: 8Gi}}"]
    for queue, weight in (("light", 1), ("heavy", 3)):
        docs.append(f"apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {{name: {queue}}}\n"
                    f"spec: {{weight: {weight}, deserved: {{cpu: '1'}}}}")
        for i in range(10):
            docs.append(f"apiVersion: v1\nkind: Pod\nmetadata:\n  name: {queue}{i}\n  namespace: ns\n"
                        f"  annotations: {{scheduling.volcano.sh/queue-name: {queue}}}\nspec:\n"
                        f"  schedulerName: volcano\n  containers: [{{name: c, resources: {{requests: {{cpu: '1'}}}}}}]")
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join(docs) + "\n")
    lines = simulate(capsys, "--manifests", str(path))
    assert any("DESERVED (proportion)" in line for line in lines)
    rows = {line.split()[0]: line.split() for line in lines if line.split()[:1] in (["light"], ["heavy"])}
    assert rows["light"][2] == "cpu=2" and rows["heavy"][2] == "cpu=6"


def _reason_rows(lines: list[str]) -> list[str]:
    """The grouped reasons of the summary: from the PENDING BECAUSE header to the Queues table."""
    start = next(i for i, line in enumerate(lines) if "PENDING BECAUSE" in line)
    end = next(i for i, line in enumerate(lines) if line.startswith("Queues"))
    return lines[start + 1:end]


def test_grouped_reason_names_its_podgroup(tmp_path, capsys):
    """Pods of several PodGroups waiting alike read "Its PodGroup ..."; the pods of one PodGroup
    read its name; no placeholder is ever printed."""
    several = simulate(capsys, "--manifests", _cluster(tmp_path, 6))
    assert any(line.split()[:3] == ["2", "Its", "PodGroup"] for line in _reason_rows(several))
    cluster = tmp_path / "gang.yaml"
    cluster.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}\n---\n"
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: small}\n"
        "spec: {weight: 1, capability: {cpu: '2'}}\n---\n"
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: big, namespace: ns}\n"
        "spec:\n  queue: small\n  minAvailable: 3\n  tasks:\n  - name: w\n    replicas: 3\n    template:\n"
        "      spec: {containers: [{name: c, image: x, resources: {requests: {cpu: '1'}}}]}\n")
    one = simulate(capsys, "--manifests", str(cluster))
    rows = _reason_rows(one)
    assert rows[0].split()[:3] == ["3", "PodGroup", "ns/big"]
    # more than the queue's capability: never, with the numbers, not "quota insufficient"
    assert "it can never be admitted (cpu: the job needs 3, more than the queue's capability 2)" in rows[0]
    assert not any("<" in line for line in several + one)
    assert any(line.split() == ["1", "node,", "3", "queues,", "1", "podgroup,", "3", "pods"] for line in one)


def test_queue_table_counts_inqueue(tmp_path, capsys):
    """A cycle admits and binds: the PodGroups are Inqueue (their pods not running yet), so the
    queue shows them under INQUEUE, not as 0 RUNNING and nothing else."""
    lines = simulate(capsys, "--manifests", _cluster(tmp_path, 6))
    header = next(line.split() for line in lines if "CAPABILITY" in line)
    assert header[-3:] == ["PENDING", "INQUEUE", "RUNNING"]
    default = next(line.split() for line in lines if line.split()[:1] == ["default"])
    assert default[-3:] == ["2", "4", "0"]


def test_until_progress_is_one_bar_cleared_at_the_end(capsys, monkeypatch):
    """The bar of a run over simulated time is central/progress.py's: one line redrawn in place
    across the configurations and erased when done, so no stale percentage stays above the
    result; nothing on stderr when it is not a terminal."""
    from pathlib import Path

    here = Path(__file__).resolve().parents[2] / "examples" / "experiments" / "gang-deadlock"
    argv = ["simulate", "--manifests", str(here / "cluster.yaml"), "--manifests", str(here / "jobs-gang.yaml"),
            "--until", "1h", "--config", str(here.parent / "task-topology" / "spread.conf"),
            "--config", str(here.parent / "task-topology" / "task-topology.conf")]
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert main(argv) == 0
    piped = capsys.readouterr()
    assert piped.err == ""
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich's switch: treat the stream as a terminal
    assert main(argv) == 0
    terminal = capsys.readouterr()
    # drawn (rich samples the description 10 times a second, so which configuration's label a
    # frame shows depends on the machine's speed: only the first frame is certain)
    assert "simulating" in terminal.err
    assert "\n" not in terminal.err.split("\x1b[?25h")[0].rstrip("\n")  # redrawn in place: one line
    assert terminal.err.endswith("\x1b[2K")  # and that line erased at the end
    assert terminal.out == piped.out
