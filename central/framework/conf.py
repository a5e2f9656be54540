"""The scheduler configuration: Volcano's `volcano-scheduler.conf`, read exactly.

    actions: "enqueue, allocate, backfill"
    tiers:
    - plugins:
      - name: gang
        enablePreemptable: false
        arguments: {...}
    configurations:
    - name: allocate
      arguments: {...}

Unlike Volcano, which silently ignores unknown names, an unknown action, plugin or key, a
wrong type or malformed YAML is an InputError that names the key and lists what is valid.
Names are checked against a `Registry` that the scheduler's entry point (`central.scheduler`)
hands in: the framework never imports actions or plugins, they import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from central.errors import InputError, shown
from central.framework.action import Action
from central.framework.plugin import Arguments, Plugin, PluginOption
from central.framework.points import check_plugin_class
from central.model.fields import typed, yaml_documents

# Every per-plugin flag Volcano knows. Unset means enabled, except those OFF_BY_DEFAULT.
PLUGIN_FLAGS = (
    "enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
    "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enabledClusterOrder",
    "enablePredicate", "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enabledVictim", "enableJobStarving", "enabledOverused", "enabledAllocatable",
    "enabledHyperNodeOrder", "enabledSubJobReady", "enabledSubJobPipelined", "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)

DEFAULT_CONF_YAML = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
"""


@dataclass(frozen=True)
class Registry:
    """What a configuration may name: action classes (run on a session, in the configured
    order) and plugin classes, by their configuration names."""

    actions: Mapping[str, type[Action]]
    plugins: Mapping[str, type[Plugin]]

    def __post_init__(self) -> None:
        for cls in self.plugins.values():
            check_plugin_class(cls)


@dataclass(frozen=True)
class SchedulerConf:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    registry: Registry  # the one the names were checked against
    configurations: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    metrics: Mapping[str, Any] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)  # action -> what its read_arguments made, at load
    features: frozenset[str] = frozenset()  # the process's enabled feature gates (--feature-gates), not the file's

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        return self.configurations.get(action, {})

    def action_settings(self, action: str) -> Any:
        """What the action class's `read_arguments` made of the configured arguments."""
        if action in self.settings:
            return self.settings[action]
        return self.registry.actions[action].read_arguments(self.action_arguments(action), action)

    def plugin(self, name: str) -> PluginOption | None:
        return next((p for tier in self.tiers for p in tier if p.name == name), None)

    def time_sensitive(self) -> bool:
        """Do some plugins' answers change with the clock alone (see `Plugin.time_sensitive`)?"""
        return any(self.registry.plugins[p.name].time_sensitive for tier in self.tiers for p in tier)

    def offline(self) -> "SchedulerConf":
        """This configuration without the plugins that call another service (`Plugin.calls_out`)."""
        tiers = tuple(tuple(p for p in tier if not self.registry.plugins[p.name].calls_out) for tier in self.tiers)
        return self if tiers == self.tiers else replace(self, tiers=tiers)

    def acts_on_running(self) -> bool:
        """May an action decide something with no pod waiting (see `Action.acts_on_running`)?"""
        return any(self.registry.actions[name].acts_on_running for name in self.actions)


def load_config(text: str | bytes, source: str, registry: Registry) -> SchedulerConf:
    """Parse and validate a configuration against `registry`; InputError names `source` and
    the key. The scheduler's entry point, `central.scheduler.load_config`, passes its own."""
    docs = yaml_documents(text, source)
    if len(docs) > 1:
        raise InputError(source, f"expected one YAML document, got {len(docs)}")
    raw = docs[0] if docs else None
    try:
        conf = _build(raw, registry)
    except InputError as err:
        raise err.within(source) from None
    return conf


