"""assets/operator/results-release.sh, the results directory's release at destroy: the setting is
read from the stack file as it is then (destroy runs no program), and `remove` runs the host's
script over ssh (here a stand-in ssh that runs it on this machine)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from components.hosts.host_script import script_text
from components.paths import ASSETS_DIR

TAG = "0a1b2c3d"
RUN = f"20261206T093000.123Z-{TAG}-0123456789ab"
OTHER = "20261206T093000.456Z-99999999-0123456789ab"

# Like ssh: the words after the destination are one command line for the host's shell.
STAND_IN_SSH = """#!/bin/bash
echo "$*" >>"$0.calls"
while [[ $1 != *@* ]]; do shift; done
shift
exec bash -c "$*"
"""


@pytest.fixture
def lab(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin/ssh").write_text(STAND_IN_SSH)
    (tmp_path / "bin/ssh").chmod(0o755)
    for run in (RUN, OTHER):
        (tmp_path / "runs" / run).mkdir(parents=True)
    return tmp_path


def release(lab: Path, stack_file: str, made: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ASSETS_DIR / "operator/results-release.sh"), stack_file, made, "server2", "root@10.0.18.2:22",
         str(lab / "runs"), TAG, "--", "-o", "StrictHostKeyChecking=yes"],
        input=script_text("host/results-dir.sh"), capture_output=True, text=True, cwd=lab, timeout=30,
        env={"PATH": f"{lab / 'bin'}:/usr/bin:/bin", "DSLAB_PYTHON": sys.executable, "HOME": str(lab)},
    )  # fmt: skip


def stack_file(lab: Path, on_destroy: str | None) -> str:
    training = f"    results_on_destroy: {on_destroy}\n" if on_destroy else "    wait: true\n"
    (lab / "Pulumi.dev.yaml").write_text(f"config:\n  dslab:training:\n{training}")
    return "Pulumi.dev.yaml"


def test_remove_set_after_the_last_up_removes_this_stacks_runs_at_destroy(lab: Path) -> None:
    released = release(lab, stack_file(lab, "remove"), made="keep")
    assert released.returncode == 0, released.stderr
    assert released.stderr == f"this host: removed 1 run(s) from {lab / 'runs'} (training.results_on_destroy: remove)\n"
    assert sorted(path.name for path in (lab / "runs").iterdir()) == [OTHER], "another stack's run stays"
    assert "-p 22 root@10.0.18.2" in (lab / "bin/ssh.calls").read_text() and "StrictHostKeyChecking=yes" in (
        lab / "bin/ssh.calls"
    ).read_text()


@pytest.mark.parametrize("on_destroy", ["keep", None], ids=["keep set", "unset: the default"])
def test_keep_in_the_stack_file_now_keeps_every_run_whatever_the_last_up_applied(lab: Path, on_destroy: str | None) -> None:
    released = release(lab, stack_file(lab, on_destroy), made="remove")
    assert released.returncode == 0, released.stderr
    assert released.stderr == f"server2: the results of every run stay in {lab / 'runs'} (training.results_on_destroy: keep)\n"
    assert sorted(path.name for path in (lab / "runs").iterdir()) == sorted([RUN, OTHER])
    assert not (lab / "bin/ssh.calls").exists(), "the host is not even asked"


def test_a_stack_file_that_cannot_be_read_leaves_the_setting_the_last_up_applied(lab: Path) -> None:
    (lab / "Pulumi.dev.yaml").write_text("config: [unclosed\n")
    released = release(lab, "Pulumi.dev.yaml", made="remove")
    assert released.returncode == 0, released.stderr
    assert "removed 1 run(s)" in released.stderr
    assert release(lab, "Pulumi.gone.yaml", made="keep").stderr.endswith("(training.results_on_destroy: keep)\n")
