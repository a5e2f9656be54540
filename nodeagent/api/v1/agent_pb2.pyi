from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class WindowStat(_message.Message):
    __slots__ = ("last", "avg", "p95")
    LAST_FIELD_NUMBER: _ClassVar[int]
    AVG_FIELD_NUMBER: _ClassVar[int]
    P95_FIELD_NUMBER: _ClassVar[int]
    last: float
    avg: float
    p95: float
    def __init__(self, last: _Optional[float] = ..., avg: _Optional[float] = ..., p95: _Optional[float] = ...) -> None: ...

class Pressure(_message.Message):
    __slots__ = ("some_avg10", "some_avg60", "full_avg10", "full_avg60")
    SOME_AVG10_FIELD_NUMBER: _ClassVar[int]
    SOME_AVG60_FIELD_NUMBER: _ClassVar[int]
    FULL_AVG10_FIELD_NUMBER: _ClassVar[int]
    FULL_AVG60_FIELD_NUMBER: _ClassVar[int]
    some_avg10: float
    some_avg60: float
    full_avg10: float
    full_avg60: float
    def __init__(self, some_avg10: _Optional[float] = ..., some_avg60: _Optional[float] = ..., full_avg10: _Optional[float] = ..., full_avg60: _Optional[float] = ...) -> None: ...

class Resources(_message.Message):
    __slots__ = ("cpu_capacity_cores", "cpu_allocatable_cores", "cpu_usage_cores", "memory_capacity_bytes", "memory_allocatable_bytes", "memory_usage_bytes", "batch_cpu_millicores", "batch_memory_bytes", "numa", "cpu_pressure", "memory_pressure", "io_pressure")
    CPU_CAPACITY_CORES_FIELD_NUMBER: _ClassVar[int]
    CPU_ALLOCATABLE_CORES_FIELD_NUMBER: _ClassVar[int]
    CPU_USAGE_CORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_ALLOCATABLE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    BATCH_CPU_MILLICORES_FIELD_NUMBER: _ClassVar[int]
    BATCH_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    NUMA_FIELD_NUMBER: _ClassVar[int]
    CPU_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    IO_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    cpu_capacity_cores: float
    cpu_allocatable_cores: float
    cpu_usage_cores: WindowStat
    memory_capacity_bytes: int
    memory_allocatable_bytes: int
    memory_usage_bytes: WindowStat
    batch_cpu_millicores: int
    batch_memory_bytes: int
    numa: _containers.RepeatedCompositeFieldContainer[NumaUsage]
    cpu_pressure: Pressure
    memory_pressure: Pressure
    io_pressure: Pressure
    def __init__(self, cpu_capacity_cores: _Optional[float] = ..., cpu_allocatable_cores: _Optional[float] = ..., cpu_usage_cores: _Optional[_Union[WindowStat, _Mapping]] = ..., memory_capacity_bytes: _Optional[int] = ..., memory_allocatable_bytes: _Optional[int] = ..., memory_usage_bytes: _Optional[_Union[WindowStat, _Mapping]] = ..., batch_cpu_millicores: _Optional[int] = ..., batch_memory_bytes: _Optional[int] = ..., numa: _Optional[_Iterable[_Union[NumaUsage, _Mapping]]] = ..., cpu_pressure: _Optional[_Union[Pressure, _Mapping]] = ..., memory_pressure: _Optional[_Union[Pressure, _Mapping]] = ..., io_pressure: _Optional[_Union[Pressure, _Mapping]] = ...) -> None: ...

class NumaUsage(_message.Message):
    __slots__ = ("id", "cpu_usage_cores")
    ID_FIELD_NUMBER: _ClassVar[int]
    CPU_USAGE_CORES_FIELD_NUMBER: _ClassVar[int]
    id: int
    cpu_usage_cores: float
    def __init__(self, id: _Optional[int] = ..., cpu_usage_cores: _Optional[float] = ...) -> None: ...

class NumaNode(_message.Message):
    __slots__ = ("id", "cpus", "memory_total_bytes", "memory_free_bytes", "distances", "free_cpus", "free_cpus_known")
    ID_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FREE_BYTES_FIELD_NUMBER: _ClassVar[int]
    DISTANCES_FIELD_NUMBER: _ClassVar[int]
    FREE_CPUS_FIELD_NUMBER: _ClassVar[int]
    FREE_CPUS_KNOWN_FIELD_NUMBER: _ClassVar[int]
    id: int
    cpus: _containers.RepeatedScalarFieldContainer[int]
    memory_total_bytes: int
    memory_free_bytes: int
    distances: _containers.RepeatedScalarFieldContainer[int]
    free_cpus: _containers.RepeatedScalarFieldContainer[int]
    free_cpus_known: bool
    def __init__(self, id: _Optional[int] = ..., cpus: _Optional[_Iterable[int]] = ..., memory_total_bytes: _Optional[int] = ..., memory_free_bytes: _Optional[int] = ..., distances: _Optional[_Iterable[int]] = ..., free_cpus: _Optional[_Iterable[int]] = ..., free_cpus_known: _Optional[bool] = ...) -> None: ...

