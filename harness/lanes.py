"""Runs the end-to-end test modules side by side, each lane on a simulated lab of its own.

``python -m harness.lanes [--lanes N] [-m MARKERS] [MODULE ...]``: the modules that hold tests
selected by MARKERS (default ``e2e``) are handed out whole to N lanes (default 3, or
``DSLAB_TEST_LANES``), longest first, each to the lane with the least work so far; the plan
depends only on the modules, so a module runs on the same lab every time and finds that lab's
build cache warm. Then modules are moved or swapped between lanes where that shortens the longest
lane on a fresh machine (modules that build images of their own) and lengthens no lane past the
longest warm one. The lanes run on labs this run takes (simhosts.leases): the first free ones
from lab 0, skipping any another holder has (a `make demo`'s, another clone's test run); the
simulator's own module gets one more, the first free one from the top. Lane K runs its modules one
after another with ``DSLAB_LAB`` set to its lab, so their simulated hosts, subnet, operator files
and stacks are that lab's and nothing of another lane's; the leases go back at the end. Each
module is its own ``pytest`` run; its lines are printed as they come, prefixed with the lab and the
module. At the end: every module's duration and result, and the exit status is non-zero when any
module failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from simhosts import leases
from simhosts.plan import LAB_ENV, MAX_LABS, SimLab

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"
LANES_ENV = "DSLAB_TEST_LANES"
SIMHOSTS_MODULE = "tests/simhosts/test_simhosts_e2e.py"
SIMHOSTS_LAB_ENV = "DSLAB_SIMHOSTS_TEST_LAB"
"""The simulator's own module takes its lab down and up: one of its own (tests/simhosts/conftest.py)."""
EXPECTED_MINUTES: dict[str, float] = {
    "tests/faults/test_bounds_e2e.py": 10.5,
    "tests/e2e/test_program_e2e.py": 10.5,
    "tests/faults/test_returning_hosts_e2e.py": 10.2,
    "tests/faults/test_encryption_e2e.py": 7.9,
    "tests/faults/test_faults_e2e.py": 7.5,
    "tests/e2e/test_llamafactory_e2e.py": 7.0,
    "tests/faults/test_run_lifecycle_e2e.py": 6.5,
    "tests/faults/test_bastion_e2e.py": 4.3,
    "tests/faults/test_relay_e2e.py": 3.6,
    "tests/e2e/test_upgrade_e2e.py": 3.0,
    "tests/simhosts/test_simhosts_e2e.py": 1.6,
    "tests/toolchain/test_toolchain_proof.py": 1.4,
    "tests/e2e/test_host_mode_e2e.py": 1.1,
    "tests/toolchain/test_cli_progress.py": 0.1,
}
"""About how long each module takes beside another on this project's 2-core machine, with the
labs' build caches warm: the longest go first, so that no lane is left with a long module at the
end. A module not listed counts as 5 minutes."""
UNKNOWN_MINUTES = 5.0
OWN_IMAGE_MINUTES: dict[str, float] = {
    "tests/e2e/test_llamafactory_e2e.py": 5.0,
    "tests/e2e/test_upgrade_e2e.py": 2.0,
}
"""What a module adds on a fresh machine by building an image no other module of its lab builds
(LLaMA-Factory's, the release's), measured on fresh runs. Every lab's first module also builds
the training image from nothing (~6 min), left out: it costs every lane but the one the program's
module starts (that one builds from nothing in every run), and no plan within the warm bound
gains from that (3 lanes: an exhaustive search found none)."""


@dataclass
class ModuleRun:
    """One module's pytest run on one lane."""

    module: str
    lab: int = -1
    seconds: float = 0.0
    returncode: int | None = None
    summary: str = ""
    """pytest's last line, e.g. ``12 passed in 310.2s``."""


def modules_with(markers: str, paths: Sequence[str]) -> list[str]:
    """The test files that hold at least one test that ``-m markers`` selects."""
    collected = subprocess.run(
        [str(PYTHON), "-m", "pytest", "--collect-only", "-q", "-m", markers, *paths],
        cwd=REPO, capture_output=True, text=True,
    )
    if collected.returncode not in (0, 5):
        sys.stdout.write(collected.stdout + collected.stderr)
        raise SystemExit(f"lanes: collecting the {markers} tests failed (exit {collected.returncode})")
    return sorted({line.split("::", 1)[0] for line in collected.stdout.splitlines() if "::" in line})


WIPES_ITS_LAB = {"tests/faults/test_returning_hosts_e2e.py": "tests/e2e/test_program_e2e.py"}
"""A module that wipes its lab's hosts (reinstalled machines: every image and build cache gone),
and one that builds from nothing anyway (the program's module proves that path). They share a
lab, the wiping one last and the other first: no other module finds the lab wiped, in this run or
the next (each would build the image from nothing, ~5 min of both cores), and on a fresh machine
the wiping module finds the image the first one built instead of building it once more."""


