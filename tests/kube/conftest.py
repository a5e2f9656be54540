"""Fixtures: a real kube-apiserver and the fault proxy in front of it (tests/kube/realapi.py)."""

from __future__ import annotations

from tests.kube.realapi import real, real_api  # noqa: F401  (fixtures)
