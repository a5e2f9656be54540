"""Collectors: each reads the host through `HostPaths`, so tests point them at fake trees."""
