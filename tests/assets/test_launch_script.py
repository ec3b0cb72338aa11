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
from components.paths import ASSETS_DIR
from components.steps.deepspeed_launch import launch_spec
from tests.assets.test_place_files import STAND_IN_DOCKER

RUN = "/opt/dslab/run"
SUFFIX = "0a1b2c3d-0123456789ab"
IDENTITY = '{"argv":["deepspeed","train.py"],"image":"dslab-train:aaaa"}'

# Writes 500 log lines, then a status, and exits as told: what run-deepspeed.sh leaves, in the
# container and in the run's directory (--record).
STAND_IN_RUN = """#!/bin/bash
log="" status="" record=""
while [[ $1 != -- ]]; do
  case $1 in --log) log=$2; shift 2;; --status) status=$2; shift 2;; --record) record=$2; shift 2;; *) shift;; esac
done
shift
printf '%s\n' "$@" >"$ROOT/argv"
for n in $(seq 0 499); do echo "server1: step $n loss=0.$n"; done >"$log"
echo "server1: dslab: finished steps=500 final_loss=0.1" >>"$log"
if [[ $EXIT == 0 ]]; then state=succeeded; else state="failed rc=$EXIT"; fi
echo "$state" >"$status"
cat "$log" >>"$record/train.log"
echo "$state" >"$record/status"
[[ $EXIT != 0 ]] || echo 2026-12-05T00:00:00Z >"$record/finished"
echo "run-deepspeed.sh: the run said this" >&2
exit "$EXIT"
"""


# The run's name takes the time to the millisecond: each call here is a second later, not a sleep.
STAND_IN_DATE = """#!/bin/bash
n=$(( $(cat "$ROOT/seconds" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$ROOT/seconds"
printf '20261205T%06d.000Z\\n' "$n"
"""

# No training process is ever found or stopped on this machine.
STAND_IN_PROCESSES = "#!/bin/bash\nexit 1\n"


