"""Hypothesis profiles for swamp's property tests, chosen by HYPOTHESIS_PROFILE (default `ci`).

`ci` is bounded so the whole suite stays fast on two cores; `long` is what scripts/reliability runs;
`deep` is the long run (`HYPOTHESIS_PROFILE=deep scripts/test tests/property`, or
`--hypothesis-profile=deep`).
`scaled(n)` gives a test that is much cheaper than the rest n times the profile's budget.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large]

settings.register_profile(
    "ci", max_examples=25, deadline=None, suppress_health_check=QUIET, stateful_step_count=12, print_blob=True
)
settings.register_profile(
    "long",
    max_examples=100,
    deadline=None,
    suppress_health_check=QUIET,
    stateful_step_count=25,
    print_blob=True,
)
settings.register_profile(
    "deep",
    max_examples=600,
    deadline=None,
    suppress_health_check=QUIET,
    stateful_step_count=40,
    print_blob=True,
)
settings.register_profile(
    "dev", max_examples=10, deadline=None, suppress_health_check=QUIET, stateful_step_count=8
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def scaled(factor: float) -> int:
    """Examples for a test `factor` times cheaper than a typical one, within the loaded profile."""
    return max(1, int(settings.default.max_examples * factor))
