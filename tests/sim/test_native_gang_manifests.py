"""`caldera simulate` reads Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1) as the
scheduler does with --native-podgroups: the pods that name one are placed whole or not at all."""

from __future__ import annotations

from central.cli import main


def _manifests(tmp_path) -> str:
    docs = [f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus: {{allocatable: {{cpu: '4', memory: 8Gi}}}}"
            for i in (1, 2)]
    for group, cpu in (("fits", "2"), ("big", "3")):  # 3 x 2 CPUs fit on 2 x 4 CPUs; 3 x 3 CPUs do not
        docs.append(f"apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {{name: {group}, namespace: ns}}\n"
                    f"spec: {{schedulingPolicy: {{gang: {{minCount: 3}}}}}}")
        for i in range(3):
            docs.append(f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {group}-{i}, namespace: ns}}\nspec:\n"
                        f"  schedulerName: volcano\n  schedulingGroup: {{podGroupName: {group}}}\n"
                        f"  containers: [{{name: c, resources: {{requests: {{cpu: '{cpu}'}}}}}}]")
    path = tmp_path / "cluster.yaml"
    path.write_text("\n---\n".join(docs) + "\n")
    return str(path)


def test_a_native_gang_that_fits_is_bound_and_one_that_does_not_binds_nothing(tmp_path, capsys):
    assert main(["simulate", "--now", "2026-01-05T00:00:00Z", "--manifests", _manifests(tmp_path), "--details"]) == 0
    lines = capsys.readouterr().out.splitlines()
    bound = sorted(line.split()[0] for line in lines if line.startswith("ns/") and " n" in line and "-" in line
                   and line.split()[1] in ("n1", "n2"))
    assert bound == ["ns/fits-0", "ns/fits-1", "ns/fits-2"]
    assert any(line.split()[:5] == ["Pods", "3", "bound,", "3", "pending"] for line in lines)


def test_a_native_podgroup_without_a_policy_is_refused_naming_the_field(tmp_path, capsys):
    path = tmp_path / "bad.yaml"
    path.write_text("apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: ns}\n"
                    "spec: {}\n")
    assert main(["simulate", "--manifests", str(path)]) == 2
    assert "PodGroup ns/g: spec.schedulingPolicy: one of basic or gang is required" in capsys.readouterr().err
