"""A queue cycle is reported with its path in walking order, from the queue checked to the
parent that closes the loop."""

from __future__ import annotations

import pytest

from central.errors import InputError
from central.model.objects import QueueInfo
from central.model.queuetree import check_queues


def queues(parents: dict[str, str]) -> dict[str, QueueInfo]:
    return {name: QueueInfo(name=name, weight=1, capability={}, deserved={}, guarantee={}, reclaimable=True,
                            priority=0, parent=parent, state="Open") for name, parent in parents.items()}


@pytest.mark.parametrize("parents, path", [
    pytest.param({"a": "b", "b": "c", "c": "d", "d": "e", "e": "a"}, "a -> b -> c -> d -> e -> a", id="loop"),
    pytest.param({"a": "b", "b": "c", "c": "d", "d": "e", "e": "c"}, "a -> b -> c -> d -> e -> c", id="loop-above"),
])
def test_the_cycle_is_named_in_walking_order(parents, path):
    with pytest.raises(InputError) as err:
        check_queues(queues(parents))
    assert str(err.value).endswith(f"queue tree has a cycle: {path}"), str(err.value)
