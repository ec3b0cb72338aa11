"""A training run's life on the simulated 2-host lab, on a stack of its own: nothing but a new run
stops a run (how it is watched and where results go change while it goes, and it goes on to its
end in its directory), the run writes its own end and `up` reads it (a background run that
finished reads succeeded, the containers then move to the new results directory and find it
there; `wait: true` after it trains nothing), and runs belong to their stack (project A's unfinished run is neither resumed
nor removed by project B's stack of the same name on the same hosts and results directory, whose
destroy follows `results_on_destroy` as the stack file says at that moment).

The tests share the stacks and run in file order.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator

import pytest

from harness.pulumi_cli import PulumiCli
from harness.stack_project import Stack, project_copy
from tests.support.faults import HOSTS, attempt, fault_stack, in_container, set_long_run, timed, up
from tests.support.sim_hosts import on_host

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "lifecycle"
RESULTS = "/var/lib/dslab/lifecycle-first/runs"
"""Where the first run goes: a directory the user chose."""
MOVED = "/var/lib/dslab/lifecycle-shared/runs"
"""training.results_dir set while that run goes; both projects' stacks then keep their runs here."""
STEPS = 250
"""About 50 s in the background here (0.2 s of rest per step): long enough to be changed while it goes."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    for stack in fault_stack(tmp_path_factory, STACK, preflight=True):  # the hosts are up from here
        for host in HOSTS:  # an earlier session's runs
            on_host(host, "rm", "-rf", RESULTS, MOVED)
        stack.merge_config({"training": {"wait": False, "results_dir": RESULTS, "stall_timeout": 600}})
        set_long_run(stack, STEPS)
        yield stack
    for host in HOSTS:
        on_host(host, "rm", "-rf", RESULTS, MOVED, check=False)


def run_deepspeed_pid() -> str:
    return in_container("server1", "pgrep", "-f", "-o", "run-deepspeed[.]sh", check=False).strip()


def exists(host: str, path: str) -> bool:
    return on_host(host, "sh", "-c", f"test -e '{path}' && echo yes || true").strip() == "yes"


def run_status(name: str, results: str = RESULTS) -> str:
    return on_host("server1", "cat", f"{results}/{name}/status", check=False).strip()


def steps_logged() -> list[int]:
    log = in_container("server1", "cat", "/opt/dslab/run/train.log")
    return [int(step) for step in re.findall(r"dslab: step=(\d+) ", log)]


def test_a_background_run_starts_and_up_returns(stack: Stack) -> None:
    started = time.monotonic()
    up(stack)
    timed("run lifecycle", "up from nothing, run started in the background", started)
    outputs = stack.outputs()
    assert outputs["training_status"] == "running"
    assert run_deepspeed_pid(), "the run goes on in the manager's container"
    assert run_status(str(outputs["training_results"]["server1"]).rsplit("/", 1)[-1]) == "running"  # type: ignore[index]


def test_changing_how_the_run_is_watched_and_where_results_go_keeps_it_going(stack: Stack) -> None:
    name = stack.outputs()["training_results"]["server1"]  # type: ignore[index]
    pid = run_deepspeed_pid()
    preflight = {**stack.config_value("training")["preflight"], "min_busbw_gbps": 0.001}
    stack.merge_config({"training": {"preflight": preflight, "stall_timeout": 900, "results_dir": MOVED}})
    stack.merge_config({"operator": {"host_timeout": 45}})
    changed = stack.preview_changes()
    assert "lab-training-run" not in changed or changed["lab-training-run"]["op"] == "update", changed.keys()
    containers = [resource for resource, step in changed.items() if "docker:index/container:Container::" in step["urn"]]
    assert not containers, f"no container made anew: {[(resource, changed[resource]['op']) for resource in containers]}"
    output = up(stack)
    assert "stopped the training run" not in output, output[-3000:]
    assert f"is still going in {RESULTS}; the containers keep that directory until it ends" in output, output[-3000:]
    assert run_deepspeed_pid() == pid, "the same run goes on"
    outputs = stack.outputs()
    assert outputs["training_results"]["server1"] == name and outputs["training_status"] == "running"  # type: ignore[index]
    before = len(steps_logged())
    time.sleep(3)
    assert len(steps_logged()) > before, "and trains"


def test_a_background_run_that_ended_reads_succeeded_and_wait_after_it_trains_nothing(stack: Stack) -> None:
    name = str(stack.outputs()["training_results"]["server1"]).rsplit("/", 1)[-1]  # type: ignore[index]
    deadline = time.monotonic() + 180
    while run_status(name) != "succeeded":
        assert time.monotonic() < deadline, f"the run ended by itself: {run_status(name)}"
        time.sleep(2)
    assert exists("server1", f"{RESULTS}/{name}/finished"), "the run wrote its end"
    kept_log = on_host("server1", "cat", f"{RESULTS}/{name}/train.log")
    assert kept_log.count(f"dslab: finished steps={STEPS}") == 1

    # The run ended: the containers move to the new directory, and find the run finished.
    output = up(stack)
    outputs = stack.outputs()
    assert outputs["training_status"] == "succeeded", "read from the run on every up"
    assert f"run {name} finished in {RESULTS} (training.results_dir before)" in output, output[-3000:]
    assert "launching in" not in output and "resuming" not in output, output[-3000:]
    assert outputs["training_results"] == {host: f"{MOVED}/{name}" for host in HOSTS}, outputs
    assert run_status(name, MOVED) == "succeeded", "linked from the new directory"
    stack.pulumi("preview", "--expect-no-changes")

    stack.merge_config({"training": {"wait": True}})
    output = up(stack)
    outputs = stack.outputs()
    assert "launching in" not in output and "resuming" not in output, output[-3000:]
    assert on_host("server1", "cat", f"{MOVED}/{name}/train.log") == kept_log, "no new step"
    assert outputs["training_status"] == "succeeded"
    assert str(outputs["training_summary"]).startswith(f"run {name}: server1: dslab: finished steps={STEPS}"), outputs
    stack.pulumi("preview", "--expect-no-changes")


@pytest.fixture(scope="module")
def project_b(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The same stack name in another project, with the same settings and results directory."""
    work = tmp_path_factory.mktemp("lifecycle-b")
    project = project_copy(work, (STACK,))
    (project / "Pulumi.yaml").write_text((project / "Pulumi.yaml").read_text().replace("name: dslab", "name: dslab-b"))
    (project / f"Pulumi.{STACK}.yaml").write_text((stack.cli.project_dir / f"Pulumi.{STACK}.yaml").read_text())
    cli = PulumiCli(project_dir=project, state_dir=work / "state")
    cli.run("stack", "init", STACK)
    other = Stack(cli, STACK)
    yield other
    cli.run("destroy", "--yes", "--stack", STACK, check=False)


