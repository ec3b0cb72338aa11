"""assets/host/results-dir.sh, the results directory's step on each host: made for the
containers to mount; at destroy kept, or with `remove` emptied of the stack's runs only."""

from __future__ import annotations

import subprocess
from pathlib import Path

from components.hosts.host_script import script_text

STACK = "0a1b2c3d"
RUN = f"20261205T201512.120Z-{STACK}-3f2a9c1d4e5b"


def results_dir(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-s", "--", *args], input=script_text("host/results-dir.sh"), capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "DSLAB_HOST": "server2", "HOME": str(home)}, timeout=30, check=False,
    )  # fmt: skip


def test_make_makes_the_directory_and_keep_leaves_every_run(tmp_path: Path) -> None:
    runs = tmp_path / "dslab/dev/runs"
    assert results_dir("make", str(runs), home=tmp_path).returncode == 0 and runs.is_dir()
    (runs / RUN).mkdir()
    kept = results_dir("release", "keep", str(runs), STACK, home=tmp_path)
    assert kept.returncode == 0
    assert kept.stderr == f"server2: the results of every run stay in {runs} (training.results_on_destroy: keep)\n"
    assert (runs / RUN).is_dir()


def test_remove_takes_the_stacks_runs_and_leaves_what_else_is_there(tmp_path: Path) -> None:
    runs = tmp_path / "dslab/dev/runs"
    (runs / RUN / "checkpoint-50").mkdir(parents=True)
    (runs / f"20261205T201600.001Z-{STACK}-000000000000").mkdir()
    (runs / "last-run").write_text(RUN)
    (runs / "my-notes").mkdir()  # the user's: not a run's name
    (runs / "20261205T201700.000Z-99999999-000000000000").mkdir()  # another stack's run
    (runs / "20261205T201512Z-3f2a9c1d4e5b").mkdir()  # an earlier release's: whose, it does not say
    removed = results_dir("release", "remove", str(runs), STACK, str(runs), str(runs.parent), home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert removed.stderr == f"server2: removed 2 run(s) from {runs} (training.results_on_destroy: remove)\n"
    assert sorted(path.name for path in runs.iterdir()) == [
        "20261205T201512Z-3f2a9c1d4e5b", "20261205T201700.000Z-99999999-000000000000", "my-notes",
    ], "another stack's runs and what else is there stay, and so do the directories left non-empty"  # fmt: skip

    for left in runs.iterdir():
        left.rmdir()
    assert results_dir("release", "remove", str(runs), STACK, str(runs), str(runs.parent), home=tmp_path).returncode == 0
    assert not runs.parent.exists(), "empty, the default directory and its parent go"
    again = results_dir("release", "remove", str(runs), STACK, str(runs), home=tmp_path)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"server2: removed 0 run(s) from {runs} (training.results_on_destroy: remove)\n", (
        "a second destroy finds nothing"
    )


def test_forget_removes_only_the_steps_mark(tmp_path: Path) -> None:
    runs = tmp_path / "dslab/dev/runs"
    assert results_dir("make", str(runs), home=tmp_path).returncode == 0
    mark = tmp_path / ".dslab/steps/results.gen"
    assert mark.is_file(), "make leaves the step's generation"
    (runs / RUN).mkdir()
    (tmp_path / ".dslab/steps/run-results").write_text(f"{runs}\n")  # where the last run was (deepspeed-launch.sh)
    forgot = results_dir("forget", home=tmp_path)
    assert forgot.returncode == 0 and forgot.stderr == "", forgot.stderr
    assert not mark.exists() and (runs / RUN).is_dir(), "the runs are the operator's step's to release"
    assert not (tmp_path / ".dslab").exists(), "no note left, nor its folders"


def test_remove_takes_a_link_to_a_run_kept_elsewhere_not_the_run(tmp_path: Path) -> None:
    before, runs = tmp_path / "before", tmp_path / "runs"
    (before / RUN).mkdir(parents=True)
    runs.mkdir()
    (runs / RUN).symlink_to(before / RUN)  # a finished run found where results_dir was
    removed = results_dir("release", "remove", str(runs), STACK, home=tmp_path)
    assert removed.returncode == 0, removed.stderr
    assert not (runs / RUN).is_symlink() and (before / RUN).is_dir()
