"""Hypothesis profiles for the property tests (tests/unit/test_plan_properties.py), chosen by
the environment variable HYPOTHESIS_PROFILE:

- fast (default): 6 sequences of up to 8 steps, derandomized (the same sequences on every
  run, so the fast tier never flakes). Each step runs the program twice, as `preview` and as
  `up`: the whole of test_plan_properties.py runs it 156 times, about 30 s of CPU on this
  project's two-core machine (25 sequences, the program run once a step: 143 runs, 26 s);
- nightly (HYPOTHESIS_PROFILE=nightly, `make test-properties`): 50 random sequences of up to
  20 steps, about 4.5 min on that machine (10 min at most), printing how to replay a failure.

Neither writes an example database into the checkout.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Each step runs the Pulumi program under mocks (0.1-0.2 s): too slow for Hypothesis's taste.
_SLOW_STEPS = [HealthCheck.too_slow]

settings.register_profile(
    "fast",
    max_examples=6,
    stateful_step_count=8,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=_SLOW_STEPS,
)
settings.register_profile(
    "nightly",
    max_examples=50,
    stateful_step_count=20,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=_SLOW_STEPS,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fast"))
