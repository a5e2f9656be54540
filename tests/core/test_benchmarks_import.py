"""Every benchmark module imports, and every script among them has a `main` to run.

Benchmarks print figures and assert nothing, so no other test runs most of them: without this
one a renamed function or a deleted helper breaks them silently, as happened before they moved
into the packages.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import central.bench
import nodeagent.bench

MODULES = [m.name for package in (central.bench, nodeagent.bench)
           for m in pkgutil.iter_modules(package.__path__, package.__name__ + ".")]
# imported by the scripts, not run on their own; `session` is `caldera bench` (add_arguments/run)
HELPERS = {"central.bench.e2e", "central.bench.e2e_audit", "central.bench.e2e_cases", "central.bench.e2e_load",
           "central.bench.e2e_shards", "central.bench.e2e_volcano", "central.bench.floor", "central.bench.synthetic",
           "central.bench.session"}


def test_there_are_benchmarks_to_check():
    assert {"central.bench.session", "central.bench.webhook_load", "nodeagent.bench.qos_real"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_benchmark_imports(name: str):
    module = importlib.import_module(name)
    if name not in HELPERS:
        assert callable(getattr(module, "main", None)), f"{name} has no main(); `python -m {name}` runs nothing"


def test_caldera_bench_is_a_command():
    module = importlib.import_module("central.bench.session")
    assert callable(module.add_arguments) and callable(module.run)
