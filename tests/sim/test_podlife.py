import pytest

from central.errors import InputError
from central.model import podlife
from central.model.commandrun import Run
from tests.builders import pod


def test_defaults_when_not_annotated():
    bare = {"kind": "Pod", "metadata": {"name": "p"}}
    assert podlife.pod_duration(bare) is None
    assert podlife.pod_exit_code(bare) == 0
    assert podlife.min_peers(bare) is None
    assert podlife.submit_at(bare) == 0.0
    assert podlife.cross_node_slowdown(bare) == 1.0


@pytest.mark.parametrize("read, key, value, expected", [
    pytest.param(podlife.pod_duration, podlife.DURATION, "1h30m", 5400.0, id="duration"),
    pytest.param(podlife.pod_duration, podlife.DURATION, "0s", 0.0, id="zero-duration"),
    pytest.param(podlife.pod_exit_code, podlife.EXIT_CODE, "137", 137, id="exit-code"),
    pytest.param(podlife.min_peers, podlife.MIN_PEERS, "6", 6, id="min-peers"),
    pytest.param(podlife.submit_at, podlife.SUBMIT_AT, "90s", 90.0, id="submit-at"),
    pytest.param(podlife.cross_node_slowdown, podlife.CROSS_NODE_SLOWDOWN, "1.3", 1.3, id="slowdown"),
])
def test_reads(read, key, value, expected):
    assert read(pod(namespace="ns", annotations={key: value})) == expected


@pytest.mark.parametrize("read, key, value", [
    pytest.param(podlife.pod_duration, podlife.DURATION, "soon", id="duration-word"),
    pytest.param(podlife.pod_duration, podlife.DURATION, "-5s", id="duration-negative"),
    pytest.param(podlife.pod_exit_code, podlife.EXIT_CODE, "256", id="exit-code-range"),
    pytest.param(podlife.pod_exit_code, podlife.EXIT_CODE, "x", id="exit-code-word"),
    pytest.param(podlife.min_peers, podlife.MIN_PEERS, "0", id="min-peers-zero"),
    pytest.param(podlife.submit_at, podlife.SUBMIT_AT, "tomorrow", id="submit-at-word"),
    pytest.param(podlife.cross_node_slowdown, podlife.CROSS_NODE_SLOWDOWN, "0.5", id="slowdown-below-one"),
    pytest.param(podlife.cross_node_slowdown, podlife.CROSS_NODE_SLOWDOWN, "nan", id="slowdown-nan"),
    pytest.param(podlife.pod_duration, podlife.DURATION, 5, id="not-a-string"),
])
def test_malformed_names_object_and_annotation(read, key, value):
    with pytest.raises(InputError) as err:
        read(pod(namespace="ns", annotations={key: value}))
    assert str(err.value).startswith(f"Pod ns/p: metadata.annotations[{key}]: ")


def _sh(name: str, script: str | None, **fields) -> dict:
    return {"name": name, **({"command": ["sh", "-c", script]} if script is not None else {}), **fields}


@pytest.mark.parametrize("containers, init, policy, lifetime", [
    pytest.param([_sh("a", "sleep 5")], [], "Never", Run(5.0, 0), id="one-container"),
    pytest.param([_sh("a", "sleep 2; exit 1")], [], "Never", Run(2.0, 1), id="fails"),
    pytest.param([_sh("a", "sleep 2"), _sh("b", "sleep 7")], [], "Never", Run(7.0, 0),
                 id="ends-with-the-last-container"),
    pytest.param([_sh("a", "sleep 9"), _sh("b", "exit 2")], [], "Never", Run(9.0, 2),
                 id="failed-if-any-container-failed"),
    pytest.param([_sh("a", "sleep 2"), _sh("b", None)], [], "Never", Run(None),
                 id="a-container-not-understood-runs-on"),
    pytest.param([_sh("a", "exit 1")], [], "OnFailure", Run(None), id="on-failure-restarts-a-failure"),
    pytest.param([_sh("a", "sleep 3")], [], "OnFailure", Run(3.0, 0), id="on-failure-keeps-a-success"),
    pytest.param([_sh("a", "sleep 3")], [], "Always", Run(None), id="always-restarts"),
    pytest.param([_sh("a", "sleep 3")], [_sh("i1", "sleep 2"), _sh("i2", "sleep 4")], "Never",
                 Run(9.0, 0), id="init-containers-first-in-order"),
    pytest.param([_sh("a", "sleep 3")], [_sh("i1", "exit 5")], "Never", Run(0.0, 5),
                 id="failed-init-fails-the-pod"),
    pytest.param([_sh("a", "sleep 3")], [_sh("i1", "exit 5")], "OnFailure", Run(None),
                 id="failed-init-restarts"),
    pytest.param([_sh("a", "sleep 3")], [_sh("i1", None)], "Never", Run(3.0, 0),
                 id="init-not-understood-completes-at-once"),
    pytest.param([_sh("a", "sleep 3")], [_sh("side", "sleep 60", restartPolicy="Always")], "Never",
                 Run(3.0, 0), id="sidecar-not-waited-for"),
])
def test_lifetime_from_commands(containers, init, policy, lifetime):
    assert podlife.pod_lifetime(pod(containers=containers, initContainers=init, restartPolicy=policy)) == lifetime


def test_duration_annotation_wins_over_commands():
    annotated = pod(annotations={podlife.DURATION: "20s", podlife.EXIT_CODE: "4"},
                    containers=[_sh("a", "exit 1")], restartPolicy="Never")
    assert podlife.pod_lifetime(annotated) == Run(20.0, 4)
