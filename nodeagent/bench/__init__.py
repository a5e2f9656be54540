"""Benchmarks of the node agent's internals: every one prints figures and asserts nothing.

Run as `python -m nodeagent.bench.<name>`. They live here rather than in `central.bench`
because they import the agent's modules, and central may import only the agent's API; what
measures the agent from the outside (`central.bench.agent_cpu`) is in central.
"""
