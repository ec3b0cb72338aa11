"""Hands pytest's terminal to harness.progress, for progress lines of long steps; and holds the
simulated labs the session's end-to-end tests use (simhosts.leases), so that a session never
touches a lab another holder has: a `make demo`'s, another clone's test run."""

from __future__ import annotations

import os

import pytest

from harness import progress
from harness.pulumi_cli import REPO
from simhosts import leases
from simhosts.plan import SimLab, lab_from_env

SIMHOSTS_TESTS = REPO / "tests" / "simhosts"
SIMHOSTS_LAB_ENV = "DSLAB_SIMHOSTS_TEST_LAB"
SIMHOSTS_DEFAULT_LAB = 9
"""The simulator's own tests take a lab down and up: one no module of the product uses."""

HELD = pytest.StashKey[list[SimLab]]()
"""The labs this session took (given back at its end); none under the harness, which holds them."""


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is not None:
        progress.attach(terminal, capture)


def labs_used(session: pytest.Session) -> set[SimLab]:
    """The labs the session's end-to-end tests work on."""
    used: set[SimLab] = set()
    for item in session.items:
        if item.get_closest_marker("e2e") is None:
            continue
        if SIMHOSTS_TESTS in item.path.parents:
            used.add(SimLab(int(os.environ.get(SIMHOSTS_LAB_ENV, str(SIMHOSTS_DEFAULT_LAB)))))
        else:
            used.add(lab_from_env())
    return used


def pytest_collection_finish(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return  # touches no lab (the harness collects to plan its lanes)
    harness_pid = os.environ.get(leases.LEASE_PID_ENV, "").strip()
    held = session.config.stash.setdefault(HELD, [])
    for lab in sorted(labs_used(session), key=lambda lab: lab.id):
        if harness_pid.isdigit():
            lease = leases.holder_of(lab)
            if not leases.covers(lease, str(REPO), int(harness_pid)):
                pytest.exit(
                    f"lab {lab.id} is not held by the harness that started this session ({lease})", returncode=3
                )
            continue
        try:
            leases.take(lab, str(REPO), "pytest", os.getpid(), lambda line: print(f"leases: {line}"))
        except leases.LabTaken as refusal:
            pytest.exit(str(refusal), returncode=3)
        held.append(lab)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    for lab in session.config.stash.get(HELD, []):
        leases.release(lab, str(REPO), os.getpid())
