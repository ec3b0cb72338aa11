"""How long a host that stops answering may keep pulumi waiting, on the simulated 2-host lab, on
a stack of its own: a network cut or a hung manager engine during training fails `up` within its
bound (and the next plain `up` resumes or trains again); a hung engine and a host that drops every
packet fail `preview`, `up` and `destroy` within theirs, naming the host, leaving no lock.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from components.render.results import default_results_dir
from harness.stack_project import Stack
from tests.support.faults import (
    BACKGROUND_PAUSE_S, HOSTS, LOGS, TIMINGS, assert_trained_across_both, attempt, container, fault_stack,
    in_container, locks_left, manager_logs_in_to, set_long_run, timed, training_log, up,
)  # fmt: skip
from tests.support.sim_hosts import address, host_fault, on_host

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "bounds"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from fault_stack(tmp_path_factory, STACK, converged=True)


def long_training_started(
    stack: Stack, steps: int = 1_000_000, pause_s: float = BACKGROUND_PAUSE_S
) -> subprocess.Popen[str]:
    """`pulumi up` running a training run of STEPS steps (each followed by PAUSE_S seconds of
    rest), once its log shows steps."""
    set_long_run(stack, steps, pause_s)
    stack.pulumi("config", "set", "--path", "training.stall_timeout", "120")
    cli = stack.cli
    running = subprocess.Popen(
        ["pulumi", "up", "--yes", "--stack", STACK, "--non-interactive"],
        cwd=cli.project_dir, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    # This run, not the last one's log: the status says running and its log shows steps.
    while not (
        in_container("server1", "cat", "/opt/dslab/run/status", check=False).strip() == "running"
        and "dslab: step=" in in_container("server1", "cat", "/opt/dslab/run/train.log", check=False)
    ):
        if running.poll() is not None or time.monotonic() > deadline:
            running.kill()
            raise AssertionError(f"training did not start: {running.communicate()[0][-3000:]}")
        time.sleep(2)
    return running


def fails_after_fault(
    scenario: str, stack: Stack, running: subprocess.Popen[str], fault: str, undo: str, host: str,
    steps_after: int = 20,
) -> tuple[str, float]:
    """FAULT on HOST while RUNNING (STACK's up) goes on; what it printed and how long after the
    fault it failed. Whatever happened, the training is set to STEPS_AFTER steps at full speed."""
    try:
        host_fault(fault, host)
        started = time.monotonic()
        output, _ = running.communicate(timeout=600)
        failed_after = timed(scenario, "up failed after", started)
    finally:
        if running.poll() is None:
            running.kill()
        host_fault(undo, host)
        set_long_run(stack, steps_after, 0)
    LOGS.append(output)
    assert running.returncode != 0, output[-3000:]
    assert not locks_left(stack), "a run that failed left no lock: the next one needs no `pulumi cancel`"
    return output, failed_after


def trains_again_after(scenario: str, stack: Stack) -> None:
    started = time.monotonic()
    up(stack)
    timed(scenario, "next up trained in", started)
    assert_trained_across_both(stack)


RESUMED_STEPS = 500
"""A run long enough (~30 s at full speed here) to be cut after its first checkpoints (train_tiny.py
saves one every 50 steps into the run's directory; the cut comes at about step 120) and short
enough that the resumed run's remaining steps, both ranks at full speed, take little CPU from the
labs beside it."""
RESULTS = default_results_dir("dslab", STACK)


def checkpointed_step() -> int:
    """The step of the newest checkpoint of the last run started that both hosts hold marked
    complete (train_tiny.py saves one every 50 steps into the run's directory), or 0."""
    name = on_host("server1", "cat", f"{RESULTS}/last-run", check=False).strip()
    if not name:
        return 0
    pattern = f"{RESULTS}/{name}/checkpoints/step*/dslab-complete.json"
    held = [
        {int(path.rsplit("/", 2)[-2][4:]) for path in on_host(host, "sh", "-c", f"ls {pattern} 2>/dev/null || true").split()}
        for host in HOSTS
    ]
    return max(set.intersection(*held), default=0)


def test_a_network_cut_during_training_fails_up_within_a_bounded_time_and_the_next_up_resumes(stack: Stack) -> None:
    scenario = "network cut during training (wait mode)"
    # At full speed: the resumed run trains to its end.
    running = long_training_started(stack, steps=RESUMED_STEPS, pause_s=0)
    deadline = time.monotonic() + 120
    while checkpointed_step() < 100:
        assert running.poll() is None and time.monotonic() < deadline, "a checkpoint was saved"
        time.sleep(1)
    output, failed_after = fails_after_fault(
        scenario, stack, running, "network-cut", "network-restore", "server2", steps_after=RESUMED_STEPS
    )
    assert failed_after < 120, f"up failed within a bounded time, not after {failed_after} s"
    assert "lost contact with server2" in output or "not answering ssh from" in output, output[-3000:]
    assert "failed: stopped the run" in in_container("server1", "cat", "/opt/dslab/run/status")
    cut_at = max(int(step) for step in re.findall(r"dslab: step=(\d+) ", training_log()))
    run = on_host("server1", "cat", f"{RESULTS}/last-run").strip()
    checkpoint = checkpointed_step()

    # The same inputs, a plain up: the run goes on in its directory from its newest checkpoint.
    started = time.monotonic()
    resumed = up(stack)
    timed(scenario, "next up resumed and finished in", started)
    outputs = stack.outputs()
    assert f"resuming run {run} from its last checkpoint" in resumed, resumed[-3000:]
    assert outputs["training_resumed_from"] == checkpoint and 0 < checkpoint <= cut_at
    assert outputs["training_results"] == {host: f"{RESULTS}/{run}" for host in HOSTS}
    log = training_log()
    steps = [int(step) for step in re.findall(r"dslab: step=(\d+) ", log)]
    assert f"dslab: resumed from step={checkpoint}" in log and steps[0] == checkpoint + 1, log[:2000]
    assert f"dslab: finished steps={RESUMED_STEPS} optimizer_steps={RESUMED_STEPS} " in log, "not one step more"
    TIMINGS[scenario] |= {"steps done before the cut": cut_at, "steps re-done with resume": cut_at - checkpoint}
    stack.pulumi("config", "set", "--path", "training.workload.args[1]", "20")


ENGINE_BOUND_S = 15
"""operator.host_timeout for the hung engine: short, so the scenario stays short."""


PROGRESS_S = 30
"""How often the run's step looks at the log (deepspeed-launch.sh's DSLAB_PROGRESS_SECONDS)."""


def test_a_manager_engine_that_hangs_during_training_fails_up_within_its_bound_naming_the_host(stack: Stack) -> None:
    scenario = "hung manager engine during training"
    stack.pulumi("config", "set", "--path", "operator.host_timeout", str(ENGINE_BOUND_S))
    running = long_training_started(stack)
    output, failed_after = fails_after_fault(scenario, stack, running, "engine-hang", "engine-resume", "server1")
    assert f"server1: the Docker engine does not answer (no reply in {ENGINE_BOUND_S} s)" in output, output[-3000:]
    assert failed_after < PROGRESS_S + ENGINE_BOUND_S + 15, f"up failed within its bound, not after {failed_after} s"
    trains_again_after(scenario, stack)


BLOCKED_COMMANDS = (("preview",), ("up", "--yes"), ("destroy", "--yes"), ("up", "--yes", "--refresh=false"))
"""What a host that stopped answering must fail within a bound: the refresh starts the first three;
without it the hosts' probe is first."""


def commands_fail_within(
    scenario: str, stack: Stack, fault: str, undo: str, bound_s: float, said: tuple[str | tuple[str, ...], ...]
) -> str:
    """With FAULT on server2: each of BLOCKED_COMMANDS fails within BOUND_S, saying every text of
    SAID (one of them, for a tuple), and server1's container is untouched. Then UNDO and a plain up: nothing left to change
    (right after the fault the overlay may still be settling, and the probe then finds the
    manager's reach of server2 gone: the up checks it again, waiting for it). The last output."""
    server1_container = container("server1")["Id"]
    host_fault(fault, "server2")
    try:
        for command in BLOCKED_COMMANDS:
            started = time.monotonic()
            code, output = attempt(stack, *command)
            failed_after = timed(scenario, f"{' '.join(command)} failed after", started)
            assert code != 0, f"{command} failed"
            assert all(
                text in output if isinstance(text, str) else any(choice in output for choice in text) for text in said
            ), output[-3000:]
            assert failed_after < bound_s, f"{command} failed within its bound, not after {failed_after} s"
            assert not locks_left(stack), "a run that failed left no lock: the next one needs no `pulumi cancel`"
        assert container("server1")["Id"] == server1_container, "nothing was changed on the other host"
    finally:
        host_fault(undo, "server2")
    started = time.monotonic()
    up(stack)
    timed(scenario, "after the fault is undone, a plain up in", started)
    stack.pulumi("preview", "--expect-no-changes")
    assert container("server1")["Id"] == server1_container
    assert manager_logs_in_to("server2")
    return output


def test_a_hung_engine_fails_preview_up_and_destroy_within_the_bound_naming_the_host(stack: Stack) -> None:
    stack.pulumi("config", "set", "--path", "operator.host_timeout", str(ENGINE_BOUND_S))
    up(stack)
    said = f"server2: the Docker engine does not answer (no reply in {ENGINE_BOUND_S} s)"
    output = commands_fail_within("hung engine", stack, "engine-hang", "engine-resume", ENGINE_BOUND_S + 45, (said,))
    # Without the refresh the hosts' probe is first: it names the engine and plans nothing.
    assert "asking every host before planning; nothing was changed" in output, output[-3000:]


def test_a_host_that_drops_every_packet_fails_preview_up_and_destroy_within_a_bound(stack: Stack) -> None:
    # The providers' connection gives up after 10 s (components/hosts/ssh_gate.py: "does not answer
    # SSH (no reply in 10 s)", at the end of the refresh's error); the probe names the host too,
    # with ssh's "Connection timed out" or its own "does not answer over SSH", whichever bound
    # comes first.
    commands_fail_within(
        "host dropping every packet", stack, "network-cut", "network-restore", 60,
        (f"server2 ({address('server2')}:22)", ("no reply in 10 s", "timed out", "does not answer over SSH")),
    )  # fmt: skip
