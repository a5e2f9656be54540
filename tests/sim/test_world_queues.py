"""The simulated queue controller reads each queue's PodGroups from the world's index by queue."""

from central.controllers.queues import subtree
from central.model.cache import ClusterCache
from central.sim.world import World
from tests.builders import podgroup, queue


def _counts(world: World, name: str) -> tuple[int, int]:
    status = world.queues[name].get("status") or {}
    return status.get("pending", 0), status.get("running", 0)


def test_a_podgroup_counts_in_the_queue_it_names_now():
    world = World(ClusterCache(), 0.0, lambda when, key: None)
    for name in ("a", "b"):
        world.submit(queue(name), 0.0)
    world.submit(podgroup("g", "ml", queue="a"), 0.0)
    world.settle(0.0)
    assert (_counts(world, "a"), _counts(world, "b")) == ((1, 0), (0, 0))
    world.submit(podgroup("g", "ml", queue="b"), 1.0)  # the same PodGroup, now in queue b
    world.dirty_queues.update(("a", "b"))
    world.settle(1.0)
    assert (_counts(world, "a"), _counts(world, "b")) == ((0, 0), (1, 0))
    world._delete_podgroup("ml/g")
    world.dirty_queues.add("b")
    world.settle(2.0)
    assert _counts(world, "b") == (0, 0)


def test_a_queue_s_subtree_holds_its_descendants_only():
    queues = {"root": queue("root"), "a": queue("a"), "a1": queue("a1", parent="a"),
              "a11": queue("a11", parent="a1"), "b": queue("b")}
    assert subtree("a", queues) == {"a", "a1", "a11"}
    assert subtree("root", queues) == set(queues)
