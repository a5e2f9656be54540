"""The controller process: thin loops that run the pure controllers of `central.controllers`
against a cluster (`caldera controllers`).

The pure functions one level up decide (`jobs.reconcile`, `queues.reconcile_queue`, ...); the
modules here list and watch objects, hand each key to a worker and apply what the function
returned. They are a subpackage rather than modules beside the functions so that `loops.jobs`
(the loop) and `jobs` (the decision) keep their short names without colliding, and so that the
layers test can tell the process (this package, above the API client) from the pure controllers
(below it).

- `base.ControllerLoop`: the level-triggered loop every controller shares.
- `jobs`, `queues`, `podgroups`, `hypernodes`: one loop per controller.
- `command`: `caldera controllers`, the process (leader election, start-up order, flags).
"""
