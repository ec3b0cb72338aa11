"""assets/host/deepspeed-launch.sh as the run's Command runs it, here with a stand-in `docker
exec` (tests/assets/test_place_files.py) and a stand-in run-deepspeed.sh in the folder
standing for the container's root: the Command's error holds what the run said and the log's
last lines, never the whole log, which stays in the container."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from components.hosts.host_script import script_text
from tests.assets.test_place_files import STAND_IN_DOCKER

RUN = "/opt/dslab/run"
KEY = "0123456789ab"

# Writes 500 log lines, then a status, and exits as told: what run-deepspeed.sh leaves.
STAND_IN_RUN = """#!/bin/bash
log="" status=""
while [[ $1 != -- ]]; do case $1 in --log) log=$2; shift 2;; --status) status=$2; shift 2;; *) shift;; esac; done
shift
printf '%s\n' "$@" >"$ROOT/argv"
for n in $(seq 0 499); do echo "server1: step $n loss=0.$n"; done >"$log"
echo "server1: dslab: finished steps=500 final_loss=0.1" >>"$log"
if [[ $EXIT == 0 ]]; then echo succeeded >"$status"; else echo "failed rc=$EXIT" >"$status"; fi
echo "run-deepspeed.sh: the run said this" >&2
exit "$EXIT"
"""


# The run's name takes the time to the second: each call here is a second later, not a sleep.
STAND_IN_DATE = """#!/bin/bash
n=$(( $(cat "$ROOT/seconds" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$ROOT/seconds"
printf '20261205T%06dZ\\n' "$n"
"""


def launch(tmp_path: Path, action: str, exit_code: int = 0, resume: str = "auto") -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(STAND_IN_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    (bin_dir / "date").write_text(STAND_IN_DATE)
    (bin_dir / "date").chmod(0o755)
    scripts = tmp_path / "root/opt/dslab"
    (scripts / "run").mkdir(parents=True, exist_ok=True)
    (scripts / "run-deepspeed.sh").write_text(STAND_IN_RUN)
    (scripts / "run-deepspeed.sh").chmod(0o755)
    argv = [
        action, "llm", "/opt/dslab", RUN, "wait", "1800", "-", str(tmp_path / "results"), KEY, resume,
        "--", "deepspeed", "train.py", "--output_dir", "/opt/dslab/results/@RUN@",
    ]  # fmt: skip
    return subprocess.run(
        ["bash", "-s", "--", *argv], input=script_text("host/deepspeed-launch.sh"), capture_output=True, text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ROOT": str(tmp_path / "root"), "EXIT": str(exit_code)},
        timeout=30,
    )  # fmt: skip


def test_a_failed_run_shows_the_last_lines_of_its_log_not_all_of_it(tmp_path: Path) -> None:
    ran = launch(tmp_path, "run", exit_code=1)
    assert ran.returncode == 1
    said = ran.stdout + ran.stderr
    assert "run-deepspeed.sh: the run said this" in said
    log = (tmp_path / f"root{RUN}/train.log").read_text().splitlines()
    shown = [line.removeprefix("  ") for line in said.splitlines() if line.startswith("  ")]
    assert shown == log[-15:] and shown[-1] == "server1: dslab: finished steps=500 final_loss=0.1", "the last 15 lines only"
    name = (tmp_path / "results/last-run").read_text().strip()
    kept = tmp_path / "results" / name / "train.log"
    assert f"training failed (exit 1, status: failed rc=1); the whole log is llm:{RUN}/train.log, kept in {kept}" in said
    assert len(said.splitlines()) < 25
    assert kept.read_text() == (tmp_path / f"root{RUN}/train.log").read_text(), "the whole log, on the host"


def test_a_finished_run_reports_its_summary_and_the_report_says_it_again_without_running(tmp_path: Path) -> None:
    ran = launch(tmp_path, "run")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout.splitlines()[-1])
    assert result["status"] == "succeeded" and result["summary"] == "server1: dslab: finished steps=500 final_loss=0.1"
    kept = tmp_path / "results" / result["run"] / "train.log"
    assert ran.stderr.splitlines()[-1] == f"training succeeded; the log is llm:{RUN}/train.log, kept in {kept}"
    log = tmp_path / f"root{RUN}/train.log"
    log.write_text(log.read_text() + "left as it was\n")
    reported = launch(tmp_path, "report")
    assert reported.returncode == 0 and json.loads(reported.stdout.splitlines()[-1]) == result
    assert log.read_text().endswith("left as it was\n"), "report runs nothing"


def test_each_run_gets_a_directory_of_its_own_named_by_its_time_and_inputs_and_marked_when_finished(
    tmp_path: Path,
) -> None:
    failed = launch(tmp_path, "run", exit_code=1)
    assert failed.returncode == 1
    first = (tmp_path / "results/last-run").read_text().strip()
    ran = launch(tmp_path, "run")
    assert ran.returncode == 0, ran.stderr
    name = json.loads(ran.stdout.splitlines()[-1])["run"]
    assert re.fullmatch(r"\d{8}T\d{6}Z-" + KEY, name) and name != first, "a new directory for every run"
    # The stand-in docker exec puts the container's paths under ROOT.
    argv = (tmp_path / "root/argv").read_text().splitlines()
    assert argv[-1] == f"{tmp_path}/root/opt/dslab/results/{name}", "the command line names it"
    assert f"this run's results: {tmp_path}/results/{name} on every host" in ran.stderr
    assert (tmp_path / "results" / name / "finished").is_file()
    assert (tmp_path / "results" / first).is_dir() and not (tmp_path / "results" / first / "finished").exists()
    stopped = launch(tmp_path, "stop")
    assert f"the results of every run are on each host in {tmp_path}/results" in stopped.stderr
    assert (tmp_path / "results" / name / "finished").is_file(), "nothing of them is deleted"


def test_an_unfinished_run_with_a_checkpoint_goes_on_in_its_directory_unless_resume_is_never(tmp_path: Path) -> None:
    failed = launch(tmp_path, "run", exit_code=1)
    assert failed.returncode == 1
    first = (tmp_path / "results/last-run").read_text().strip()
    # No checkpoint yet: nothing to go on from, a new directory.
    second = launch(tmp_path, "run", exit_code=1)
    assert (tmp_path / "results/last-run").read_text().strip() != first
    assert "resuming" not in second.stderr
    name = (tmp_path / "results/last-run").read_text().strip()
    (tmp_path / "results" / name / "checkpoints").mkdir()
    (tmp_path / "results" / name / "checkpoints/latest").write_text("step100")
    resumed = launch(tmp_path, "run")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming run {name} from its last checkpoint (training.resume: auto)" in resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["run"] == name, "in the same directory"
    attempts = (tmp_path / "results" / name / "train.log").read_text()
    assert attempts.count("dslab: finished steps=500") == 2, "the cut attempt's log, then the resumed one's"
    # Finished now: the next run of the same inputs starts over in a new directory.
    again = launch(tmp_path, "run")
    assert json.loads(again.stdout.splitlines()[-1])["run"] != name
    # Never: an unfinished run with a checkpoint is left as it is.
    again_name = json.loads(again.stdout.splitlines()[-1])["run"]
    (tmp_path / "results" / again_name / "finished").unlink()
    (tmp_path / "results" / again_name / "checkpoint-20").mkdir()
    never = launch(tmp_path, "run", resume="never")
    assert json.loads(never.stdout.splitlines()[-1])["run"] != again_name and "resuming" not in never.stderr
