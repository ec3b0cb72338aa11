"""The image relayed host to host (`image.distribution: relay`) on the simulated lab with three
hosts, on a stack of its own: the image is built on server1 (or an earlier module's build is
tagged back there only), then passed on to server2 and server3 over the lab's network. The link into
server3 cut while the image travels fails `up` within a bound, naming server3, and server2 keeps
its whole copy; a plain `up` once the link is back relays to server3 alone, trains across the
three hosts, and leaves no key of the relay on any host; `destroy` leaves nothing.

The tests share the stack and run in file order.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from components.config import load_stack_file
from components.render.build_context import training_image_source
from harness.stack_project import Stack
from tests.support.faults import LOGS, fault_stack, in_container, set_hosts, timed, training_log, up
from tests.support.sim_hosts import LAB, cached_name, host_fault, inspect, keep_build_cache, on_host

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "relay"
THREE = ("server1", "server2", "server3")
FAILS_WITHIN_S = 240
"""The cut link ends the hop within ssh's keep-alives (20 s); the rest of `up` then stops."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    for stack in fault_stack(tmp_path_factory, STACK, hosts=THREE, reuse_on=("server1",)):
        set_hosts(stack, list(THREE))
        stack.merge_config({"image": {"distribution": "relay"}})
        # What an earlier module left, under any name (a host holding the image under another
        # name only gets the name): the relay brings it.
        tag = image_tag(stack)
        for host in THREE[1:]:
            on_host(host, "docker", "image", "rm", tag, cached_name(tag), check=False)
        yield stack


def image_tag(stack: Stack) -> str:
    project = stack.cli.project_dir
    return training_image_source(load_stack_file(project / f"Pulumi.{STACK}.yaml").image, project).tag


def holds(host: str, tag: str) -> bool:
    return inspect(host, "image", tag) is not None


def relay_keys_left() -> list[str]:
    return [
        host
        for host in THREE
        if "dslab-relay"
        in on_host(host, "sh", "-c", "cat ~/.ssh/authorized_keys; ls ~/.dslab/relay 2>/dev/null || true")
    ]


def test_the_link_into_the_last_hop_cut_midway_fails_up_naming_it_the_hop_before_keeps_its_copy(stack: Stack) -> None:
    tag = image_tag(stack)
    assert not holds("server2", tag) and not holds("server3", tag)
    cli = stack.cli
    running = subprocess.Popen(
        ["pulumi", "up", "--yes", "--stack", STACK, "--non-interactive"],
        cwd=cli.project_dir, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        # server2 receiving (its hop's pipe made): the image is on its way to server3 through it.
        deadline = time.monotonic() + 600
        while not on_host("server2", "sh", "-c", "ls ~/.dslab/relay/*/stream 2>/dev/null || true").strip():
            assert running.poll() is None and time.monotonic() < deadline, "the relay started"
            time.sleep(0.5)
        host_fault("network-cut", "server3")
        started = time.monotonic()
        output, _ = running.communicate(timeout=900)
        took = timed("relay, link into server3 cut", "up failed after", started)
    finally:
        if running.poll() is None:
            running.kill()
        host_fault("network-restore", "server3")
    LOGS.append(output)
    assert running.returncode != 0, output[-3000:]
    assert took < FAILS_WITHIN_S, f"up failed within its bound, not after {took} s"
    assert f"{tag} did not arrive by the relay" in output and "server3" in output, output[-4000:]
    assert holds("server2", tag), "the hop before the cut loaded the image whole"
    assert not holds("server3", tag)


def test_a_plain_up_relays_to_the_host_that_lacks_it_only_and_trains_across_three(stack: Stack) -> None:
    tag = image_tag(stack)
    started = time.monotonic()
    output = up(stack)
    timed("relay, link into server3 cut", "next up finished in", started)
    assert f"{tag} already on root@{LAB.address('server2')}" in output, output[-4000:]
    assert "to 1 host(s) in" in output, output[-4000:]
    assert all(holds(host, tag) for host in THREE)
    log = training_log()
    assert "dslab: world_size=3" in log and "dslab: finished" in log, log[-2000:]
    assert in_container("server3", "true") == ""
    assert relay_keys_left() == [], "no host trusts the relay's key any more"
    stack.pulumi("preview", "--expect-no-changes")
    keep_build_cache()  # server2's kept copy, which the fixture removed, for the next module here


def test_destroy_leaves_nothing_on_the_hosts(stack: Stack) -> None:
    stack.pulumi("destroy", "--yes")
    for host in THREE:
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"no containers left on {host}"
    assert not holds("server2", image_tag(stack)) and not holds("server3", image_tag(stack))
    assert stack.cli.resource_count(STACK) == 0
