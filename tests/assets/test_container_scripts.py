"""The scripts that run inside the training containers, run here without an engine.

``run-deepspeed.sh`` runs any command, so a shell one-liner stands in for deepspeed;
``socket-ifname.sh`` reads ``ip -o -4 addr show``, so a fake ``ip`` on PATH stands in for
a container's interfaces. The real image is proven by the e2e tests.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ASSETS = Path(__file__).resolve().parents[2] / "assets"
SHELL_SCRIPTS = sorted([*(ASSETS / "container").glob("*.sh"), *(ASSETS / "image").glob("*.sh")])
RUN_DEEPSPEED = ASSETS / "container" / "run-deepspeed.sh"
SOCKET_IFNAME = ASSETS / "container" / "socket-ifname.sh"

# What `ip -o -4 addr show` prints in an overlay container: gwbridge listed first on purpose.
OVERLAY_CONTAINER_ADDRS = """\
1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever
57: eth1@if58    inet 172.18.0.3/16 brd 172.18.255.255 scope global eth1\\       valid_lft forever
55: eth0@if56    inet 10.0.3.128/24 brd 10.0.3.255 scope global eth0\\       valid_lft forever
"""


def run(
    *argv: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 30,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda path: path.name)
def test_every_shell_script_parses_and_is_executable(script: Path) -> None:
    assert run("bash", "-n", script).returncode == 0
    assert os.access(script, os.X_OK), f"{script} must be executable: the image runs it directly"


@pytest.mark.skipif(
    shutil.which("shellcheck") is None,
    reason="shellcheck not installed (apt-get install shellcheck)",
)
@pytest.mark.parametrize("script", SHELL_SCRIPTS, ids=lambda path: path.name)
def test_every_shell_script_passes_shellcheck(script: Path) -> None:
    result = run("shellcheck", "--external-sources", "--source-path=SCRIPTDIR", script)
    assert result.returncode == 0, result.stdout


# --- run-deepspeed.sh ---------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "hostfile").write_text("server1 slots=1\n")
    (tmp_path / ".deepspeed_env").write_text("USE_LIBUV=0\n")
    return tmp_path


def test_a_successful_run_tees_its_output_and_says_succeeded(workdir: Path) -> None:
    result = run(
        RUN_DEEPSPEED,
        "--workdir",
        workdir,
        "--log",
        "train.log",
        "--status",
        "status",
        "--",
        "sh",
        "-c",
        "echo dslab: step=1; pwd",
    )
    assert result.returncode == 0, result.stderr
    assert "dslab: step=1" in result.stdout, "the output must also reach docker exec's stdout"
    assert (workdir / "train.log").read_text() == f"dslab: step=1\n{workdir}\n", "runs in --workdir"
    assert (workdir / "status").read_text() == "succeeded\n"


def test_a_failed_run_exits_with_the_commands_status_and_records_it(
    workdir: Path,
) -> None:
    result = run(
        RUN_DEEPSPEED,
        "--workdir",
        workdir,
        "--log",
        "train.log",
        "--status",
        "status",
        "--",
        "sh",
        "-c",
        "echo boom >&2; exit 3",
    )
    assert result.returncode == 3
    assert (workdir / "status").read_text() == "failed rc=3\n"
    assert "boom" in (workdir / "train.log").read_text(), "stderr goes to the log too"


def test_the_log_holds_only_the_latest_run(workdir: Path) -> None:
    for word in ("first", "second"):
        run(
            RUN_DEEPSPEED,
            "--workdir",
            workdir,
            "--log",
            "train.log",
            "--status",
            "status",
            "--",
            "echo",
            word,
        )
    assert (workdir / "train.log").read_text() == "second\n"


def test_arguments_reach_the_command_unchanged(workdir: Path) -> None:
    result = run(
        RUN_DEEPSPEED,
        "--workdir",
        workdir,
        "--log",
        "l",
        "--status",
        "s",
        "--",
        "printf",
        "<%s>",
        "a b",
        "--steps",
        "$HOME",
        "",
    )
    assert result.stdout == "<a b><--steps><$HOME><>"


def wait_for_status(workdir: Path, seconds: float = 30) -> str:
    """The status file once it no longer says running (or after SECONDS)."""
    deadline = time.monotonic() + seconds
    while (workdir / "status").read_text() == "running\n" and time.monotonic() < deadline:
        time.sleep(0.1)
    return (workdir / "status").read_text()


def test_background_returns_at_once_and_the_status_follows_the_run(
    workdir: Path,
) -> None:
    # The run cannot end before the test lets it: the script returns while it is still going.
    go = workdir / "go"
    try:
        result = run(
            RUN_DEEPSPEED,
            "--workdir",
            workdir,
            "--log",
            "train.log",
            "--status",
            "status",
            "--background",
            "--",
            "sh",
            "-c",
            f"while [ ! -e {go} ]; do sleep 0.05; done; echo done; exit 5",
            timeout=20,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("pid=")
        assert (workdir / "status").read_text() == "running\n"
        assert not (workdir / "train.log").read_text(), "the run has not got past its wait"
    finally:
        go.touch()
    assert wait_for_status(workdir) == "failed rc=5\n"
    assert (workdir / "train.log").read_text() == "done\n"


def recorded_in_background(workdir: Path, record: Path, command: str) -> subprocess.CompletedProcess[str]:
    """run-deepspeed.sh in the background with the run's directory RECORD, running COMMAND."""
    result = run(
        RUN_DEEPSPEED, "--workdir", workdir, "--log", "train.log", "--status", "status", "--record", record,
        "--background", "--", "sh", "-c", command,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result


def test_the_run_writes_its_own_end_into_its_directory_in_the_background_too(workdir: Path) -> None:
    record = workdir / "results/run1"
    recorded_in_background(workdir, record, "echo dslab: finished steps=1")
    assert wait_for_status(workdir) == "succeeded\n"
    deadline = time.monotonic() + 10
    while not (record / "finished").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (record / "status").read_text() == "succeeded\n", "beside its results, where it outlives the container"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n", (record / "finished").read_text())
    assert (record / "train.log").read_text() == "dslab: finished steps=1\n", "the log, kept when the run ended"
    assert not list(record.glob("*.tmp")), "each file written whole"


def test_a_stopped_run_says_so_itself_and_takes_its_command_with_it(workdir: Path) -> None:
    record = workdir / "results/run1"
    # A command line no other process on the machine has (pgrep below looks at all of them).
    command = f"sleep 300.{os.getpid()}"
    result = recorded_in_background(workdir, record, f"echo started; {command}")
    pid = int(result.stdout.strip().removeprefix("pid="))
    deadline = time.monotonic() + 10
    while "started" not in (workdir / "train.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(pid, signal.SIGTERM)  # what the next run's stop sends
    assert wait_for_status(workdir) == "stopped: by TERM\n"
    assert (record / "status").read_text() == "stopped: by TERM\n" and not (record / "finished").exists()
    assert "started" in (record / "train.log").read_text()
    left = subprocess.run(["pgrep", "-f", command], capture_output=True, text=True).stdout.split()
    assert not left, "the run's command went with it"


def test_a_second_run_is_refused_while_the_first_holds_the_lock(workdir: Path) -> None:
    go = workdir / "go"  # the first run goes on until the test is done with it
    try:
        first = run(
            RUN_DEEPSPEED,
            "--workdir",
            workdir,
            "--log",
            "l",
            "--status",
            "status",
            "--background",
            "--",
            "sh",
            "-c",
            f"while [ ! -e {go} ]; do sleep 0.05; done",
        )
        assert first.returncode == 0, first.stderr
        second = run(
            RUN_DEEPSPEED,
            "--workdir",
            workdir,
            "--log",
            "l2",
            "--status",
            "status",
            "--",
            "true",
        )
        assert second.returncode == 75
        assert "another run holds" in second.stderr
        assert (workdir / "status").read_text() == "running\n", "the refused run must not touch the status"
        assert not (workdir / "l2").exists(), "nor start a log"
    finally:
        go.touch()
    assert wait_for_status(workdir) == "succeeded\n"


def watched_run(
    workdir: Path, *options: str, command: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    result = run(
        RUN_DEEPSPEED, "--workdir", workdir, "--log", "train.log", "--status", "status", *options,
        "--", "sh", "-c", command,
        env=env, timeout=60,
    )  # fmt: skip
    return result, time.monotonic() - started


def running(pid: int) -> bool:
    """Whether process PID runs (a zombie, which nobody may reap here, does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_silent_run_is_stopped_after_the_stall_timeout_with_its_children(workdir: Path) -> None:
    child = workdir / "child-pid"
    # A child of the run that would go on long after the stall: it must die with the run.
    result, took = watched_run(
        workdir, "--stall-timeout", "1",
        command=f"echo dslab: step=1; sh -c 'echo $$ >{child}; exec sleep 60' & sleep 60",
    )  # fmt: skip
    assert result.returncode == 124, result.stderr
    # The run would have gone on for 60 s; the watch looks about once a second, in whole seconds.
    assert 1 <= took < 20, f"stopped after the timeout plus a second or two of its watch, not after {took:.1f} s"
    assert "stopped the run: no output for 1s" in result.stderr
    assert (workdir / "status").read_text().startswith("failed: stopped the run: no output for 1s")
    assert "dslab: step=1" in (workdir / "train.log").read_text()
    pid = int(child.read_text())
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not running(pid), "the run's whole process group was stopped"


def fake_ssh_env(tmp_path: Path, answers_while: str) -> dict[str, str]:
    """PATH with an `ssh` that succeeds while the shell test `answers_while` holds."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text(f"#!/bin/sh\nif {answers_while}; then exit 0; fi\nexit 255\n")
    ssh.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def test_a_node_lost_by_pdsh_stops_the_run_at_once_naming_the_node(workdir: Path, tmp_path: Path) -> None:
    (workdir / "hostfile").write_text("server2 slots=1\n")
    cut = tmp_path / "cut"
    result, took = watched_run(
        workdir, "--hostfile", "hostfile",
        command=f"touch {cut}; echo 'pdsh@server1: server2: ssh exited with exit code 255'; sleep 60",
        env=fake_ssh_env(tmp_path, f"[ ! -e {cut} ]"),
    )  # fmt: skip
    assert result.returncode == 124, result.stderr
    assert took < 20, f"stopped at once, not after {took:.0f} s"
    assert "lost contact with server2" in result.stderr
    assert "not answering ssh" in result.stderr and "server2" in result.stderr.rsplit(":", 1)[-1]


def test_a_node_that_never_answers_ssh_fails_the_run_before_it_starts(workdir: Path, tmp_path: Path) -> None:
    (workdir / "hostfile").write_text("server1 slots=1\nserver2 slots=1\n")
    started = tmp_path / "started"
    env = {**fake_ssh_env(tmp_path, 'case "$*" in *server2*) false;; esac'), "DSLAB_REACH_TIMEOUT": "1"}
    result, took = watched_run(workdir, "--hostfile", "hostfile", command=f"touch {started}", env=env)
    assert result.returncode == 124, result.stderr
    assert "not answering ssh from" in result.stderr and result.stderr.rstrip().endswith("after 1s: server2")
    assert not started.exists(), "the command never ran"
    assert (workdir / "status").read_text().startswith("failed: not answering ssh")


def test_a_node_that_answers_after_a_while_is_waited_for(workdir: Path, tmp_path: Path) -> None:
    (workdir / "hostfile").write_text("server2 slots=1\n")
    back = tmp_path / "back"
    env = fake_ssh_env(tmp_path, f"[ -e {back} ]")
    subprocess.Popen(["sh", "-c", f"sleep 1; touch {back}"])
    # The command runs once the node answers, not before: it says whether it did.
    result, _ = watched_run(workdir, "--hostfile", "hostfile", command=f"test -e {back} && echo trained", env=env)
    assert result.returncode == 0, result.stderr
    assert "waiting for server2 to answer ssh" in result.stderr
    assert (workdir / "train.log").read_text() == "trained\n"


def test_a_bad_stall_timeout_is_bad_usage(workdir: Path) -> None:
    result, _ = watched_run(workdir, "--stall-timeout", "soon", command="true")
    assert result.returncode == 64
    assert "--stall-timeout takes whole seconds, got 'soon'" in result.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--log", "l", "--status", "s", "--", "true"],
        ["--workdir", ".", "--status", "s", "--", "true"],
        ["--workdir", ".", "--log", "l", "--", "true"],
        ["--workdir", ".", "--log", "l", "--status", "s", "--"],
        ["--workdir", ".", "--log", "l", "--status", "s", "--bogus", "--", "true"],
    ],
    ids=["no workdir", "no log", "no status", "no command", "unknown option"],
)
def test_bad_usage_exits_64_with_the_usage_line(workdir: Path, argv: list[str]) -> None:
    result = run(RUN_DEEPSPEED, *argv, cwd=workdir)
    assert result.returncode == 64
    assert "usage: run-deepspeed.sh" in result.stderr


def test_a_missing_deepspeed_env_and_hostfile_are_warned_about(tmp_path: Path) -> None:
    result = run(
        RUN_DEEPSPEED, "--workdir", tmp_path, "--log", "l", "--status", "s", "--", "true",
        env={**os.environ, "HOME": str(tmp_path / "nowhere")},
    )  # fmt: skip
    assert result.returncode == 0
    assert "warning: no .deepspeed_env" in result.stderr
    assert "warning: no hostfile" in result.stderr


def test_no_warning_where_the_launcher_finds_both_files_the_program_places(tmp_path: Path) -> None:
    # As in the containers: the hostfile given by path, .deepspeed_env in the home folder.
    home, run_dir, workdir = tmp_path / "home", tmp_path / "run", tmp_path / "work"
    for folder in (home, run_dir, workdir):
        folder.mkdir()
    (home / ".deepspeed_env").write_text("NAME=x\n")
    (run_dir / "hostfile").write_text("server1 slots=1\n")
    result = run(
        RUN_DEEPSPEED, "--workdir", workdir, "--log", "l", "--status", "s",
        "--hostfile", run_dir / "hostfile", "--", "true",
        env={**fake_ssh_env(tmp_path, "true"), "HOME": str(home)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr, result.stderr


def test_the_run_gets_the_variables_of_deepspeed_env_as_a_one_host_launch_needs(workdir: Path, tmp_path: Path) -> None:
    # DeepSpeed's launcher hands .deepspeed_env only to ranks it starts through pdsh; with one
    # host it starts them itself, in its own environment (LLaMA-Factory then refuses DeepSpeed
    # 0.19.8 without DISABLE_VERSION_CHECK).
    home = tmp_path / "home"
    home.mkdir()
    (home / ".deepspeed_env").write_text("HF_HUB_OFFLINE=1\nNAME=home\n")
    (workdir / ".deepspeed_env").write_text("DISABLE_VERSION_CHECK=1\nNAME=a=b c\n")
    result = run(
        RUN_DEEPSPEED, "--workdir", workdir, "--log", "l", "--status", "s",
        "--", "sh", "-c", 'echo "$HF_HUB_OFFLINE|$DISABLE_VERSION_CHECK|$NAME"',
        env={**os.environ, "HOME": str(home)},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1|1|a=b c\n", "home's file, then the working directory's, which wins (as the launcher)"


def test_deepspeed_env_lines_that_name_no_variable_are_skipped_and_named(tmp_path: Path) -> None:
    (tmp_path / ".deepspeed_env").write_text("GOOD=1\nno equals sign\n1BAD=x\n")
    script = f'. {ASSETS / "container" / "deepspeed-env.sh"}; export_deepspeed_env; echo "$GOOD"'
    result = run("bash", "-c", script, cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path / "nowhere")})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "1\n"
    assert "'1BAD' is not a variable name" in result.stderr


# --- socket-ifname.sh ---------------------------------------------------------------------


@pytest.fixture
def fake_ip_env(tmp_path: Path) -> dict[str, str]:
    fake = tmp_path / "bin" / "ip"
    fake.parent.mkdir()
    (tmp_path / "addrs").write_text(OVERLAY_CONTAINER_ADDRS)
    fake.write_text(f"#!/bin/sh\ncat {tmp_path / 'addrs'}\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{fake.parent}:{os.environ['PATH']}"}


@pytest.mark.parametrize(
    ("subnet", "expected"),
    [
        ("10.0.3.0/24", "eth0"),
        ("172.18.0.0/16", "eth1"),
        ("10.0.0.0/8", "eth0"),
        ("127.0.0.0/8", "lo"),
    ],
)
def test_the_interface_holding_the_subnet_is_found_whatever_its_position(
    fake_ip_env: dict[str, str], subnet: str, expected: str
) -> None:
    result = run(SOCKET_IFNAME, subnet, env=fake_ip_env)
    assert (result.returncode, result.stdout) == (0, f"{expected}\n")


def test_no_interface_in_the_subnet_exits_1_quietly(
    fake_ip_env: dict[str, str],
) -> None:
    result = run(SOCKET_IFNAME, "10.0.4.0/24", env=fake_ip_env)
    assert (result.returncode, result.stdout) == (1, "")


@pytest.mark.parametrize("subnet", ["", "10.0.3.0", "10.0.3.0/33", "300.0.3.0/24", "eth0"])
def test_a_malformed_subnet_exits_64_naming_it(fake_ip_env: dict[str, str], subnet: str) -> None:
    result = run(SOCKET_IFNAME, subnet, env=fake_ip_env)
    assert result.returncode == 64
    assert f"got '{subnet}'" in result.stderr


# --- preflight.sh -----------------------------------------------------------------------

PREFLIGHT = ASSETS / "container" / "preflight.sh"
ALLREDUCE_RESULT = 'dslab: allreduce_result {"backend": "gloo", "world_size": 2, "sizes": [], "busbw_gbps": 3.5}'


def local_ssh_env(tmp_path: Path, other_hostfile: Path | None = None) -> dict[str, str]:
    """An `ssh` that runs the remote command here (every node is this machine); with
    `other_hostfile`, node server2 reads that file instead of the real one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    swap = f'[ "$host" = server2 ] && command=$(echo "$command" | sed "s#{tmp_path}/hostfile#{other_hostfile}#")' if other_hostfile else ":"
    (bin_dir / "ssh").write_text(
        "#!/bin/bash\n"
        'while [ "$1" = -o ]; do shift 2; done\n'
        'host=$1; shift; command="$*"\n'
        f"{swap}\n"
        'exec bash -c "${command:-true}"\n'
    )
    (bin_dir / "ssh").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def preflight(tmp_path: Path, *options: str, command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "hostfile").write_text("server1 slots=1\nserver2 slots=1\n")
    return run(
        PREFLIGHT, "--workdir", tmp_path, "--hostfile", tmp_path / "hostfile", "--log", tmp_path / "preflight.log",
        *options, "--", "sh", "-c", command, env=env,
    )  # fmt: skip


def test_a_passing_preflight_prints_the_bus_bandwidth_as_json(tmp_path: Path) -> None:
    result = preflight(tmp_path, command=f"echo '{ALLREDUCE_RESULT}'", env=local_ssh_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '"busbw_gbps": 3.5' in result.stdout.splitlines()[-1] and '"nodes": 2' in result.stdout
    assert "every node sees the same hostfile and addresses" in result.stderr


def test_a_bandwidth_below_the_minimum_stops_the_launch_naming_the_key(tmp_path: Path) -> None:
    result = preflight(tmp_path, "--min-busbw", "10", command=f"echo '{ALLREDUCE_RESULT}'", env=local_ssh_env(tmp_path))
    assert result.returncode == 1
    assert "3.5 Gbit/s is below the minimum 10 Gbit/s (training.preflight.min_busbw_gbps)" in result.stderr


def test_one_rank_reports_no_bus_bandwidth_and_says_why_instead_of_checking_the_minimum(tmp_path: Path) -> None:
    one_rank = ALLREDUCE_RESULT.replace('"world_size": 2', '"world_size": 1').replace("3.5", "null")
    result = preflight(tmp_path, "--min-busbw", "10", command=f"echo '{one_rank}'", env=local_ssh_env(tmp_path))
    assert result.returncode == 0, result.stderr
    assert '"busbw_gbps": null' in result.stdout.splitlines()[-1]
    assert "one rank: no bus bandwidth to measure (its all-reduce crosses no link)" in result.stderr


def test_a_node_with_another_hostfile_is_named(tmp_path: Path) -> None:
    other = tmp_path / "other-hostfile"
    other.write_text("server2 slots=1\nserver1 slots=1\n")
    result = preflight(tmp_path, command="true", env=local_ssh_env(tmp_path, other_hostfile=other))
    assert result.returncode == 1
    assert result.stderr.rstrip().endswith(": server2"), result.stderr


def test_a_failed_all_reduce_fails_with_its_log(tmp_path: Path) -> None:
    result = preflight(tmp_path, command="echo gloo connect timeout; exit 3", env=local_ssh_env(tmp_path))
    assert result.returncode == 1
    assert "gloo connect timeout" in result.stderr and "the all-reduce failed (exit 3)" in result.stderr


def test_the_all_reduce_gets_the_variables_of_deepspeed_env(tmp_path: Path) -> None:
    (tmp_path / ".deepspeed_env").write_text("NCCL_SOCKET_IFNAME=eth7\n")
    command = f"test \"$NCCL_SOCKET_IFNAME\" = eth7 && echo '{ALLREDUCE_RESULT}'"
    result = preflight(tmp_path, command=command, env=local_ssh_env(tmp_path))
    assert result.returncode == 0, result.stderr
