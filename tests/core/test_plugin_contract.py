"""The plugin contract: arguments are read and checked by the plugin class, once, at load (no
session is built for that); a method that matches no extension point is refused; a plugin
sees its session through a narrow handle and records notes and conditions through calls."""

import pytest

from central.errors import InputError
from central.framework.conf import Registry
from central.framework.handle import Handle
from central.framework.plugin import REJECT, Arguments, Plugin
from central.model.cache import ClusterCache
from central.framework.session import Session
from central.scheduler import REGISTRY, load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of


class Weighted(Plugin):
    name = "weighted"

    @classmethod
    def read_arguments(cls, args: Arguments) -> int:
        weight = args.get("weight", 1, int)
        if weight < 0:
            raise args.error("weight", f"must not be negative, got {weight}")
        return weight

    def __init__(self, option, session):
        raise AssertionError("a plugin is built only by a session, never by the loader")


def registry(*plugins):
    return Registry(REGISTRY.actions, {**REGISTRY.plugins, **{p.name: p for p in plugins}})


def conf_text(plugin):
    return f'actions: "allocate"\ntiers:\n- plugins: [{plugin}]\n'


def test_arguments_are_read_by_the_class_at_load():
    conf = load_config(conf_text("{name: weighted, arguments: {weight: 3}}"), "c", registry(Weighted))
    assert conf.plugin("weighted").settings == 3


@pytest.mark.parametrize("arguments, message", [
    pytest.param("{weight: -1}", "c: plugin weighted: arguments.weight: must not be negative, got -1", id="checked"),
    pytest.param("{weight: x}", "c: plugin weighted: arguments.weight: expected a number", id="typed"),
    pytest.param("{wieght: 2}", "c: plugin weighted: arguments.wieght: unknown argument; valid: weight", id="unread"),
])
def test_bad_arguments_are_refused_at_load(arguments, message):
    with pytest.raises(InputError) as err:
        load_config(conf_text(f"{{name: weighted, arguments: {arguments}}}"), "c", registry(Weighted))
    assert str(err.value).startswith(message)


def test_every_session_gets_the_settings_read_at_load():
    conf = load_config(conf_text("{name: binpack, arguments: {binpack.weight: 4, binpack.cpu: 2}}"), "c")
    (binpack,) = Session(ClusterCache(), conf).tiers[0]
    assert binpack.settings == (4, {"cpu": 2, "memory": 1})
    assert binpack.weight == 4


def test_a_method_that_matches_no_extension_point_is_refused_at_registration():
    class Typo(Plugin):
        name = "typo"

        def node_orders(self, task, rows):
            return rows

    with pytest.raises(TypeError, match=r"plugin typo: method Typo.node_orders matches no extension point "
                                        r"\(did you mean node_order\?\)"):
        registry(Typo)


def test_private_helpers_and_extension_points_are_accepted():
    class Fine(Plugin):
        name = "fine"

        def node_order(self, task, rows):
            return self._score(rows)

        def _score(self, rows):
            return rows

    assert registry(Fine).plugins["fine"] is Fine


class Holding(Plugin):
    """Holds every job back at enqueue and says why, through its handle only."""

    name = "holding"

    def job_enqueueable(self, job):
        self.session.note_job(job, "held by the holding plugin")
        return REJECT

    def on_session_close(self):
        for job in self.session.jobs.values():
            self.session.set_condition(job, "Unschedulable", "Held", f"{job.uid} held")


def test_a_plugin_records_notes_and_conditions_through_its_handle():
    conf = load_config('actions: "enqueue, allocate"\ntiers:\n- plugins: [{name: holding}]\n', "c", registry(Holding))
    cache = ClusterCache()
    for obj in objects_of({"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}}, "podgroups": {"ns/j": {"minMember": 1, "minResources": {"cpu": "1"}}},
                           "pods": {"ns/j-0": {"group": "j", "cpu": 1}}}):
        cache.apply(obj)
    result = run_cycle(cache, conf)
    assert result.binds == {}
    assert result.pending_reasons["ns/j-0"] == "PodGroup ns/j is not admitted yet: held by the holding plugin"
    (condition,) = result.podgroups["ns/j"]["conditions"]
    assert (condition["type"], condition["reason"], condition["message"]) == ("Unschedulable", "Held", "ns/j held")


def test_plugins_get_the_handle_not_the_session():
    ssn = Session(ClusterCache(), load_config(conf_text("{name: gang}, {name: binpack}"), "c"))
    assert {type(plugin.session) for plugin in ssn.tiers[0]} == {Handle}
    assert not any(hasattr(ssn.handle, name) for name in ("binds", "evictions", "statement", "rollback", "cache"))
