"""The scheduler's entry point: the registries of actions and plugins, handed to the framework.

The framework (session, configuration) never imports an action or a plugin; actions and
plugins import the framework. This module is where the two meet: every configuration is
loaded against `REGISTRY`, carries it, and the session and the cycle take their actions and
plugin classes from it.

The package is the scheduler, as one room: this registry and `cycle` (one scheduling cycle
over a cache, used by the process, the simulator and the benchmarks alike), then the process
that runs them on a cluster, above the API client: `loop` (reflectors feed the cache, the
leader runs a cycle every period), `feeder` (watch events into the cache), `kubesink` (the
cycle's decisions as API calls), `metrics` and `command` (`caldera scheduler`).
"""

from central.actions import ACTIONS
from central.framework import conf
from central.plugins import PLUGINS

REGISTRY = conf.Registry(actions=ACTIONS, plugins=PLUGINS)


def load_config(text: str | bytes, source: str = "scheduler configuration",
                registry: conf.Registry = REGISTRY) -> conf.SchedulerConf:
    """Parse and validate a `volcano-scheduler.conf`; InputError names `source` and the key."""
    return conf.load_config(text, source, registry)
