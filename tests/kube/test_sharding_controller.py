"""The sharding controller's sync: NodeShards written for the live shard schedulers, a dead
one's nodes handed to the others, each write conditional on what was read."""

from __future__ import annotations

from typing import Any

from central.controllers.loops.sharding import RESYNC, ShardingController
from central.controllers.sharding import SHARD_LABEL, nodeshard


class RecordingClient:
    def __init__(self) -> None:
        self.writes: list[tuple[str, str, dict[str, Any]]] = []

    def request(self, method: str, url: str, body: Any = None, **_: Any) -> dict[str, Any]:
        self.writes.append((method, url, body))
        return body


def _lease(shard: str, rv: str, holder: str = "h") -> dict[str, Any]:
    return {"metadata": {"name": f"vc-scheduler-{shard}", "namespace": "caldera-system", "labels": {SHARD_LABEL: shard},
                         "resourceVersion": rv}, "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15}}


def _controller(now: list[float]) -> tuple[ShardingController, RecordingClient]:
    client = RecordingClient()
    controller = ShardingController(client, None, "caldera-system", clock=lambda: now[0])  # type: ignore[arg-type]
    controller.nodes.objects.update({f"n{i}": {"metadata": {"name": f"n{i}"}} for i in range(4)})
    return controller, client


def _shards(client: RecordingClient) -> dict[str, list[str]]:
    return {body["metadata"]["name"]: body["spec"]["nodesDesired"] for _, _, body in client.writes}


def test_each_live_scheduler_gets_a_nodeshard_of_its_own_nodes():
    now = [100.0]
    controller, client = _controller(now)
    controller.leases.objects.update({"a": _lease("a", "1"), "b": _lease("b", "1")})
    assert controller.sync("nodeshards") == RESYNC
    assert [method for method, _, _ in client.writes] == ["POST", "POST"]
    shards = _shards(client)
    assert sorted(shards["a"] + shards["b"]) == ["n0", "n1", "n2", "n3"] and len(shards["a"]) == 2


def test_a_dead_schedulers_nodes_move_to_the_live_one_by_conditional_writes():
    now = [100.0]
    controller, client = _controller(now)
    controller.leases.objects.update({"a": _lease("a", "1"), "b": _lease("b", "1")})
    for name, nodes in {"a": ["n0", "n1"], "b": ["n2", "n3"]}.items():
        controller.shards.objects[name] = nodeshard(name, nodes, resource_version="7")
    controller.sync("nodeshards")
    assert client.writes == []  # as assigned already
    now[0] = 110.0
    controller.leases.objects["a"] = _lease("a", "2")  # a renews, b does not
    controller.sync("nodeshards")
    assert client.writes == []
    now[0] = 116.0  # b's Lease unchanged for its whole duration
    controller.sync("nodeshards")
    assert _shards(client) == {"a": ["n0", "n1", "n2", "n3"], "b": []}
    assert all(method == "PUT" and body["metadata"]["resourceVersion"] == "7" for method, _, body in client.writes)


def test_a_released_lease_is_dead_at_once_and_no_leases_means_no_shards():
    now = [100.0]
    controller, client = _controller(now)
    controller.leases.objects.update({"a": _lease("a", "1"), "b": _lease("b", "1", holder="")})
    controller.sync("nodeshards")
    assert _shards(client) == {"a": ["n0", "n1", "n2", "n3"]}
    controller, client = _controller(now)
    assert controller.sync("nodeshards") is None and client.writes == []
