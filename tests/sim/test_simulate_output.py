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
    assert any("2 pending pod(s) left to other schedulers (default-scheduler)" in line for line in lines)
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
