"""How the end-to-end modules are shared out among the labs (harness/lanes.py)."""

from __future__ import annotations

import pytest

import harness.lanes
from harness.lanes import EXPECTED_MINUTES, OWN_IMAGE_MINUTES, UNKNOWN_MINUTES, WIPES_ITS_LAB, plan_lanes


def minutes(lane: list[str]) -> float:
    return sum(EXPECTED_MINUTES.get(module, UNKNOWN_MINUTES) for module in lane)


def test_every_module_runs_once_and_the_lanes_are_balanced_to_within_the_longest_module() -> None:
    modules = sorted(EXPECTED_MINUTES)
    for lanes in (1, 2, 3, 4):
        plan = plan_lanes(modules, lanes)
        assert sorted(module for lane in plan for module in lane) == modules
        loads = [minutes(lane) for lane in plan]
        assert max(loads) - min(loads) <= max(EXPECTED_MINUTES.values()), (lanes, loads)


def test_the_plan_depends_only_on_the_modules_so_each_finds_its_lab_warm() -> None:
    modules = sorted(EXPECTED_MINUTES)
    assert plan_lanes(modules, 3) == plan_lanes(list(reversed(modules)), 3)
    longest = max(
        modules, key=lambda module: EXPECTED_MINUTES[module] + EXPECTED_MINUTES.get(WIPES_ITS_LAB.get(module, ""), 0)
    )
    assert longest in plan_lanes(modules, 2)[0], "the longest goes first, to lab 0"


def test_a_module_that_wipes_its_lab_runs_last_there_after_the_one_that_builds_from_nothing_ran_first() -> None:
    modules = sorted(EXPECTED_MINUTES)
    for lanes in (1, 2, 3, 4):
        for wiper, first in WIPES_ITS_LAB.items():
            lane = next(lane for lane in plan_lanes(modules, lanes) if wiper in lane)
            assert (lane[0], lane[-1]) == (first, wiper), (lanes, lane)
    for wiper in WIPES_ITS_LAB:
        without_first = [module for module in modules if module not in WIPES_ITS_LAB.values()]
        lane = next(lane for lane in plan_lanes(without_first, 3) if wiper in lane)
        assert lane[-1] == wiper and len(lane) > 1, lane
    alone = plan_lanes(["tests/e2e/test_program_e2e.py", "tests/e2e/test_upgrade_e2e.py"], 2)
    assert sorted(module for lane in alone for module in lane) == [
        "tests/e2e/test_program_e2e.py",
        "tests/e2e/test_upgrade_e2e.py",
    ]


def test_a_module_without_an_estimate_counts_as_an_average_one() -> None:
    plan = plan_lanes(["tests/e2e/test_new_e2e.py", "tests/e2e/test_program_e2e.py"], 2)
    assert plan == [["tests/e2e/test_program_e2e.py"], ["tests/e2e/test_new_e2e.py"]]


def test_a_fresh_machine_finds_the_modules_with_images_of_their_own_spread_and_the_warm_plan_no_longer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    modules = sorted(EXPECTED_MINUTES)

    def fresh(lane: list[str]) -> float:
        return minutes(lane) + sum(OWN_IMAGE_MINUTES.get(module, 0.0) for module in lane)

    for lanes in (2, 3, 4):
        plan = plan_lanes(modules, lanes)
        with monkeypatch.context() as longest_first_only:
            longest_first_only.setattr(harness.lanes, "balance_fresh", lambda placed, minutes: None)
            warm_plan = plan_lanes(modules, lanes)
        assert sorted(module for lane in plan for module in lane) == modules
        assert max(map(minutes, plan)) <= max(map(minutes, warm_plan)) + 1e-9, (lanes, plan)
        assert max(map(fresh, plan)) < max(map(fresh, warm_plan)), (lanes, plan, warm_plan)
    assert not any(set(OWN_IMAGE_MINUTES) <= set(lane) for lane in plan_lanes(modules, 3))