def plan_lanes(modules: Sequence[str], lanes: int) -> list[list[str]]:
    """The modules of each lane: longest first, each to the lane with the least expected work
    (ties: the lower lane), then balanced for a fresh machine (balance_fresh); a module of
    WIPES_ITS_LAB goes with the one that builds from nothing, that one first on their lab, the
    wiping one last."""
    firsts = {WIPES_ITS_LAB[module] for module in modules if WIPES_ITS_LAB.get(module) in modules}
    units = [
        [*([WIPES_ITS_LAB[module]] if WIPES_ITS_LAB.get(module) in firsts else []), module]
        for module in modules
        if module not in firsts
    ]

    def minutes(unit: list[str]) -> float:
        return sum(EXPECTED_MINUTES.get(module, UNKNOWN_MINUTES) for module in unit)

    placed: list[list[list[str]]] = [[] for _ in range(lanes)]
    load = [0.0] * lanes
    for unit in sorted(units, key=lambda u: (-minutes(u), u)):
        lane = min(range(lanes), key=lambda index: (load[index], index))
        placed[lane].append(unit)
        load[lane] += minutes(unit)
    balance_fresh(placed, minutes)
    longest_first = [sorted(lane, key=lambda unit: (-minutes(unit), unit)) for lane in placed]
    return [wiped_last([module for unit in lane for module in unit]) for lane in longest_first]


def wiped_last(lane: list[str]) -> list[str]:
    """LANE with each module that wipes the lab last and its module that builds from nothing first."""
    wipers = [module for module in lane if module in WIPES_ITS_LAB]
    firsts = [WIPES_ITS_LAB[module] for module in wipers if WIPES_ITS_LAB[module] in lane]
    return firsts + [module for module in lane if module not in wipers and module not in firsts] + wipers


def balance_fresh(placed: list[list[list[str]]], minutes: Callable[[list[str]], float]) -> None:
    """Moves one unit to another lane, or swaps two, while that shortens the longest lane of a
    fresh machine (OWN_IMAGE_MINUTES added) and no lane's warm minutes grow past the longest warm
    lane's: the warm plan stays as short, and a fresh machine no longer finds every image of its
    own on one lab. Deterministic: the plan still depends only on the modules."""

    def fresh(unit: list[str]) -> float:
        return minutes(unit) + sum(OWN_IMAGE_MINUTES.get(module, 0.0) for module in unit)

    def loads(lanes: list[list[list[str]]], figure: Callable[[list[str]], float]) -> list[float]:
        return [sum(figure(unit) for unit in lane) for lane in lanes]

    def score(lanes: list[list[list[str]]]) -> tuple[float, float]:
        fresh_loads = loads(lanes, fresh)
        return round(max(fresh_loads), 6), round(sum(load * load for load in fresh_loads), 6)

    warm_bound = max(loads(placed, minutes)) + 1e-9
    while True:
        best, best_score = None, score(placed)
        for source, target in ((a, b) for a in range(len(placed)) for b in range(len(placed)) if a != b):
            for index, unit in enumerate(placed[source]):
                swaps = [None, *range(len(placed[target]))] if source < target else [None]
                for other in swaps:
                    trial = [list(lane) for lane in placed]
                    trial[source].pop(index)
                    trial[target].append(unit)
                    if other is not None:
                        trial[source].append(trial[target].pop(other))
                    if max(loads(trial, minutes)) > warm_bound:
                        continue
                    if (trial_score := score(trial)) < best_score:
                        best, best_score = trial, trial_score
        if best is None:
            return
        placed[:] = best