def launch(
    tmp_path: Path, action: str, exit_code: int = 0, resume: str = "auto", results: str = "results"
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(STAND_IN_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    (bin_dir / "date").write_text(STAND_IN_DATE)
    (bin_dir / "date").chmod(0o755)
    for tool in ("pgrep", "pkill"):
        (bin_dir / tool).write_text(STAND_IN_PROCESSES)
        (bin_dir / tool).chmod(0o755)
    scripts = tmp_path / "root/opt/dslab"
    (scripts / "run").mkdir(parents=True, exist_ok=True)
    # The container's mount of the host's results directory (a container made with RESULTS).
    (tmp_path / results).mkdir(exist_ok=True)
    (scripts / "results").unlink(missing_ok=True)
    (scripts / "results").symlink_to(tmp_path / results)
    (scripts / "run-deepspeed.sh").write_text(STAND_IN_RUN)
    (scripts / "run-deepspeed.sh").chmod(0o755)
    argv = [
        action, "llm", "/opt/dslab", RUN, "wait", "1800", str(tmp_path / results), "/opt/dslab/results/@RUN@",
        SUFFIX, resume, "0",
    ]  # fmt: skip
    spec = launch_spec(IDENTITY, [], ["deepspeed", "train.py", "--output_dir", "/opt/dslab/results/@RUN@"])
    return subprocess.run(
        ["bash", "-s", "--", *argv], input=script_text("host/deepspeed-launch.sh") + spec,
        capture_output=True, text=True, timeout=30,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ROOT": str(tmp_path / "root"), "EXIT": str(exit_code),
             "HOME": str(tmp_path / "home")},
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
    assert ran.stderr.splitlines()[-1] == (
        f"training succeeded; the log is llm:{RUN}/train.log, kept in {kept} when the run ends"
    )
    seen = tmp_path / "home/.dslab/steps/run-report.seen"
    assert seen.read_text() == f"{result['run']} succeeded\n", "what the step reported, for the probe to compare"
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
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-" + SUFFIX, name) and name != first, "a new directory for every run"
    assert (tmp_path / "results" / name / "identity.json").read_text() == IDENTITY + "\n", "what the run is, kept"
    assert f"run {name}: {IDENTITY}" in ran.stderr, "and said in its first lines"
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
    # Finished now: never resumed; the next run of the same inputs (a new container) reports it.
    (tmp_path / "root/argv").unlink()
    again = launch(tmp_path, "run")
    assert again.returncode == 0, again.stderr
    reported = json.loads(again.stdout.splitlines()[-1])
    assert reported["run"] == name and reported["status"] == "succeeded"
    assert reported["summary"] == "server1: dslab: finished steps=500 final_loss=0.1"
    assert f"run {name} has these inputs and finished: nothing to train" in again.stderr
    assert not (tmp_path / "root/argv").exists(), "nothing ran"
    # Never: every run starts over, in a new directory.
    again = launch(tmp_path, "run", resume="never")
    again_name = json.loads(again.stdout.splitlines()[-1])["run"]
    assert again_name != name and "resuming" not in again.stderr
    # Never: an unfinished run with a checkpoint is left as it is.
    (tmp_path / "results" / again_name / "finished").unlink()
    (tmp_path / "results" / again_name / "checkpoint-20").mkdir()
    never = launch(tmp_path, "run", resume="never")
    assert json.loads(never.stdout.splitlines()[-1])["run"] != again_name and "resuming" not in never.stderr


def test_a_run_finished_before_results_dir_moved_is_found_where_it_is_not_trained_again(tmp_path: Path) -> None:
    ran = launch(tmp_path, "run")
    name = json.loads(ran.stdout.splitlines()[-1])["run"]
    (tmp_path / "root/argv").unlink()
    # training.results_dir changed: the containers, made anew, mount the new directory.
    moved = launch(tmp_path, "run", results="moved")
    assert moved.returncode == 0, moved.stderr
    reported = json.loads(moved.stdout.splitlines()[-1])
    assert reported["run"] == name and reported["status"] == "succeeded", reported
    assert f"run {name} finished in {tmp_path}/results (training.results_dir before)" in moved.stderr
    assert not (tmp_path / "root/argv").exists(), "nothing trained"
    assert (tmp_path / "moved" / name).resolve() == tmp_path / "results" / name, "linked from the new directory"
    assert (tmp_path / "moved/last-run").read_text() == f"{name}\n"
    assert launch(tmp_path, "report", results="moved").stdout == moved.stdout, "and reported from there"
    # Another run there, then back: the run in the first directory is found again.
    assert launch(tmp_path, "run", results="results").stdout.splitlines()[-1] == moved.stdout.splitlines()[-1]


def test_a_run_unfinished_before_results_dir_moved_stays_and_a_new_run_starts(tmp_path: Path) -> None:
    failed = launch(tmp_path, "run", exit_code=1)
    first = (tmp_path / "results/last-run").read_text().strip()
    (tmp_path / "results" / first / "checkpoint-20").mkdir()
    assert failed.returncode == 1
    moved = launch(tmp_path, "run", results="moved")
    assert moved.returncode == 0, moved.stderr
    name = json.loads(moved.stdout.splitlines()[-1])["run"]
    assert name != first and (tmp_path / "moved" / name).is_dir() and not (tmp_path / "moved" / name).is_symlink()
    assert f"run {first}, of these inputs, did not finish in {tmp_path}/results" in moved.stderr
    assert (tmp_path / "results" / first / "checkpoint-20").is_dir(), "left where it is"


# `docker exec` answers that a rank is saving for the first two looks, then that none is.
SAVING_DOCKER = """#!/bin/bash
case "$*" in
  "container inspect"*) exit 0 ;;
  *dslab-saving*)
    looks=$(( $(cat "$0.looks" 2>/dev/null || echo 0) + 1 ))
    echo "$looks" >"$0.looks"
    [[ $looks -le 2 ]] ;;
  *pkill*) echo "$*" >>"$0.stopped"; exit 1 ;;
esac
"""


def test_a_stop_lets_a_checkpoint_being_saved_finish_first(tmp_path: Path) -> None:
    docker = tmp_path / "docker"
    docker.write_text(SAVING_DOCKER)
    docker.chmod(0o755)
    script = (ASSETS_DIR / "host/lib/run-stop.sh").read_text() + "stop_run_in llm\n"
    stopped = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=30,
        env={"PATH": f"{tmp_path}:/usr/bin:/bin"},
    )  # fmt: skip
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stderr == "waiting for the checkpoint being saved in llm before stopping the run\n"
    assert (tmp_path / "docker.looks").read_text() == "3\n", "it looked until the save ended"
    assert (tmp_path / "docker.stopped").read_text() == "exec llm pkill -f deepspeed\n", "then stopped the run"
