"""Hypothesis profiles for the property tests (tests/unit/test_plan_properties.py), chosen by
the environment variable HYPOTHESIS_PROFILE:

- fast (default): 25 sequences of up to 8 steps, derandomized (the same sequences on every
  run, so the fast tier never flakes): the whole of test_plan_properties.py takes about 17 s
  of CPU on this project's two-core machine;
- nightly (HYPOTHESIS_PROFILE=nightly): 300 random sequences of up to 20 steps (about 10 min),
  printing how to replay a failure.

Neither writes an example database into the checkout.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Each step runs the Pulumi program under mocks (0.1-0.2 s): too slow for Hypothesis's taste.
_SLOW_STEPS = [HealthCheck.too_slow]

settings.register_profile(
    "fast",
    max_examples=25,
    stateful_step_count=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW_STEPS,
)
settings.register_profile(
    "nightly",
    max_examples=300,
    stateful_step_count=20,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_STEPS,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))