class Lanes:
    """Runs each lane's modules on its lab and prints what they say, a line at a time."""

    def __init__(
        self,
        plan: list[list[str]],
        markers: str,
        pytest_args: Sequence[str],
        labs: Sequence[SimLab],
        simhosts_lab: SimLab | None = None,
    ) -> None:
        self.plan = [[ModuleRun(module) for module in modules] for modules in plan]
        self.labs = list(labs)
        """Lane K's lab, taken for this process."""
        self.simhosts_lab = simhosts_lab
        self.runs = [run for lane in self.plan for run in lane]
        self.lanes = len(plan)
        self.markers = markers
        self.pytest_args = list(pytest_args)
        self.print_lock = threading.Lock()

    def say(self, prefix: str, line: str) -> None:
        with self.print_lock:
            sys.stdout.write(f"[{prefix}] {line}\n")
            sys.stdout.flush()

    def lane(self, lane: int) -> None:
        lab = self.labs[lane].id
        self.clean_lab(lab)
        for run in self.plan[lane]:
            self.run_module(run, lab)

    def clean_lab(self, lab: int) -> None:
        """The lab's servers as if no stack had ever run there, images and build cache kept
        (`python -m simhosts clean`): a run killed halfway leaves its stacks' containers, claims
        and swarm behind, and the program rightly refuses hosts another stack claims, so every
        module of the next run on that lab would fail. A failure here is printed, and the
        modules run anyway: theirs say more."""
        argv = [str(PYTHON), "-m", "simhosts", "--lab", str(lab), "clean"]
        env = {**os.environ, leases.LEASE_PID_ENV: str(os.getpid())}
        result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
        for line in (result.stdout + result.stderr).splitlines():
            self.say(f"lab{lab}", line)

    def run_module(self, run: ModuleRun, lab: int) -> None:
        run.lab = lab
        prefix = f"lab{lab} {Path(run.module).stem}"
        self.say(prefix, f"starting {run.module}")
        env = {**os.environ, LAB_ENV: str(lab), leases.LEASE_PID_ENV: str(os.getpid()), "PYTHONUNBUFFERED": "1"}
        if self.simhosts_lab is not None:
            env[SIMHOSTS_LAB_ENV] = str(self.simhosts_lab.id)
        started = time.monotonic()
        process = subprocess.Popen(
            [str(PYTHON), "-m", "pytest", "-v", "-p", "no:cacheprovider", "-m", self.markers, *self.pytest_args, run.module],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
        )
        assert process.stdout is not None
        last = ""
        for raw in process.stdout:
            line = raw.rstrip("\n")
            if line.strip():
                last = line.strip(" =")
            self.say(prefix, line)
        run.returncode = process.wait()
        run.seconds = time.monotonic() - started
        run.summary = last
        self.say(prefix, f"{'passed' if run.returncode == 0 else 'FAILED'} in {run.seconds / 60:.1f} min: {last}")

    def run(self) -> int:
        started = time.monotonic()
        threads = [threading.Thread(target=self.lane, args=(lane,), daemon=True) for lane in range(self.lanes)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.report(time.monotonic() - started)
        return 0 if all(run.returncode == 0 for run in self.runs) else 1

    def report(self, wall: float) -> None:
        print(f"\ntest modules on {self.lanes} labs side by side (longest first):")
        print(f"{'module':<44} {'lab':>3} {'minutes':>7}  result")
        for run in sorted(self.runs, key=lambda r: -r.seconds):
            result = "passed" if run.returncode == 0 else f"FAILED (exit {run.returncode})"
            print(f"{run.module:<44} {run.lab:>3} {run.seconds / 60:>7.1f}  {result}: {run.summary}")
        busy = sum(run.seconds for run in self.runs)
        print(f"wall {wall / 60:.1f} min for {busy / 60:.1f} min of modules ({busy / max(wall, 1):.2f}x)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.lanes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lanes", type=int, default=int(os.environ.get(LANES_ENV, "3")), help="labs side by side (default 3)")
    parser.add_argument("-m", dest="markers", default="e2e", help="pytest marker expression (default e2e)")
    parser.add_argument("paths", nargs="*", default=["tests"], help="test files or folders (default tests)")
    args, pytest_args = parser.parse_known_args(argv)
    if not 1 <= args.lanes < MAX_LABS - 1:
        parser.error(f"--lanes must be between 1 and {MAX_LABS - 2}, got {args.lanes}")
    modules = modules_with(args.markers, args.paths)
    if not modules:
        print(f"lanes: no test selected by -m {args.markers!r}", file=sys.stderr)
        return 5
    plan = plan_lanes(modules, min(args.lanes, len(modules)))
    holder, pid = str(REPO), os.getpid()
    say = lambda line: print(f"lanes: {line}", flush=True)  # noqa: E731
    try:
        labs = leases.take_free(len(plan), holder, "make test", pid, say)
    except leases.NotEnoughLabs as error:
        print(f"lanes: {error}", file=sys.stderr)
        return 1
    simhosts_lab = None
    try:
        if SIMHOSTS_MODULE in modules:
            # From the top, clear of the lanes' labs and of those a later run takes first.
            spare = [lab for lab in range(MAX_LABS - 1, -1, -1) if lab not in {taken.id for taken in labs}]
            simhosts_lab = leases.take_free(1, holder, "make test", pid, say, among=spare)[0]
        for lab, lane in zip(labs, plan, strict=True):
            print(f"lanes: lab {lab.id}: " + ", ".join(Path(m).stem for m in lane), flush=True)
        if simhosts_lab is not None:
            print(f"lanes: lab {simhosts_lab.id}: the simulator's own tests", flush=True)
        return Lanes(plan, args.markers, pytest_args, labs, simhosts_lab).run()
    except leases.NotEnoughLabs as error:
        print(f"lanes: {error}", file=sys.stderr)
        return 1
    finally:
        for lab in [*labs, *([simhosts_lab] if simhosts_lab is not None else [])]:
            leases.release(lab, holder, pid)


if __name__ == "__main__":
    sys.exit(main())
