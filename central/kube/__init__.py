"""The Kubernetes API client layer, shared by every process that talks to a cluster.

`client` (requests, QPS limits, errors), `informer` (list + watch reflectors), `events`
(Event recording), `leader` (Lease election), `workqueue` (keys handed to one worker at a
time) and `command_errors` (how a command reports an API failure). Nothing here schedules,
reconciles or admits: the processes that do live in `central.scheduler`,
`central.controllers.loops` and `central.admission.webhook`, above this layer.
"""
