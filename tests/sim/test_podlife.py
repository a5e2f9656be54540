import pytest

from central.errors import InputError
from central.model import podlife
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