def _build(raw: Any, registry: Registry) -> SchedulerConf:
    actions = set(registry.actions)
    if not isinstance(raw, Mapping):
        raise InputError("", "expected a map with keys actions, tiers, configurations, metrics")
    _known_keys(raw, {"actions", "tiers", "configurations", "metrics"}, "")
    action_text = raw.get("actions")
    if not isinstance(action_text, str) or not action_text.strip():
        raise InputError("actions", 'expected a comma-separated string such as "enqueue, allocate, backfill"')
    names = tuple(a.strip() for a in action_text.split(",") if a.strip())
    for name in names:
        if name not in actions:
            raise InputError("actions", f"unknown action {name!r}; valid: {', '.join(sorted(actions))}")
    tiers = tuple(_tier(t, f"tiers[{i}]", registry) for i, t in enumerate(_list(raw.get("tiers"), "tiers")))
    _check_queue_division(tiers, registry)
    configurations = {}
    settings: dict[str, Any] = {}
    for i, item in enumerate(_list(raw.get("configurations") or [], "configurations")):
        where = f"configurations[{i}]"
        item = _mapping(item, where)
        _known_keys(item, {"name", "arguments"}, where)
        if not isinstance(item.get("name"), str) or item["name"] not in actions:
            raise InputError(f"{where}.name",
                             f"unknown action {shown(item.get('name'))}; valid: {', '.join(sorted(actions))}")
        configurations[item["name"]] = _mapping(item.get("arguments") or {}, f"{where}.arguments")
        settings[item["name"]] = registry.actions[item["name"]].read_arguments(
            configurations[item["name"]], f"{where}.arguments")
    for name in names:
        if name not in settings:
            settings[name] = registry.actions[name].read_arguments({}, "")
    metrics = _mapping(raw.get("metrics") or {}, "metrics")
    return SchedulerConf(names, tiers, registry, configurations, metrics, settings)


def _tier(raw: Any, where: str, registry: Registry) -> tuple[PluginOption, ...]:
    raw = _mapping(raw, where)
    _known_keys(raw, {"plugins"}, where)
    return tuple(_plugin(p, f"{where}.plugins[{j}]", registry) for j, p in enumerate(_list(raw.get("plugins"), f"{where}.plugins")))


def _plugin(raw: Any, where: str, registry: Registry) -> PluginOption:
    raw = _mapping(raw, where)
    name = raw.get("name")
    if not isinstance(name, str) or name not in registry.plugins:
        raise InputError(f"{where}.name", f"unknown plugin {shown(name)}; valid: {', '.join(sorted(registry.plugins))}")
    _known_keys(raw, {"name", "arguments", *PLUGIN_FLAGS}, where)
    flags = {}
    for flag in PLUGIN_FLAGS:
        if flag in raw:
            if not isinstance(raw[flag], bool):
                raise InputError(f"{where}.{flag}", f"expected true or false, got {shown(raw[flag])}")
            flags[flag] = raw[flag]
    arguments = Arguments(name, _mapping(raw.get("arguments") or {}, f"{where}.arguments"))
    settings = registry.plugins[name].read_arguments(arguments)
    arguments.check_all_read()
    return PluginOption(name, flags, arguments.raw, settings)


def _check_queue_division(tiers: tuple[tuple[PluginOption, ...], ...], registry: Registry) -> None:
    """A plugin dividing the cluster among queues flat and one dividing it by hierarchy
    (`Plugin.divides_queues`) would answer the same questions two ways: not in one tier."""
    for i, tier in enumerate(tiers):
        flat = [p for p in tier if registry.plugins[p.name].divides_queues == "flat"]
        nested = [p for p in tier if registry.plugins[p.name].divides_queues == "hierarchical"
                  and p.enabled("enableHierarchy")]
        if flat and nested:
            raise InputError(f"tiers[{i}]", f"{flat[0].name} and {nested[0].name} with enableHierarchy cannot share a tier")


def _known_keys(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in raw:
        if key not in known:
            prefix = f"{where}." if where else ""
            raise InputError(f"{prefix}{key}", f"unknown key; valid: {', '.join(sorted(known))}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    return typed(value, Mapping, where)


def _list(value: Any, where: str) -> list[Any]:
    return typed(value, list, where)
