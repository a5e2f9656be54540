"""Every kind of bad input gets one clear line naming file, object and field, and exit 2."""

import json
import subprocess
import sys
import textwrap

import pytest

from central.cli import main
from central.errors import InputError
from central.scheduler import load_config

NODE = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '4', memory: 8Gi}}\n"


def run_simulate(tmp_path, manifest: str, *extra: str):
    path = tmp_path / "cluster.yaml"
    path.write_text(textwrap.dedent(manifest))
    return main(["simulate", "--manifests", str(path), *extra])


@pytest.mark.parametrize("manifest, where", [
    pytest.param(NODE + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  schedulerName: volcano\n"
                 "  containers: [{name: c, resources: {requests: {cpu: 2 cores}}}]\n",
                 "Pod ns/p: spec.containers[0].resources.requests.cpu: invalid quantity '2 cores'", id="pod-quantity"),
    pytest.param("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {memory: lots}}\n",
                 "Node n1: status.allocatable.memory", id="node-quantity"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata: {name: pg}\nspec: {minMember: two}\n",
                 "PodGroup default/pg: spec.minMember: expected an integer", id="podgroup-minmember"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {weight: -1}\n",
                 "Queue q: spec.weight: must not be negative", id="queue-weight"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                 "spec: {capability: {cpu: 2}, guarantee: {resource: {cpu: 4}}}\n",
                 "Queue q: spec.guarantee.resource.cpu: 4 exceeds spec.capability.cpu (2)", id="guarantee-over-capability"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                 "spec: {capability: {cpu: 2}, deserved: {cpu: 3}}\n",
                 "Queue q: spec.deserved.cpu: 3 exceeds spec.capability.cpu (2)", id="deserved-over-capability"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec: {parent: nowhere}\n",
                 "Queue q: spec.parent: parent queue 'nowhere' does not exist", id="missing-parent"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: a}\nspec: {parent: b}\n---\n"
                 "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: b}\nspec: {parent: a}\n",
                 "spec.parent: queue tree has a cycle", id="queue-cycle"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: parent}\nspec: {capability: {cpu: 4}}\n---\n"
                 "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: child}\nspec: {parent: parent, capability: {cpu: 8}}\n",
                 "Queue child: spec.capability.cpu: 8 exceeds parent queue parent's spec.capability.cpu (4)", id="child-capability"),
    pytest.param("apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
                 "  - {name: a, replicas: 1, template: {spec: {containers: [{name: c}]}}}\n"
                 "  - {name: b, replicas: many, template: {spec: {containers: [{name: c}]}}}\n",
                 "Job default/j: spec.tasks[1].replicas", id="job-replicas"),
    pytest.param("apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\n"
                 "spec: {affinity: {nodeGroupAffinity: {requiredDuringSchedulingIgnoredDuringExecution: group1}}}\n",
                 "Queue q: spec.affinity.nodeGroupAffinity.requiredDuringSchedulingIgnoredDuringExecution: expected a list",
                 id="queue-nodegroup-affinity"),
    pytest.param("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: rq, namespace: ns}\nspec: {hard: {cpu: lots}}\n",
                 "ResourceQuota ns/rq: spec.hard.cpu: invalid quantity 'lots'", id="resourcequota-hard"),
    pytest.param("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb, namespace: ns}\n"
                 "spec: {selector: {matchExpressions: [{key: app, operator: Near}]}}\n",
                 "PodDisruptionBudget ns/pdb: spec.selector.matchExpressions[0].operator: unknown operator 'Near'", id="pdb-selector"),
    pytest.param("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: pdb, namespace: ns}\n"
                 "spec: {selector: {matchLabels: {app: a}}}\nstatus: {disruptionsAllowed: -1}\n",
                 "PodDisruptionBudget ns/pdb: status.disruptionsAllowed: must be >= 0", id="pdb-allowed"),
    pytest.param("kind: Pod\nmetadata: {}\n", "Pod default/<unnamed>: metadata.name: is required", id="no-name"),
    pytest.param("just a string\n", "document 1: expected a Kubernetes object", id="not-an-object"),
    pytest.param("kind: Node\nmetadata: {name: [unclosed\n", "malformed YAML", id="malformed-yaml"),
])
def test_bad_manifests(tmp_path, capsys, manifest, where):
    assert run_simulate(tmp_path, manifest) == 2
    err = capsys.readouterr().err
    assert "cluster.yaml" in err and where in err, err
    assert "Traceback" not in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("config, message", [
    pytest.param('actions: "enqueue, allocate, teleport"\ntiers: []', "actions: unknown action 'teleport'; valid: allocate, backfill, enqueue", id="unknown-action"),
    pytest.param('actions: allocate\ntiers:\n- plugins: [{name: gangg}]', "tiers[0].plugins[0].name: unknown plugin 'gangg'; valid:", id="unknown-plugin"),
    pytest.param('actions: allocate\ntiers:\n- plugins: [{name: gang, enableJobReady: "yes"}]', "tiers[0].plugins[0].enableJobReady: expected true or false", id="flag-type"),
    pytest.param('actions: allocate\ntiers:\n- plugins: [{name: gang, enableJobRedy: true}]', "tiers[0].plugins[0].enableJobRedy: unknown key; valid:", id="unknown-flag"),
    pytest.param('actions: [allocate]\ntiers: []', "actions: expected a comma-separated string", id="actions-type"),
    pytest.param('actions: allocate\ntiers: {plugins: []}', "tiers: expected a list", id="tiers-type"),
    pytest.param('actions: allocate\ntier: []', "tier: unknown key; valid: actions, configurations, metrics, tiers", id="unknown-top-key"),
    pytest.param('actions: allocate\ntiers: [\n', "malformed YAML", id="malformed"),
    pytest.param('actions: preempt\ntiers: []\nconfigurations:\n- {name: preempt, arguments: {enableTopologyAwarePremption: true}}',
                 "configurations[0].arguments.enableTopologyAwarePremption: unknown argument of preempt", id="unknown-action-argument"),
    pytest.param('actions: preempt\ntiers: []\nconfigurations:\n- {name: preempt, arguments: {minCandidateNodesAbsolute: many}}',
                 "configurations[0].arguments.minCandidateNodesAbsolute: expected a non-negative integer", id="action-argument-type"),
    pytest.param('actions: allocate\ntiers:\n- plugins: [{name: proportion}, {name: drf, enableHierarchy: true}]',
                 "proportion and drf with enableHierarchy cannot share a tier", id="hdrf-with-proportion"),
    pytest.param('actions: allocate\ntiers:\n- plugins: [{name: binpack, arguments: {binpack.resources: nvidia.com/gpu, '
                 'binpack.resources.nvidia.com/gpu: -2}}]',
                 "arguments.binpack.resources.nvidia.com/gpu: must not be negative, got -2", id="binpack-resource-weight"),
])
def test_bad_configs(config, message):
    with pytest.raises(InputError) as err:
        load_config(config, "sched.conf")
    assert message in str(err.value) and str(err.value).startswith("sched.conf: ")


