"""The `caldera` command: routes each subcommand to the package that owns it.

`central` (scheduler, controllers, admission, simulate) and `nodeagent` (the DaemonSet agent)
never import each other; this dispatcher is the one place that knows both.
"""
