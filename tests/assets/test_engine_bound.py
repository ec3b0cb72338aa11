"""assets/host/lib/engine-bound.sh inside real host scripts, as their Commands send them: a
stand-in `docker` gives no reply (a stopped dockerd) or answers. tests/faults runs it against a
stopped dockerd on a simulated host.

The three steps that meet a silent engine run side by side (one module fixture), so the bound
can be long enough that a busy machine does not break the time checks, while a step that waits
twice the bound still fails them."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pulumi_command as command
import pytest

from components.hosts.host_script import script_text
from components.hosts.remote_host import RemoteHost
from components.steps.deepspeed_launch import launch_spec

BOUND_S = 8
HOST = RemoteHost(name="server2", address="10.0.18.2", command=command.remote.ConnectionArgs(host="10.0.18.2"))
SAID = f"server2: the Docker engine does not answer (no reply in {BOUND_S} s)"

# `docker exec CONTAINER COMMAND...` runs COMMAND here; any other call is an engine that
# never replies.
STAND_IN_DOCKER = """#!/bin/bash
if [[ $1 == exec ]]; then shift 2; exec "$@"; fi
exec sleep 600
"""
# Every call gets no reply; each is written to $0's folder's `hung` first.
HUNG_DOCKER = """#!/bin/bash
echo "$*" >>"${0%/*}/hung"
exec sleep 600
"""

# An engine that answered until the run started, then stopped: the run's `docker exec` goes
# on (long by nature, unbounded), the progress ticker's `docker exec tail` gets no reply.
STOPPED_DURING_THE_RUN = """#!/bin/bash
case "$*" in
  "container inspect"*) exit 0 ;;
  *pkill*|*pgrep*|*dslab-saving*) exit 1 ;;
esac
echo "$*" >>"${0%/*}/hung"
exec sleep 600
"""


@dataclass
class Ran:
    result: subprocess.CompletedProcess[str]
    took: float
    """Seconds from the step's start until it ended."""
    hung: list[str]
    """The calls the engine never answered, in order."""
    left: list[str]
    """What was still running of the step's process group, but zombies, once it ended."""


