"""The scheduler's entry point: the registries of actions and plugins, handed to the framework.

The framework (session, configuration) never imports an action or a plugin; actions and
plugins import the framework. This module is where the two meet: every configuration is
loaded against `REGISTRY`, carries it, and the session and the cycle take their actions and
plugin classes from it.
"""

from central.actions import ACTIONS
from central.errors import InputError
from central.framework import conf
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.plugins import PLUGINS

REGISTRY = conf.Registry(actions=ACTIONS, plugins=PLUGINS)


def load_config(text: str | bytes, source: str = "scheduler configuration",
                registry: conf.Registry = REGISTRY) -> conf.SchedulerConf:
    """Parse and validate a `volcano-scheduler.conf`; InputError names `source` and the key."""
    loaded = conf.load_config(text, source, registry)
    try:  # every plugin built once on an empty cluster, so a bad argument is refused at load
        Session(ClusterCache(), loaded)
    except InputError as err:
        raise err.within(source) from None
    return loaded
