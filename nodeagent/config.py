"""Agent configuration: one schema of frozen dataclasses, read from YAML and overridden by flags.

Every threshold lives here with its default; the ConfigMap in daemonset/ carries the same keys.
Loading is strict: an unknown key, a wrong type or an out-of-range value is a `ConfigError`
naming the dotted key (e.g. `qos.cpu_suppress.threshold_percent`), so a bad config is refused
at start instead of half-applied.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

import yaml

from nodeagent.pods import QOS_LEVELS
from nodeagent.qos.manager import QosConfig

TOPOLOGY_MANAGER_POLICIES = ("", "none", "best-effort", "restricted", "single-numa-node")


class ConfigError(ValueError):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}" if key else message)
        self.key, self.message = key, message


@dataclass(frozen=True)
class NodeConfig:
    name: str = ""  # defaults to $NODE_NAME, then the host name
    reserved_cpu_cores: float = 0.0
    reserved_memory_bytes: int = 0
    topology_manager_policy: str = ""  # "" = the kubelet's config.yaml under paths.kubelet_root says


@dataclass(frozen=True)
class PathsConfig:
    sys_root: str = "/sys"
    proc_root: str = "/proc"
    cgroup_root: str = "/sys/fs/cgroup"
    kubelet_root: str = "/var/lib/kubelet"  # "" = not mounted (the DaemonSet: the socket below instead)
    pod_resources_socket: str = "/var/lib/kubelet/pod-resources/kubelet.sock"  # "" = not used
    cgroup_version: int = 0  # 0 = detect
    cgroup_driver: Literal["", "systemd", "cgroupfs"] = ""  # "" = detect


@dataclass(frozen=True)
class CollectConfig:
    period_s: float = 1.0
    window_s: float = 60.0
    topology_period_s: float = 60.0
    gpu: bool = True
    gpu_xid_recovery_s: float = 300.0  # a GPU with a hardware Xid stays unhealthy this long


@dataclass(frozen=True)
class PodsConfig:
    source: str = "none"  # none | kubelet | apiserver (uses kube.api_url, token and CA)
    kubelet_url: str = "https://127.0.0.1:10250/pods"
    kubelet_ca_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"  # verifies the kubelet


@dataclass(frozen=True)
class KubeConfig:
    api_url: str = ""  # "" = no API server: evictions and taints are logged only
    token_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    ca_file: str = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"


@dataclass(frozen=True)
class StreamConfig:
    server: str = ""  # host:port of the scheduler's receiver; "" = no stream
    insecure: bool = False  # plaintext only when explicitly asked for
    ca_file: str = ""  # the CA of the scheduler's serving certificate
    token_file: str = ""  # projected ServiceAccount token (audience caldera-scheduler): the identity
    cert_file: str = ""  # or a client certificate (mTLS), CN = the node name
    key_file: str = ""
    server_name: str = ""
    heartbeat_s: float = 10.0
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    max_in_flight: int = 8
    deadband_percent: float = 2.0  # of capacity: smaller moves of a measured figure are not a change


@dataclass(frozen=True)
class ExporterConfig:
    enabled: bool = True
    address: str = "127.0.0.1"  # the DaemonSet passes its pod's IP: never every address of the node
    port: int = 9470
    max_pod_series: int = 300
    # /metrics only for a bearer token whose user may `get` the URL /metrics (TokenReview and
    # SubjectAccessReview, cached a minute per token); needs kube.api_url
    authorize: bool = False


@dataclass(frozen=True)
class AgentConfig:
    node: NodeConfig = field(default_factory=NodeConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    collect: CollectConfig = field(default_factory=CollectConfig)
    pods: PodsConfig = field(default_factory=PodsConfig)
    qos: QosConfig = field(default_factory=QosConfig)
    kube: KubeConfig = field(default_factory=KubeConfig)
    stream: StreamConfig = field(default_factory=StreamConfig)
    exporter: ExporterConfig = field(default_factory=ExporterConfig)


def _positive(v: float) -> bool:
    return v > 0


def _percent(v: float) -> bool:
    return 0 < v <= 100


# Checks beyond the type, by the last part of the key, then by the full key.
_BY_SUFFIX: list[tuple[str, Callable[[Any], bool], str]] = [
    ("_percent", _percent, "must be above 0 and at most 100"),
    ("_s", _positive, "must be above 0"),
]
_BY_KEY: dict[str, tuple[Callable[[Any], bool], str]] = {
    "node.reserved_cpu_cores": (lambda v: v >= 0, "must not be negative"),
    "node.reserved_memory_bytes": (lambda v: v >= 0, "must not be negative"),
    "node.topology_manager_policy": (lambda v: v in TOPOLOGY_MANAGER_POLICIES,
                                     f"must be \"\" (as the kubelet's config says) or one of "
                                     f"{', '.join(TOPOLOGY_MANAGER_POLICIES[1:])}"),
    "paths.cgroup_version": (lambda v: v in (0, 1, 2), "must be 0 (detect), 1 or 2"),
    "paths.cgroup_driver": (lambda v: v in ("", "systemd", "cgroupfs"), 'must be "", "systemd" or "cgroupfs"'),
    "pods.source": (lambda v: v in ("none", "kubelet", "apiserver"), 'must be "none", "kubelet" or "apiserver"'),
    "qos.default_level": (lambda v: v in ("", *QOS_LEVELS),
                          f"must be \"\" (by Kubernetes QoS class) or one of {', '.join(QOS_LEVELS)}"),
    "stream.deadband_percent": (lambda v: 0 <= v <= 100, "must be within 0..100 (0: every change is sent)"),
    "qos.memory_protect.step_bytes": (_positive, "must be above 0"),
    "qos.memory_protect.evict_after_samples": (lambda v: v >= 1, "must be at least 1"),
    "qos.cpu_suppress.min_cores": (_positive, "must be above 0 (a zero quota would stop offline pods)"),
    "qos.memory_protect.min_bytes": (_positive, "must be above 0"),
    "qos.memory_protect.hysteresis_percent": (lambda v: 0 <= v < 100, "must be at least 0 and below 100"),
    "qos.eviction.consecutive_samples": (lambda v: v >= 1, "must be at least 1"),
    "qos.batch_samples": (lambda v: v >= 1, "must be at least 1"),
    "qos.eviction.max_per_round": (lambda v: v >= 1, "must be at least 1"),
    "qos.eviction.cooldown_s": (lambda v: v >= 0, "must not be negative"),
    "stream.max_in_flight": (lambda v: v >= 1, "must be at least 1"),
    "exporter.port": (lambda v: 0 <= v <= 65535, "must be a TCP port (0-65535)"),
    "exporter.max_pod_series": (lambda v: v >= 0, "must not be negative"),
}


def leaves(cls: type = AgentConfig, prefix: str = "") -> Iterator[tuple[str, type, Any]]:
    """(dotted key, type, default) of every setting."""
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"setting {key} has no default")
        if dataclasses.is_dataclass(default):
            yield from leaves(type(default), key + ".")
        else:
            yield key, type(default), default


def _coerce(key: str, kind: type, value: Any) -> Any:
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if type(value) is not kind:
        raise ConfigError(key, f"must be a {kind.__name__}, not {type(value).__name__} {value!r}")
    check = _BY_KEY.get(key) or next(((p, m) for s, p, m in _BY_SUFFIX if key.endswith(s)), None)
    if check and not check[0](value):
        raise ConfigError(key, f"{check[1]} (got {value!r})")
    return value


def _build(cls: type, data: dict[str, Any], prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(prefix.rstrip("."), f"must be a mapping, not {type(data).__name__}")
    known = {f.name: f for f in dataclasses.fields(cls)}
    for name in data:
        if name not in known:
            raise ConfigError(f"{prefix}{name}", "unknown key")
    values = {}
    for name, value in data.items():
        default = getattr(cls(), name)
        key = f"{prefix}{name}"
        if dataclasses.is_dataclass(default):
            if value is not None and not isinstance(value, dict):
                # `qos: false` must not quietly mean "all defaults, enforcement on".
                hint = f" (to turn it off, set {key}.enabled: false)" if hasattr(default, "enabled") else ""
                raise ConfigError(key, f"must be a mapping of settings, not {type(value).__name__} {value!r}{hint}")
            values[name] = _build(type(default), value or {}, key + ".")
        else:
            values[name] = _coerce(key, type(default), value)
    return cls(**values)


def _nest(overrides: dict[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key, value in overrides.items():
        *parents, leaf = key.split(".")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return tree


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) and isinstance(out.get(key), dict) \
            else value
    return out


def load_config(path: Path | None = None, overrides: dict[str, Any] | None = None) -> AgentConfig:
    """Reads the YAML file (if any), applies dotted-key overrides, validates everything."""
    data: Any = {}
    if path is not None:
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except OSError as exc:
            raise ConfigError("", f"cannot read config file {path}: {exc.strerror or exc}") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            problem = getattr(exc, "problem", None) or "syntax error"
            raise ConfigError("", f"{path} is not valid YAML{where}: {problem}") from None
        if not isinstance(data, dict):
            raise ConfigError("", f"{path} must hold a mapping of settings")
    cfg: AgentConfig = _build(AgentConfig, _merge(data, _nest(overrides or {})), "")
    stream = cfg.stream
    if stream.server and not stream.insecure:
        if not stream.ca_file:
            raise ConfigError("stream.ca_file", "TLS needs the CA of the scheduler's certificate "
                                                "(or set stream.insecure)")
        if not (stream.token_file or (stream.cert_file and stream.key_file)):
            raise ConfigError("stream.token_file", "an identity is needed: a token_file, or cert_file and key_file")
    if bool(stream.cert_file) != bool(stream.key_file):
        raise ConfigError("stream.cert_file", "cert_file and key_file go together")
    if cfg.pods.source == "apiserver" and not cfg.kube.api_url:
        raise ConfigError("kube.api_url", 'must be set when pods.source is "apiserver"')
    if cfg.collect.window_s < cfg.collect.period_s:
        raise ConfigError("collect.window_s", "must be at least collect.period_s")
    eviction = cfg.qos.eviction
    if eviction.low_watermark_percent >= eviction.high_watermark_percent:
        raise ConfigError("qos.eviction.low_watermark_percent", "must be below qos.eviction.high_watermark_percent")
    if eviction.cpu_satisfaction_lower_percent >= eviction.cpu_satisfaction_upper_percent:
        raise ConfigError("qos.eviction.cpu_satisfaction_lower_percent",
                          "must be below qos.eviction.cpu_satisfaction_upper_percent")
    return cfg


def as_dict(cfg: AgentConfig) -> dict[str, Any]:
    return dataclasses.asdict(cfg)
