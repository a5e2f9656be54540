"""Hypothesis profiles for the fuzz suite: a modest default that keeps `pytest` quick, and
`CALDERA_FUZZ=long` (or `--hypothesis-profile=fuzz-long`) for deep runs."""

import os

from hypothesis import HealthCheck, settings

COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                     HealthCheck.function_scoped_fixture])
settings.register_profile("fuzz-default", max_examples=25, **COMMON)
settings.register_profile("fuzz-long", max_examples=int(os.environ.get("CALDERA_FUZZ_EXAMPLES", "1000")), **COMMON)
FUZZ = settings.get_profile("fuzz-long" if os.environ.get("CALDERA_FUZZ") == "long" else "fuzz-default")
