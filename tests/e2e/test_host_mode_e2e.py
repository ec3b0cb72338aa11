"""network.mode: host end to end on the simulated 2-host lab: no swarm, no overlay; each
container shares its host's network, its sshd listens on 2222 beside the host's own on 22,
DeepSpeed logs in with --ssh_port and the hostfile names the hosts' addresses.

The tests share one stack and run in file order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from components.render.results import default_results_dir
from tests.support.sim_hosts import address, hosts_up, inspect, keep_build_cache, on_host, reuse_built_images
from harness.pulumi_cli import PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy

pytestmark = [pytest.mark.e2e, pytest.mark.program]

HOSTS = {name: address(name) for name in ("server1", "server2")}
STACK = "hostmode"
RESULTS = default_results_dir("dslab", STACK)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ensure_toolchain()
    hosts_up(len(HOSTS))
    for host in HOSTS:  # an earlier session's runs of this stack
        on_host(host, "rm", "-rf", RESULTS)
    work = tmp_path_factory.mktemp("host-mode-e2e")
    cli = PulumiCli(project_dir=project_copy(work, (STACK,)), state_dir=work / "state")
    cli.run("stack", "init", STACK)
    stack = Stack(cli, STACK)
    stack.pulumi("config", "set", "--path", "network.mode", "host")
    stack.pulumi("config", "set", "--path", "training.results_on_destroy", "remove")
    reuse_built_images(cli.project_dir, STACK)
    yield stack
    cli.run("destroy", "--yes", "--stack", STACK, check=False)


def test_up_trains_across_both_hosts_networks_without_a_swarm(stack: Stack) -> None:
    stack.pulumi("up", "--yes")
    keep_build_cache()
    outputs = stack.outputs()

    assert outputs["container_ips"] == HOSTS, "each container has its host's address"
    assert outputs["hostfile"] == f"{HOSTS['server1']} slots=1\n{HOSTS['server2']} slots=1\n"
    for host in HOSTS:
        swarm = on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip()
        assert swarm == "inactive", f"{host} needs no swarm"
        container = inspect(host, "container", "llm")
        assert container is not None and container["HostConfig"]["NetworkMode"] == "host"
        listening = on_host(host, "ss", "-Htln")
        assert re.search(r":2222\b", listening) and re.search(r":22\b", listening), "both sshds, side by side"

    log = on_host("server1", "docker", "exec", "llm", "cat", "/opt/dslab/run/train.log")
    assert "dslab: world_size=2" in log and "dslab: finished" in log
    # The hosts' sshd on 22 does not know the containers' keys: the ranks got in on 2222.
    assert outputs["training_status"] == "succeeded"
    assert float(str(outputs["preflight_busbw_gbps"])) > 0, "the preflight measured the hosts' network"


def test_a_second_preview_shows_no_changes(stack: Stack) -> None:
    stack.pulumi("preview", "--expect-no-changes")


def test_destroy_leaves_nothing(stack: Stack) -> None:
    on_host("server2", "touch", f"{RESULTS}/notes.txt")  # the user's, beside the runs
    destroyed = stack.pulumi("destroy", "--yes")
    assert f"server1: removed 1 run(s) from {RESULTS} (training.results_on_destroy: remove)" in destroyed, destroyed
    left = on_host("server1", "ls", "/var/lib/dslab/dslab", check=False).split()
    assert STACK not in left, "results_on_destroy: remove leaves nothing of the stack"
    assert on_host("server2", "ls", RESULTS).split() == ["notes.txt"], "but what is not a run's stays"
    on_host("server2", "rm", "-rf", RESULTS)
    for host in HOSTS:
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"no containers left on {host}"
        assert not re.search(r":2222\b", on_host(host, "ss", "-Htln")), "the container's sshd is gone"
    assert stack.cli.resource_count(STACK) == 0, "the stack is empty"
