"""The plugin contract as the configuration loader enforces it: arguments are read and checked
by the plugin class, once, at load (no session is built for that)."""

import pytest

from central.errors import InputError
from central.framework.conf import Registry
from central.framework.plugin import Arguments, Plugin
from central.model.cache import ClusterCache
from central.framework.session import Session
from central.scheduler import REGISTRY, load_config


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