class Topology(_message.Message):
    __slots__ = ("sockets", "cores", "threads", "online_cpus", "offline_cpus", "numa_nodes", "cpu_manager_policy", "topology_manager_policy", "cpus")
    SOCKETS_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    ONLINE_CPUS_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_CPUS_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODES_FIELD_NUMBER: _ClassVar[int]
    CPU_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_MANAGER_POLICY_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    sockets: int
    cores: int
    threads: int
    online_cpus: _containers.RepeatedScalarFieldContainer[int]
    offline_cpus: _containers.RepeatedScalarFieldContainer[int]
    numa_nodes: _containers.RepeatedCompositeFieldContainer[NumaNode]
    cpu_manager_policy: str
    topology_manager_policy: str
    cpus: _containers.RepeatedCompositeFieldContainer[Cpu]
    def __init__(self, sockets: _Optional[int] = ..., cores: _Optional[int] = ..., threads: _Optional[int] = ..., online_cpus: _Optional[_Iterable[int]] = ..., offline_cpus: _Optional[_Iterable[int]] = ..., numa_nodes: _Optional[_Iterable[_Union[NumaNode, _Mapping]]] = ..., cpu_manager_policy: _Optional[str] = ..., topology_manager_policy: _Optional[str] = ..., cpus: _Optional[_Iterable[_Union[Cpu, _Mapping]]] = ...) -> None: ...

class Cpu(_message.Message):
    __slots__ = ("id", "core", "socket", "numa", "l3")
    ID_FIELD_NUMBER: _ClassVar[int]
    CORE_FIELD_NUMBER: _ClassVar[int]
    SOCKET_FIELD_NUMBER: _ClassVar[int]
    NUMA_FIELD_NUMBER: _ClassVar[int]
    L3_FIELD_NUMBER: _ClassVar[int]
    id: int
    core: int
    socket: int
    numa: int
    l3: int
    def __init__(self, id: _Optional[int] = ..., core: _Optional[int] = ..., socket: _Optional[int] = ..., numa: _Optional[int] = ..., l3: _Optional[int] = ...) -> None: ...

class GpuProcess(_message.Message):
    __slots__ = ("pid", "used_memory_bytes", "pod_uid")
    PID_FIELD_NUMBER: _ClassVar[int]
    USED_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    POD_UID_FIELD_NUMBER: _ClassVar[int]
    pid: int
    used_memory_bytes: int
    pod_uid: str
    def __init__(self, pid: _Optional[int] = ..., used_memory_bytes: _Optional[int] = ..., pod_uid: _Optional[str] = ...) -> None: ...

class MigDevice(_message.Message):
    __slots__ = ("index", "uuid", "memory_total_bytes", "memory_used_bytes")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    index: int
    uuid: str
    memory_total_bytes: int
    memory_used_bytes: int
    def __init__(self, index: _Optional[int] = ..., uuid: _Optional[str] = ..., memory_total_bytes: _Optional[int] = ..., memory_used_bytes: _Optional[int] = ...) -> None: ...

class Gpu(_message.Message):
    __slots__ = ("index", "uuid", "model", "memory_total_bytes", "memory_used_bytes", "utilization_ratio", "mig_enabled", "numa_node", "processes", "mig_devices", "healthy", "error")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MEMORY_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_USED_BYTES_FIELD_NUMBER: _ClassVar[int]
    UTILIZATION_RATIO_FIELD_NUMBER: _ClassVar[int]
    MIG_ENABLED_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODE_FIELD_NUMBER: _ClassVar[int]
    PROCESSES_FIELD_NUMBER: _ClassVar[int]
    MIG_DEVICES_FIELD_NUMBER: _ClassVar[int]
    HEALTHY_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    index: int
    uuid: str
    model: str
    memory_total_bytes: int
    memory_used_bytes: int
    utilization_ratio: float
    mig_enabled: bool
    numa_node: int
    processes: _containers.RepeatedCompositeFieldContainer[GpuProcess]
    mig_devices: _containers.RepeatedCompositeFieldContainer[MigDevice]
    healthy: bool
    error: str
    def __init__(self, index: _Optional[int] = ..., uuid: _Optional[str] = ..., model: _Optional[str] = ..., memory_total_bytes: _Optional[int] = ..., memory_used_bytes: _Optional[int] = ..., utilization_ratio: _Optional[float] = ..., mig_enabled: _Optional[bool] = ..., numa_node: _Optional[int] = ..., processes: _Optional[_Iterable[_Union[GpuProcess, _Mapping]]] = ..., mig_devices: _Optional[_Iterable[_Union[MigDevice, _Mapping]]] = ..., healthy: _Optional[bool] = ..., error: _Optional[str] = ...) -> None: ...

