"""The agent-to-scheduler contract: stubs generated from proto/ (see generate.py)."""