def test_bad_plugin_argument_is_reported_by_simulate(tmp_path, capsys):
    conf = tmp_path / "sched.conf"
    conf.write_text("actions: allocate\ntiers:\n- plugins: [{name: binpack, arguments: {binpack.weight: heavy}}]\n")
    assert run_simulate(tmp_path, NODE, "--config", str(conf)) == 2
    assert "plugin binpack: arguments.binpack.weight: expected a number within ±1e+09, got 'heavy'" in capsys.readouterr().err


@pytest.mark.parametrize("plugin, message", [
    pytest.param("{name: binpack, arguments: {binpack.wieght: 10}}", "plugin binpack: arguments.binpack.wieght: unknown argument; valid: binpack.cpu",
                 id="binpack-typo"),
    pytest.param("{name: gang, arguments: {minMember: 2}}", "plugin gang: arguments.minMember: unknown argument; valid: none",
                 id="no-arguments"),
    pytest.param("{name: nodeorder, arguments: {leastrequested.weight: 2, mostrequested: 1}}",
                 "plugin nodeorder: arguments.mostrequested: unknown argument", id="nodeorder-typo"),
])
def test_unknown_plugin_arguments_are_refused(tmp_path, capsys, plugin, message):
    conf = tmp_path / "sched.conf"
    conf.write_text(f"actions: allocate\ntiers:\n- plugins: [{plugin}]\n")
    assert run_simulate(tmp_path, NODE, "--config", str(conf)) == 2
    assert message in capsys.readouterr().err


def test_missing_files(tmp_path, capsys):
    assert main(["simulate", "--manifests", str(tmp_path / "nope.yaml")]) == 2
    assert "no such file or directory" in capsys.readouterr().err
    assert main(["simulate", "--config", str(tmp_path / "none.conf")]) == 2
    assert "none.conf: cannot read" in capsys.readouterr().err


def test_console_script_exit_code_and_message(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Node\nmetadata: {name: n}\nstatus: {allocatable: {cpu: x}}\n")
    proc = subprocess.run([sys.executable, "-m", "caldera", "simulate", "--manifests", str(bad), "--output", "json"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Node n: status.allocatable.cpu: invalid quantity 'x'" in proc.stderr


def test_default_run_prints_one_json_object():
    proc = subprocess.run([sys.executable, "-m", "caldera", "simulate", "--output", "json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) >= {"binds", "evictions", "pipelined", "podgroups"}
    assert out["binds"]


@pytest.mark.parametrize("value, expected", [("'true'", True), ("'True'", True), ("'TRUE'", True), ("'t'", True),
                                             ("'1'", True), ("'false'", False), ("'F'", False), ("'0'", False)])
def test_quoted_booleans_in_arguments_are_read_as_volcanos_getbool_reads_them(value, expected):
    """Volcano's test helpers write every argument as a string; its GetBool parses them with
    Go's strconv.ParseBool."""
    conf = load_config(f"actions: preempt\ntiers:\n- plugins: [{{name: predicates, arguments: {{predicate.NodeAffinityEnable: {value}}}}}]\n"
                       f"configurations:\n- {{name: preempt, arguments: {{enableTopologyAwarePreemption: {value}}}}}",
                       "sched.conf")
    assert conf.action_settings("preempt")["enableTopologyAwarePreemption"] is expected
    assert conf.plugin("predicates").settings["NodeAffinity"] is expected


@pytest.mark.parametrize("config, message", [
    pytest.param("tiers: []\nconfigurations:\n- {name: preempt, arguments: {enableTopologyAwarePreemption: 'yes'}}",
                 "configurations[0].arguments.enableTopologyAwarePreemption: expected true or false", id="action-yes"),
    pytest.param("tiers:\n- plugins: [{name: predicates, arguments: {predicate.NodeAffinityEnable: 'tRuE'}}]",
                 "arguments.predicate.NodeAffinityEnable: expected true or false", id="plugin-mixed-case"),
    pytest.param("tiers:\n- plugins: [{name: binpack, arguments: {binpack.weight: 2.5}}]",
                 "arguments.binpack.weight: expected a number", id="int-with-a-fraction"),
])
def test_arguments_volcanos_getters_cannot_read_are_refused(config, message):
    with pytest.raises(InputError) as err:
        load_config("actions: preempt\n" + config, "sched.conf")
    assert message in str(err.value)