class Gpus(_message.Message):
    __slots__ = ("status", "gpus")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    status: str
    gpus: _containers.RepeatedCompositeFieldContainer[Gpu]
    def __init__(self, status: _Optional[str] = ..., gpus: _Optional[_Iterable[_Union[Gpu, _Mapping]]] = ...) -> None: ...

class PodUsage(_message.Message):
    __slots__ = ("namespace", "name", "uid", "qos_level", "cpu_usage_cores", "memory_working_set_bytes", "cpu_request_cores", "memory_request_bytes", "priority", "kube_qos_class", "cpu_pressure", "memory_pressure", "io_pressure")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    QOS_LEVEL_FIELD_NUMBER: _ClassVar[int]
    CPU_USAGE_CORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_WORKING_SET_BYTES_FIELD_NUMBER: _ClassVar[int]
    CPU_REQUEST_CORES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_REQUEST_BYTES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    KUBE_QOS_CLASS_FIELD_NUMBER: _ClassVar[int]
    CPU_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    IO_PRESSURE_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    name: str
    uid: str
    qos_level: str
    cpu_usage_cores: WindowStat
    memory_working_set_bytes: WindowStat
    cpu_request_cores: float
    memory_request_bytes: int
    priority: int
    kube_qos_class: str
    cpu_pressure: Pressure
    memory_pressure: Pressure
    io_pressure: Pressure
    def __init__(self, namespace: _Optional[str] = ..., name: _Optional[str] = ..., uid: _Optional[str] = ..., qos_level: _Optional[str] = ..., cpu_usage_cores: _Optional[_Union[WindowStat, _Mapping]] = ..., memory_working_set_bytes: _Optional[_Union[WindowStat, _Mapping]] = ..., cpu_request_cores: _Optional[float] = ..., memory_request_bytes: _Optional[int] = ..., priority: _Optional[int] = ..., kube_qos_class: _Optional[str] = ..., cpu_pressure: _Optional[_Union[Pressure, _Mapping]] = ..., memory_pressure: _Optional[_Union[Pressure, _Mapping]] = ..., io_pressure: _Optional[_Union[Pressure, _Mapping]] = ...) -> None: ...

class Pods(_message.Message):
    __slots__ = ("pods",)
    PODS_FIELD_NUMBER: _ClassVar[int]
    pods: _containers.RepeatedCompositeFieldContainer[PodUsage]
    def __init__(self, pods: _Optional[_Iterable[_Union[PodUsage, _Mapping]]] = ...) -> None: ...

class QosState(_message.Message):
    __slots__ = ("offline_cpu_quota_cores", "offline_memory_limit_bytes", "no_schedule_taint", "evictions_total", "dry_run", "pressures")
    OFFLINE_CPU_QUOTA_CORES_FIELD_NUMBER: _ClassVar[int]
    OFFLINE_MEMORY_LIMIT_BYTES_FIELD_NUMBER: _ClassVar[int]
    NO_SCHEDULE_TAINT_FIELD_NUMBER: _ClassVar[int]
    EVICTIONS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    PRESSURES_FIELD_NUMBER: _ClassVar[int]
    offline_cpu_quota_cores: float
    offline_memory_limit_bytes: int
    no_schedule_taint: bool
    evictions_total: int
    dry_run: bool
    pressures: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, offline_cpu_quota_cores: _Optional[float] = ..., offline_memory_limit_bytes: _Optional[int] = ..., no_schedule_taint: _Optional[bool] = ..., evictions_total: _Optional[int] = ..., dry_run: _Optional[bool] = ..., pressures: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeReport(_message.Message):
    __slots__ = ("node_name", "agent_epoch", "sequence", "timestamp_unix_ms", "full", "resources", "topology", "gpus", "pods", "qos")
    NODE_NAME_FIELD_NUMBER: _ClassVar[int]
    AGENT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_UNIX_MS_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    PODS_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    node_name: str
    agent_epoch: str
    sequence: int
    timestamp_unix_ms: int
    full: bool
    resources: Resources
    topology: Topology
    gpus: Gpus
    pods: Pods
    qos: QosState
    def __init__(self, node_name: _Optional[str] = ..., agent_epoch: _Optional[str] = ..., sequence: _Optional[int] = ..., timestamp_unix_ms: _Optional[int] = ..., full: _Optional[bool] = ..., resources: _Optional[_Union[Resources, _Mapping]] = ..., topology: _Optional[_Union[Topology, _Mapping]] = ..., gpus: _Optional[_Union[Gpus, _Mapping]] = ..., pods: _Optional[_Union[Pods, _Mapping]] = ..., qos: _Optional[_Union[QosState, _Mapping]] = ...) -> None: ...

class Ack(_message.Message):
    __slots__ = ("sequence", "accepted", "reason", "resync")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESYNC_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    accepted: bool
    reason: str
    resync: bool
    def __init__(self, sequence: _Optional[int] = ..., accepted: _Optional[bool] = ..., reason: _Optional[str] = ..., resync: _Optional[bool] = ...) -> None: ...
