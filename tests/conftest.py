import pytest

pytest.register_assert_rewrite("tests.scenarios.harness")


def pytest_collection_modifyitems(items):
    """A test on a real kube-apiserver carries the `e2e` marker, whichever file it is in."""
    for item in items:
        if {"real", "real_api", "cluster", "tenant"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.e2e)
