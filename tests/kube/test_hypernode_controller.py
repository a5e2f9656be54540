"""The HyperNode controller's sync on a fake API: one HyperNode whose status write fails
delays no other's."""

from __future__ import annotations

from typing import Any

import pytest

from central.controllers.loops.hypernodes import HyperNodeController
from central.kube.client import ApiError
from tests.builders import exact, hypernode, node


class FailingFor:
    """Records status PUTs; refuses those of the HyperNodes named."""

    def __init__(self, *refused: str):
        self.refused, self.written = refused, {}

    def request(self, method: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
        name = url.split("/")[-2]
        if name in self.refused:
            raise ApiError(422, "Invalid", f"hypernode {name} refused")
        self.written[name] = body["status"]["nodeCount"]
        return body


def test_a_refused_status_write_stops_no_other_hypernode():
    client = FailingFor("leaf-a")
    controller = HyperNodeController(client, events=None)  # type: ignore[arg-type]
    for obj in (hypernode("leaf-a", 1, [exact("a-1")]),
                hypernode("leaf-b", 1, [exact("b-1")]),
                hypernode("spine", 2, [exact("leaf-a", "HyperNode"),
                          exact("leaf-b", "HyperNode")])):
        controller.hypernodes.objects[obj["metadata"]["name"]] = obj
    for obj in (node("a-1"), node("b-1")):
        controller.nodes.objects[obj["metadata"]["name"]] = obj
    with pytest.raises(ApiError, match="leaf-a refused"):  # the key is retried with backoff
        controller.sync("hypernodes")
    assert client.written == {"leaf-b": 1, "spine": 2}
