import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "conformance: runs Volcano's own e2e suites on Caldera and on Volcano "
                                       "(opt-in: CALDERA_CONFORMANCE=1; builds for about 30 CPU-minutes the first time)")


@pytest.fixture
def conformance_enabled():
    import os
    if os.environ.get("CALDERA_CONFORMANCE") != "1":
        pytest.skip("Volcano's e2e suites are opt-in: set CALDERA_CONFORMANCE=1 (and CALDERA_VOLCANO_REPO to a "
                    "clone of github.com/volcano-sh/volcano for the first build)")
