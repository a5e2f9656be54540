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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from central.errors import InputError, shown
from central.framework.plugin import Arguments, Plugin
from central.framework.points import check_plugin_class
from central.model.fields import typed, yaml_documents

if TYPE_CHECKING:
    from central.framework.session import Session

# Every per-plugin flag Volcano knows. Unset means enabled, except the two defaulting to off.
PLUGIN_FLAGS = (
    "enableJobOrder", "enableHierarchy", "enableJobReady", "enableJobPipelined", "enableTaskOrder",
    "enablePreemptable", "enableReclaimable", "enablePreemptive", "enableQueueOrder", "enabledClusterOrder",
    "enablePredicate", "enableBestNode", "enableNodeOrder", "enableTargetJob", "enableReservedNodes",
    "enableJobEnqueued", "enabledVictim", "enableJobStarving", "enabledOverused", "enabledAllocatable",
    "enabledHyperNodeOrder", "enabledSubJobReady", "enabledSubJobPipelined", "enabledSubJobOrder",
    "enabledHyperNodeGradient",
)
OFF_BY_DEFAULT = frozenset({"enableHierarchy", "enabledClusterOrder"})

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
class PluginOption:
    name: str
    flags: Mapping[str, bool]
    arguments: Mapping[str, Any]
    settings: Any = None  # what the plugin class's `read_arguments` made of `arguments`

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, flag not in OFF_BY_DEFAULT)


@dataclass(frozen=True)
class Registry:
    """What a configuration may name: actions (run on a session, in the configured order) and
    plugin classes, by their configuration names."""

    actions: Mapping[str, Callable[["Session"], None]]
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

    def action_arguments(self, action: str) -> Mapping[str, Any]:
        return self.configurations.get(action, {})

    def plugin(self, name: str) -> PluginOption | None:
        return next((p for tier in self.tiers for p in tier if p.name == name), None)


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
    _check_hierarchy(tiers)
    configurations = {}
    for i, item in enumerate(_list(raw.get("configurations") or [], "configurations")):
        where = f"configurations[{i}]"
        item = _mapping(item, where)
        _known_keys(item, {"name", "arguments"}, where)
        if not isinstance(item.get("name"), str) or item["name"] not in actions:
            raise InputError(f"{where}.name",
                             f"unknown action {shown(item.get('name'))}; valid: {', '.join(sorted(actions))}")
        configurations[item["name"]] = _mapping(item.get("arguments") or {}, f"{where}.arguments")
        _check_action_arguments(item["name"], configurations[item["name"]], f"{where}.arguments")
    metrics = _mapping(raw.get("metrics") or {}, "metrics")
    return SchedulerConf(names, tiers, registry, configurations, metrics)


# Per-action arguments Caldera reads (Volcano's names and defaults), by type; an action
# listed here refuses other keys. `predicateErrorCacheEnable` and
# `topologyAwarePreemptWorkerNum` are accepted and have no effect (one template view
# caches predicate results; dry runs are sequential).
ACTION_ARGUMENTS: dict[str, dict[str, type]] = {
    "allocate": {"predicateErrorCacheEnable": bool},
    "backfill": {"predicateErrorCacheEnable": bool},
    "reclaim": {"predicateErrorCacheEnable": bool},
    "preempt": {"predicateErrorCacheEnable": bool, "enableTopologyAwarePreemption": bool,
                "topologyAwarePreemptWorkerNum": int, "minCandidateNodesPercentage": int,
                "minCandidateNodesAbsolute": int, "maxCandidateNodesAbsolute": int},
}


def _check_action_arguments(action: str, arguments: Mapping[str, Any], where: str) -> None:
    known = ACTION_ARGUMENTS.get(action)
    if known is None:
        return
    for key, value in arguments.items():
        kind = known.get(key)
        if kind is None:
            raise InputError(f"{where}.{key}", f"unknown argument of {action}; valid: {', '.join(sorted(known))}")
        if kind is bool and not isinstance(value, bool):
            raise InputError(f"{where}.{key}", f"expected true or false, got {value!r}")
        if kind is int and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InputError(f"{where}.{key}", f"expected a non-negative integer, got {value!r}")


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


def _check_hierarchy(tiers: tuple[tuple[PluginOption, ...], ...]) -> None:
    for i, tier in enumerate(tiers):
        names = {p.name for p in tier}
        if "proportion" in names and any(p.name == "drf" and p.enabled("enableHierarchy") for p in tier):
            raise InputError(f"tiers[{i}]", "proportion and drf with enableHierarchy cannot share a tier")


def _known_keys(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in raw:
        if key not in known:
            prefix = f"{where}." if where else ""
            raise InputError(f"{prefix}{key}", f"unknown key; valid: {', '.join(sorted(known))}")


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    return typed(value, Mapping, where)


def _list(value: Any, where: str) -> list[Any]:
    return typed(value, list, where)
