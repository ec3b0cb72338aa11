"""assets/host/lib/engine-bound.sh inside real host scripts, as their Commands send them: a
stand-in `docker` gives no reply (a stopped dockerd) or answers. tests/faults runs it against a
stopped dockerd on a simulated host."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pulumi_command as command

from components.hosts.host_script import script_text
from components.hosts.remote_host import RemoteHost

BOUND_S = 2
HOST = RemoteHost(
    name="server2", address="10.0.18.2", command=command.remote.ConnectionArgs(host="10.0.18.2"), engine_timeout=BOUND_S
)
SAID = f"server2: the Docker engine does not answer (no reply in {BOUND_S} s)"

# `docker exec CONTAINER COMMAND...` runs COMMAND here; any other call is an engine that
# never replies.
STAND_IN_DOCKER = """#!/bin/bash
if [[ $1 == exec ]]; then shift 2; exec "$@"; fi
exec sleep 600
"""
HUNG_DOCKER = "#!/bin/bash\nexec sleep 600\n"


def run_script(
    tmp_path: Path, docker: str, script: str, *args: str, data: str = ""
) -> tuple[subprocess.CompletedProcess[str], float]:
    """SCRIPT ARGS as its Command runs it (bash -s, its own session as under sshd; DATA after the
    script); the result and how long it took. Afterwards nothing of its process group is left."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(docker)
    (bin_dir / "docker").chmod(0o755)
    started = time.monotonic()
    process = subprocess.Popen(
        ["bash", "-s", "--", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "DSLAB_PROGRESS_SECONDS": "1"}, start_new_session=True,
    )  # fmt: skip
    try:
        stdout, stderr = process.communicate(script_text(script, HOST) + data, timeout=30)
    finally:
        os.killpg(process.pid, signal.SIGKILL) if process.poll() is None else None
    took = time.monotonic() - started
    time.sleep(0.2)
    group = subprocess.run(["ps", "-o", "stat=,args=", "-g", str(process.pid)], capture_output=True, text=True).stdout
    # A zombie holds no pipe; here nobody may reap it (no init in this container).
    alive = [line for line in group.splitlines() if not line.strip().startswith("Z")]
    assert not alive, f"the step's processes are gone with it (the ssh session would stay open): {alive}"
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr), took


def test_a_call_that_gets_no_reply_ends_the_step_naming_the_host(tmp_path: Path) -> None:
    # mesh-keys.sh's first call is `docker exec`, which the hung engine never answers.
    ran, took = run_script(tmp_path, HUNG_DOCKER, "host/mesh-keys.sh", "llm")
    assert ran.returncode != 0
    assert SAID in ran.stderr, ran.stderr
    assert BOUND_S <= took < BOUND_S + 4


def test_a_silenced_call_still_ends_the_step_and_says_why(tmp_path: Path) -> None:
    # swarm-worker.sh asks `docker info` inside $(...); the leave checks stay silent on failure.
    ran, took = run_script(tmp_path, HUNG_DOCKER, "host/swarm-worker.sh", "join", "10.0.18.1:2377", "10.0.18.2", data="SWMTKN-1")
    assert ran.returncode != 0
    assert SAID in ran.stderr, ran.stderr
    assert BOUND_S <= took < BOUND_S + 4


# An engine that answered until the run started, then stopped: the run's `docker exec` goes
# on (long by nature, unbounded), the progress ticker's `docker exec tail` gets no reply.
STOPPED_DURING_THE_RUN = """#!/bin/bash
case "$*" in
  "container inspect"*) exit 0 ;;
  *pkill*|*pgrep*) exit 1 ;;
esac
exec sleep 600
"""


def test_a_training_run_outlives_the_bound_but_a_hung_engine_ends_it_through_the_ticker(tmp_path: Path) -> None:
    argv = [
        "run", "llm", "/opt/dslab", "/opt/dslab/run", "wait", "0", "-", str(tmp_path / "results"), "0123456789ab",
        "auto", "--", "deepspeed", "train.py",
    ]  # fmt: skip
    ran, took = run_script(tmp_path, STOPPED_DURING_THE_RUN, "host/deepspeed-launch.sh", *argv)
    assert ran.returncode != 0
    assert SAID in ran.stderr, ran.stderr
    assert BOUND_S <= took < 1 + BOUND_S + 4


def test_a_command_in_a_container_that_exits_124_is_not_taken_for_a_silent_engine(tmp_path: Path) -> None:
    keys = tmp_path / "keys.sh"
    keys.write_text("#!/bin/bash\nexit 124\n")
    keys.chmod(0o755)
    docker = STAND_IN_DOCKER.replace('exec "$@"', f'exec {keys}')
    ran, took = run_script(tmp_path, docker, "host/mesh-keys.sh", "llm")
    assert ran.returncode == 124
    assert "does not answer" not in ran.stderr
    assert took < BOUND_S
