"""cgroup v1/v2 access: where pods live (layout) and how to read and write knobs (drivers)."""
