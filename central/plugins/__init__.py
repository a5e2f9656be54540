"""The plugin registry: configuration names to plugin classes."""

from central.framework.plugin import Plugin
from central.plugins.admissionfairsharing import AdmissionFairSharing
from central.plugins.binpack import Binpack
from central.plugins.capacity import Capacity
from central.plugins.cdp import Cdp
from central.plugins.conformance import Conformance
from central.plugins.deviceshare import DeviceShare
from central.plugins.drf import Drf
from central.plugins.fairshare import Fairshare
from central.plugins.gang import Gang
from central.plugins.networktopology import NetworkTopologyAware
from central.plugins.nodegroup import NodeGroup
from central.plugins.nodeorder import NodeOrder
from central.plugins.numaaware import NumaAware
from central.plugins.overcommit import Overcommit
from central.plugins.pdb import Pdb
from central.plugins.predicates import Predicates
from central.plugins.priority import Priority
from central.plugins.proportion import Proportion
from central.plugins.reservation import ReservationPlugin
from central.plugins.resourcequota import ResourceQuota
from central.plugins.resourcestrategyfit import ResourceStrategyFit
from central.plugins.sla import Sla
from central.plugins.tasktopology import TaskTopology
from central.plugins.tdm import Tdm
from central.plugins.usage import Usage

PLUGINS: dict[str, type[Plugin]] = {
    cls.name: cls
    for cls in (Priority, Gang, Conformance, Drf, Proportion, Capacity, Overcommit, Predicates, NodeOrder, Binpack, Sla, TaskTopology,
                NumaAware, Usage, DeviceShare, Tdm, NetworkTopologyAware, Fairshare,
                AdmissionFairSharing, Cdp, Pdb, ResourceQuota, NodeGroup, ResourceStrategyFit, ReservationPlugin)
}
