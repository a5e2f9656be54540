"""Benchmarks of central: every one prints figures and asserts nothing.

`caldera bench` is `session` (and `session --e2e`, which runs `e2e` against a real API
server); the others run as `python -m central.bench.<name>`, from a checkout or an installed
wheel alike. They sit in the package, not beside it, so that `caldera bench` works wherever
Caldera is installed. `synthetic` (the benchmarks' cluster) and `floor` (the compiled greedy
placement a session is compared with) serve them.

The node agent's own benchmarks, which reach into the agent's internals, are
`nodeagent.bench`: central imports nothing of the agent but its API (`nodeagent.api`).
"""
