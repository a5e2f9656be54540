"""The plugin contract: arguments are read and checked by the plugin class, once, at load (no
session is built for that); a plugin declares its extension points by inheriting their
Protocols, and a declared point left undefined or a public method of no declared point is
refused; a plugin sees its session through a narrow handle and records notes and conditions
through calls. Actions check their own arguments the same way."""

import pytest

from central.errors import InputError
from central.framework.conf import Registry
from central.framework.extension import POINTS, Allocatable, JobEnqueueable, NodeOrder, SessionClose
from central.framework.handle import Handle
from central.framework.plugin import REJECT, Arguments, Plugin
from central.framework.session import Session
from central.framework.status import refused
from central.model.cache import ClusterCache
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

    def __init__(self, option, handle):
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


def test_a_point_method_the_class_does_not_declare_is_refused():
    class Undeclared(Plugin):
        name = "undeclared"

        def node_order(self, task, rows):
            return rows

    with pytest.raises(TypeError, match=r"plugin undeclared: method Undeclared.node_order is the NodeOrder extension "
                                        r"point, which the class does not declare; inherit NodeOrder"):
        registry(Undeclared)


def test_a_declared_point_left_undefined_is_refused():
    class Forgetful(Plugin, Allocatable):
        name = "forgetful"

    with pytest.raises(TypeError, match="plugin forgetful: declares Allocatable but defines no allocatable"):
        registry(Forgetful)


def test_every_point_has_a_flag_rule_and_protocol_methods():
    for name, spec in POINTS.items():
        assert spec.methods[0] == name and all(callable(getattr(spec.protocol, m)) for m in spec.methods)
        assert spec.combine and (spec.flag is None or spec.flag.startswith("enable"))


def test_private_helpers_and_extension_points_are_accepted():
    class Fine(Plugin, NodeOrder):
        name = "fine"

        def node_order(self, task, rows):
            return self._score(rows)

        def _score(self, rows):
            return rows

    assert registry(Fine).plugins["fine"] is Fine


class Holding(Plugin, JobEnqueueable, SessionClose):
    """Holds every job back at enqueue and says why, through its handle only."""

    name = "holding"

    def job_enqueueable(self, job):
        self.handle.note_job(job, "held by the holding plugin")
        return REJECT

    def on_session_close(self):
        for job in self.handle.jobs.values():
            self.handle.set_condition(job, "Unschedulable", "Held", f"{job.uid} held")


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
    assert {type(plugin.handle) for plugin in ssn.tiers[0]} == {Handle}
    assert not any(hasattr(ssn.handle, name) for name in ("binds", "evictions", "statement", "rollback", "cache"))


def test_the_handle_hands_out_the_cache_s_maps_read_only():
    ssn = Session(ClusterCache(), load_config(conf_text("{name: gang}"), "c"))
    for view in (ssn.handle.tasks, ssn.handle.nodes_by_name, ssn.handle.starting, ssn.handle.anti_affine):
        with pytest.raises(TypeError):
            view["x"] = None  # type: ignore[index]


class Gatekeeper(Plugin, Allocatable):
    """Refuses every task with a reason: the gate's Status carries it to the why-pending text."""

    name = "gatekeeper"

    def allocatable(self, queue, task):
        return refused(f"closed for {task.uid}")


def test_a_gate_s_refusal_reason_reaches_the_fit_errors():
    conf = load_config('actions: "allocate"\ntiers:\n- plugins: [{name: gang}, {name: gatekeeper}]\n', "c",
                       registry(Gatekeeper))
    cache = ClusterCache()
    for obj in objects_of({"nodes": {"n1": {"cpu": 4, "memory": "8Gi"}}, "pods": {"ns/p": {"cpu": 1}}}):
        cache.apply(obj)
    result = run_cycle(cache, conf)
    assert result.binds == {}
    assert "has no room for it" in result.pending_reasons["ns/p"]
    assert result.pending_reasons["ns/p"].endswith("(closed for ns/p)")


@pytest.mark.parametrize("arguments, message", [
    pytest.param("{minCandidateNodesAbsolute: -1}",
                 "configurations[0].arguments.minCandidateNodesAbsolute: expected a non-negative integer", id="typed"),
    pytest.param("{enableTopologyAware: true}",
                 "configurations[0].arguments.enableTopologyAware: unknown argument of preempt", id="unknown"),
])
def test_an_action_checks_its_own_arguments_at_load(arguments, message):
    text = f'actions: "preempt"\ntiers:\n- plugins: [{{name: gang}}]\nconfigurations:\n- name: preempt\n  arguments: {arguments}\n'
    with pytest.raises(InputError) as err:
        load_config(text, "c")
    assert str(err.value).startswith(f"c: {message}")


def test_an_action_gets_the_settings_read_at_load():
    text = ('actions: "preempt"\ntiers:\n- plugins: [{name: gang}]\nconfigurations:\n- name: preempt\n'
            '  arguments: {minCandidateNodesAbsolute: 3}\n')
    assert load_config(text, "c").action_settings("preempt") == {"minCandidateNodesAbsolute": 3}
