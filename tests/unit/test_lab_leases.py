"""simhosts.leases: a lab is taken, never just used. Real lock files in a cache of the test's own
(DSLAB_CACHE), real processes for the leases held for a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from simhosts import leases
from simhosts.plan import SimLab

HERE = "/work/clone-a"
THERE = "/work/clone-b"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSLAB_CACHE", str(tmp_path))


def gone_pid() -> int:
    """The pid of a process that has ended and been reaped."""
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def log(line: str) -> None:
    """What a taker says, where the test does not look."""


def test_a_kept_lab_is_refused_to_another_clone_naming_its_holder() -> None:
    leases.take(SimLab(0), HERE, "make demo / hosts-up", None, log)
    with pytest.raises(leases.LabTaken, match=r"lab 0 is held by /work/clone-a \(make demo / hosts-up, since "):
        leases.take(SimLab(0), THERE, "make test", 4242, log)
    with pytest.raises(leases.LabTaken):
        leases.take(SimLab(0), THERE, "make demo / hosts-up", None, log)


def test_the_suite_skips_a_demos_lab_even_in_its_own_clone() -> None:
    leases.take(SimLab(0), HERE, "make demo / hosts-up", None, log)
    taken = leases.take_free(3, HERE, "make test", 4242, log)
    assert [lab.id for lab in taken] == [1, 2, 3], "the demo's lab 0 is left alone"


def test_the_harness_children_keep_its_lease_and_others_wait() -> None:
    harness = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        lease = leases.take(SimLab(2), HERE, "make test", harness.pid, log)
        # Its modules' `simhosts up` (a kept request of the same clone) finds the harness's lease.
        assert leases.take(SimLab(2), HERE, "make demo / hosts-up", None, log) == lease
        with pytest.raises(leases.LabTaken, match=f"pid {harness.pid}"):
            leases.take(SimLab(2), THERE, "make test", 99, log)
    finally:
        harness.kill()
        harness.wait()


def test_a_lease_whose_process_is_gone_is_taken_over_and_said() -> None:
    dead = gone_pid()
    leases.take(SimLab(4), THERE, "make test", dead, log)
    said: list[str] = []
    lease = leases.take(SimLab(4), HERE, "make test", 77, said.append)
    assert lease.holder == HERE and lease.pid == 77
    assert said == [f"lab 4: the lease of {THERE} (make test, pid {dead}, since {said[0].split('since ')[1]}"], said


def test_only_the_holder_gives_a_lab_back_and_only_its_own_kind_of_lease() -> None:
    leases.take(SimLab(5), HERE, "make test", 4242, log)
    assert not leases.release(SimLab(5), THERE, 4242)
    assert not leases.release(SimLab(5), HERE, None), "`simhosts down` in the clone does not end the harness's lease"
    assert leases.release(SimLab(5), HERE, 4242)
    assert leases.holder_of(SimLab(5)) is None


def test_too_few_free_labs_gives_back_what_was_taken_and_names_the_holders() -> None:
    for lab_id in (1, 3):
        leases.take(SimLab(lab_id), THERE, "make demo / hosts-up", None, log)
    with pytest.raises(leases.NotEnoughLabs, match=r"3 free labs are needed and 2 are; held: lab 1 by /work/clone-b"):
        leases.take_free(3, HERE, "make test", 4242, log, among=range(4))
    assert leases.holder_of(SimLab(0)) is None and leases.holder_of(SimLab(2)) is None


def test_a_half_written_lease_holds_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "lab-leases"
    folder.mkdir()
    (folder / "lab-6.json").write_text('{"holder": "/x", "pur')
    assert leases.take(SimLab(6), HERE, "make test", 4242, log).holder == HERE


def take_three(holder: str) -> list[int]:
    return [lab.id for lab in leases.take_free(3, holder, "make test", 1, lambda _: None, among=range(6))]


def test_two_clones_taking_labs_at_once_get_different_ones() -> None:
    with ProcessPoolExecutor(max_workers=2) as pool:
        first, second = pool.map(take_three, [HERE, THERE])
    assert len(set(first) | set(second)) == 6, (first, second)


def test_simhosts_refuses_to_clean_a_lab_another_clone_holds(tmp_path: Path) -> None:
    folder = tmp_path / "lab-leases"
    folder.mkdir()
    lease = {"holder": THERE, "purpose": "make demo / hosts-up", "pid": None, "since": "2026-12-07T22:00:00Z"}
    (folder / "lab-7.json").write_text(json.dumps(lease))
    ran = subprocess.run(
        [sys.executable, "-m", "simhosts", "--lab", "7", "clean"], cwd=Path(__file__).resolve().parents[2],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert ran.returncode == 1
    assert f"error: lab 7 is held by {THERE} (make demo / hosts-up, since 2026-12-07T22:00:00Z)" in ran.stderr


def run_e2e_session(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """A plain pytest session of one end-to-end module on lab 8, which another clone keeps."""
    folder = tmp_path / "lab-leases"
    folder.mkdir(exist_ok=True)
    lease = {"holder": THERE, "purpose": "make demo / hosts-up", "pid": None, "since": "2026-12-07T22:00:00Z"}
    (folder / "lab-8.json").write_text(json.dumps(lease))
    repo = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "-m", "e2e", *flags,
         "tests/e2e/test_host_mode_e2e.py"],
        cwd=repo, env={**os.environ, "DSLAB_LAB": "8", "DSLAB_CACHE": str(tmp_path)},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_an_end_to_end_session_stops_before_any_test_on_a_lab_another_holder_has(tmp_path: Path) -> None:
    ran = run_e2e_session(tmp_path)
    assert ran.returncode == 3, ran.stdout[-2000:]
    assert f"lab 8 is held by {THERE} (make demo / hosts-up" in ran.stdout + ran.stderr
    assert "passed" not in ran.stdout and "failed" not in ran.stdout, "no test ran"


def test_collecting_the_end_to_end_tests_holds_no_lab(tmp_path: Path) -> None:
    ran = run_e2e_session(tmp_path, "--collect-only")
    assert ran.returncode == 0, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert "tests collected" in ran.stdout, "the harness plans its lanes this way"