def test_another_projects_stack_starts_its_own_run_and_removes_only_its_own(stack: Stack, project_b: Stack) -> None:
    # Project A: a new run, cut by A's destroy (keep) after its first checkpoint.
    stack.merge_config({"training": {"wait": False}})
    set_long_run(stack, 1000)
    up(stack)
    a_run = str(stack.outputs()["training_results"]["server1"]).rsplit("/", 1)[-1]  # type: ignore[index]
    deadline = time.monotonic() + 120
    while not exists("server1", f"{MOVED}/{a_run}/checkpoints/step50/dslab-complete.json"):
        assert time.monotonic() < deadline, "A's run saved a checkpoint"
        time.sleep(1)
    stack.pulumi("destroy", "--yes")
    assert run_status(a_run, MOVED).startswith("stopped"), "the run said it was stopped"

    # Project B, same stack name, same inputs, same directory: a run of its own.
    (project_b.cli.project_dir / f"Pulumi.{STACK}.yaml").write_text(
        (stack.cli.project_dir / f"Pulumi.{STACK}.yaml").read_text()
    )
    project_b.merge_config({"training": {"results_on_destroy": "keep"}})
    output = up(project_b)
    b_run = str(project_b.outputs()["training_results"]["server1"]).rsplit("/", 1)[-1]  # type: ignore[index]
    assert "resuming" not in output and b_run != a_run, output[-3000:]
    assert b_run.rsplit("-", 1)[-1] == a_run.rsplit("-", 1)[-1], "the same inputs: the same identity key"
    assert b_run.split("-")[-2] != a_run.split("-")[-2], "but another stack's tag"

    # `remove` set with no `up` after it: destroy runs no program, and reads the stack file.
    project_b.merge_config({"training": {"results_on_destroy": "remove"}})
    code, destroyed = attempt(project_b, "destroy", "--yes")
    assert code == 0, destroyed[-3000:]
    assert f"server1: removed 1 run(s) from {MOVED}" in destroyed, destroyed[-3000:]
    for host in HOSTS:
        left = on_host(host, "ls", MOVED).split()
        assert a_run in left and b_run not in left, f"{host}: A's run stays, B's is gone: {left}"