def run_script(tmp_path: Path, docker: str, script: str, *args: str, data: str = "") -> Ran:
    """SCRIPT ARGS as its Command runs it (bash -s, its own session as under sshd; DATA after the
    script), with DOCKER as the host's docker."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    # The bound as the host keeps it (host/host-timeout.sh), read by every step's script.
    (tmp_path / ".dslab").mkdir(exist_ok=True)
    (tmp_path / ".dslab" / "host-timeout").write_text(f"{BOUND_S}\n")
    (bin_dir / "docker").write_text(docker)
    (bin_dir / "docker").chmod(0o755)
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-s", "--", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "DSLAB_PROGRESS_SECONDS": "1"},
        start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(script_text(script, HOST) + data, timeout=4 * BOUND_S)
        took = time.monotonic() - started
        left = processes_left(process.pid)
    except subprocess.TimeoutExpired:
        took, left = time.monotonic() - started, ["the step, still running after 4 times the bound"]
    if left:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
    hung = (bin_dir / "hung").read_text().splitlines() if (bin_dir / "hung").exists() else []
    return Ran(subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), took, hung, left)


def processes_left(group: int) -> list[str]:
    """The group's processes that are not zombies (a zombie holds no pipe; here nobody may reap
    it: no init in this container), once they had 10 s to end after a SIGTERM."""
    deadline = time.monotonic() + 10
    while True:
        ps = subprocess.run(["ps", "-o", "stat=,args=", "-g", str(group)], capture_output=True, text=True).stdout
        alive = [line for line in ps.splitlines() if not line.strip().startswith("Z")]
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.1)


def launch_argv(tmp_path: Path) -> list[str]:
    return [
        "run", "llm", "/opt/dslab", "/opt/dslab/run", "wait", "0", str(tmp_path / "results"),
        "/opt/dslab/results/@RUN@", "0a1b2c3d-0123456789ab", "auto", "0",
    ]  # fmt: skip


SILENT_ENGINE_STEPS: dict[str, Callable[[Path], Ran]] = {
    # mesh-keys.sh's first call is `docker exec`, which the hung engine never answers.
    "mesh-keys": lambda folder: run_script(folder, HUNG_DOCKER, "host/mesh-keys.sh", "llm"),
    # swarm-worker.sh asks `docker info` inside $(...); the leave checks stay silent on failure.
    "swarm-worker": lambda folder: run_script(
        folder, HUNG_DOCKER, "host/swarm-worker.sh", "join", "10.0.18.1:2377", "10.0.18.2", "m1", data="SWMTKN-1"
    ),
    "training": lambda folder: run_script(
        folder,
        STOPPED_DURING_THE_RUN,
        "host/deepspeed-launch.sh",
        *launch_argv(folder),
        data=launch_spec("{}", [], ["deepspeed", "train.py"]),
    ),
}


@pytest.fixture(scope="module")
def silent_engine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Ran]:
    """Each step of SILENT_ENGINE_STEPS, all at once."""
    with ThreadPoolExecutor(len(SILENT_ENGINE_STEPS)) as pool:
        running = {name: pool.submit(step, tmp_path_factory.mktemp(name)) for name, step in SILENT_ENGINE_STEPS.items()}
        return {name: future.result() for name, future in running.items()}


def assert_ended_by_the_bound(ran: Ran, hung: list[str], waited_first: float = 0) -> None:
    """The step failed saying why, once HUNG got no reply, within the bound (after WAITED_FIRST)
    and well within twice the bound, and took its processes with it."""
    assert ran.result.returncode != 0
    assert SAID in ran.result.stderr, ran.result.stderr
    assert ran.hung == hung, "the step ended at the call that got no reply, without another try"
    assert waited_first + BOUND_S <= ran.took < waited_first + 2 * BOUND_S, f"{ran.took:.1f} s"
    assert not ran.left, f"the step's processes are gone with it (the ssh session would stay open): {ran.left}"


def test_a_call_that_gets_no_reply_ends_the_step_naming_the_host(silent_engine: dict[str, Ran]) -> None:
    assert_ended_by_the_bound(silent_engine["mesh-keys"], ["exec llm /opt/dslab/keys.sh make --reload-sshd"])


def test_a_silenced_call_still_ends_the_step_and_says_why(silent_engine: dict[str, Ran]) -> None:
    assert_ended_by_the_bound(silent_engine["swarm-worker"], ["info --format {{.Swarm.LocalNodeState}}"])


def test_a_training_run_outlives_the_bound_but_a_hung_engine_ends_it_through_the_ticker(
    silent_engine: dict[str, Ran],
) -> None:
    ran = silent_engine["training"]
    run = next((call for call in ran.hung if "/opt/dslab/run-deepspeed.sh" in call), None)
    assert run is not None and run.startswith("exec llm "), f"the run, which is not bounded, got no reply: {ran.hung}"
    # Then the ticker's first look at the log, a second later.
    assert_ended_by_the_bound(ran, [run, "exec llm tail -n 1 /opt/dslab/run/train.log"], waited_first=1)


def test_a_command_in_a_container_that_exits_124_is_not_taken_for_a_silent_engine(tmp_path: Path) -> None:
    keys = tmp_path / "keys.sh"
    keys.write_text("#!/bin/bash\nexit 124\n")
    keys.chmod(0o755)
    docker = STAND_IN_DOCKER.replace('exec "$@"', f"exec {keys}")
    ran = run_script(tmp_path, docker, "host/mesh-keys.sh", "llm")
    assert ran.result.returncode == 124
    assert "does not answer" not in ran.result.stderr
    assert ran.took < BOUND_S, "the step did not wait for the bound"
    assert not ran.left
