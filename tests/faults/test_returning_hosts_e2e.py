"""Machines that come back different, on the simulated 2-host lab, on a stack of its own with a
training run going in the background: a worker reinstalled, the manager reinstalled (each an
empty disk under the same name, address and SSH host key) are set up again by a plain `up`, read
from what the hosts hold, and `pulumi preview --expect-no-changes` passes after it; a host whose
SSH host key changed is refused until the key is accepted with the command of docs/day-two.md;
a host renamed on the same machine is taken over; a pin on the address the other host's
container holds is refused in one line before anything changes.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator

import pytest

from components.render.results import default_results_dir
from harness.stack_project import Stack
from tests.support.faults import BACKGROUND_PAUSE_S, CONTAINER, attempt, container, fault_stack, set_long_run, timed, up
from tests.support.pulumi_output import first_error_naming
from tests.support.sim_hosts import address, host_fault, on_host

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "returning"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    for stack in fault_stack(tmp_path_factory, STACK):
        # A run that goes on for as long as the module does, in the background: `up` returns.
        stack.pulumi("config", "set", "--path", "training.wait", "false")
        set_long_run(stack, 1_000_000, BACKGROUND_PAUSE_S)
        stack.pulumi("config", "set", "--path", "training.stall_timeout", "900")
        up(stack)
        assert stack.outputs()["training_status"] == "running"
        yield stack


def container_ids() -> dict[str, str]:
    return {host: str(container(host)["Id"]) for host in ("server1", "server2")}


def swarm(host: str) -> dict[str, object]:
    info = on_host(host, "docker", "info", "--format", "{{json .Swarm}}")
    return dict(json.loads(info))


def assert_set_up_as_the_stack_says(stack: Stack, names: dict[str, str] | None = None) -> None:
    """Both hosts in one swarm, each holding the image, its results directory and a running
    container labelled with its name in the stack (NAMES: machine -> that name, when not the
    same); the training run going; and nothing left for a preview to change."""
    names = names or {}
    manager, worker = swarm("server1"), swarm("server2")
    assert manager["LocalNodeState"] == worker["LocalNodeState"] == "active"
    managers = {(m["NodeID"], m["Addr"]) for m in worker["RemoteManagers"]}  # type: ignore[attr-defined]
    assert (manager["NodeID"], f"{address('server1')}:2377") in managers, "the worker's manager is server1's node"
    nodes = on_host("server1", "docker", "node", "ls", "--format", "{{.ID}} {{.Status}}").strip().splitlines()
    assert sorted(nodes) == sorted([f"{manager['NodeID']} Ready", f"{worker['NodeID']} Ready"]), "no node left over"
    image_ids = stack.outputs()["image_ids"]
    assert isinstance(image_ids, dict)
    for host in ("server1", "server2"):
        name = names.get(host, host)
        assert (
            on_host(host, "docker", "image", "inspect", "--format", "{{.Id}}", str(image_ids[name])).strip()
            == image_ids[name]
        )
        on_host(host, "test", "-w", default_results_dir("dslab", STACK))  # fails unless there and writable
        assert container(host)["State"]["Running"]  # type: ignore[index]
        labels = on_host(
            host, "docker", "ps", "--all", "--filter", "label=dslab.owner", "--format", '{{.Label "dslab.host"}}'
        )
        assert labels.split() == [name], f"one container of the stack on {host}, made for {name}"
    assert stack.outputs()["training_status"] == "running"
    stack.pulumi("preview", "--expect-no-changes")


def test_a_pin_on_the_address_the_other_host_holds_is_refused_in_one_line_before_anything_changes(
    stack: Stack,
) -> None:
    before = container_ids()
    taken = stack.outputs()["container_ips"]["server2"]  # type: ignore[index]
    stack.pulumi("config", "set", "--path", "hosts[0].container_address", str(taken))
    try:
        code, output = attempt(stack, "up", "--yes")
    finally:
        stack.pulumi("config", "rm", "--path", "hosts[0].container_address")
    assert code != 0
    assert (
        f"dslab:hosts[0].container_address: {taken} is held now by the container of host 'server2'; pin 'server2' "
        "to another address (or leave 'server1' unpinned) and run pulumi up, then pin 'server1' to " in output
    ), output[-3000:]
    assert "Traceback" not in output
    assert container_ids() == before, "nothing changed"
    assert stack.outputs()["training_status"] == "running"
    stack.pulumi("preview", "--expect-no-changes")  # the pin taken back: the stack as it was


@pytest.mark.parametrize("host", ["server2", "server1"], ids=["worker", "manager"])
def test_a_reinstalled_machine_is_set_up_again_by_a_plain_up(stack: Stack, host: str) -> None:
    scenario = f"reinstalled {host}"
    host_fault("host-reinstall", host)
    assert on_host(host, "docker", "ps", "--all", "--quiet") == "", "nothing of the stack is left on it"
    started = time.monotonic()
    output = up(stack)
    timed(scenario, "repairing up", started)
    # Read from the host, not from marks: every step done on it is done again.
    for step in ("swarm", "image-", "results"):
        assert f"{host}: {step}" in output and "is not done" in output, output[-4000:]
    if host == "server1":
        assert "server2: swarm is not done (the manager server1 has no swarm" in output, output[-4000:]
    started = time.monotonic()
    assert_set_up_as_the_stack_says(stack)
    timed(scenario, "checks and a preview", started)
    assert on_host(host, "docker", "exec", CONTAINER, "true") == ""


def test_a_host_whose_key_changed_is_refused_until_the_new_key_is_accepted(stack: Stack) -> None:
    host_fault("host-rekey", "server2")
    code, output = attempt(stack, "up", "--yes")
    known_hosts = ".simhosts/known_hosts"
    server2 = address("server2")
    accept = f"ssh-keygen -R '{server2}' -f {known_hosts} && ssh-keyscan -p 22 {server2} >> {known_hosts}"
    # Under the default refresh the first word is pulumi-docker's: its first error line about the
    # host carries ours (components/hosts/ssh_gate.py), with the cause and the command.
    first = first_error_naming(output, "server2", server2)
    assert code != 0 and f"the SSH host key of server2 ({server2}:22) is not the one" in first, output[-3000:]
    assert accept in first, first
    code, output = attempt(stack, "preview", "--refresh=false")
    assert f"server2: the SSH host key of server2 ({server2}:22) is not the one {known_hosts} holds" in output, output[
        -3000:
    ]
    # The command of docs/day-two.md, as a user runs it in the project directory once the key is checked.
    accept = f"ssh-keygen -R {server2} -f {known_hosts} && ssh-keyscan -p 22 {server2} >> {known_hosts}"
    subprocess.run(["bash", "-c", accept], cwd=stack.cli.project_dir, check=True, capture_output=True)
    started = time.monotonic()
    up(stack)
    timed("host key changed", "up after accepting it", started)
    assert_set_up_as_the_stack_says(stack)


def test_a_host_renamed_on_the_same_machine_is_taken_over_by_a_plain_up(stack: Stack) -> None:
    stack.pulumi("config", "set", "--path", "hosts[1].name", "server3")
    started = time.monotonic()
    output = up(stack)
    timed("renamed server2", "up", started)
    assert "server3: its machine holds the container made for server2, no longer listed" in output, output[-4000:]
    assert_set_up_as_the_stack_says(stack, {"server2": "server3"})
    assert sorted(stack.outputs()["container_ips"]) == ["server1", "server3"]  # type: ignore[arg-type]
