"""The simulated hosts, for real: hosts, ssh, engines, swarm, overlay, faults, and a clean `down`.

Tests run in file order against 2 simulated hosts of a lab of their own (conftest.LAB); the last
one takes it down, leaving every other lab on the machine as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from conftest import LAB, SimulatedHosts, take_snapshot

from simhosts import faults, hosts, lifecycle, paths
from simhosts.images import BASE_IMAGE
from simhosts.links import LinkRates

pytestmark = [pytest.mark.e2e, pytest.mark.simhosts]

OVERLAY = f"{LAB.network_name}-test-net"
OVERLAY_SUBNET = "10.20.30.0/24"
# Busybox (static, in the host image) is bind-mounted into the minbase Debian containers,
# which have neither nc nor python: it gives them a TCP listener.
BUSYBOX = "/bin/busybox:/bin/busybox:ro"


def test_each_host_answers_ssh_with_strict_host_key_checking_and_its_own_hostname(hosts_up: SimulatedHosts) -> None:
    for host in hosts_up.hosts:
        assert hosts_up.ssh(host.name, "hostname").stdout.strip() == host.name
        # By address too, as the Pulumi program connects: the known_hosts entry is keyed by IP.
        result = subprocess.run(
            ["ssh", "-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
             "-o", f"UserKnownHostsFile={hosts_up.state_dir / 'known_hosts'}",
             "-i", str(hosts_up.state_dir / "operator_ed25519"), f"root@{host.address}", "hostname"],
            capture_output=True, text=True, check=True, timeout=30,
        )
        assert result.stdout.strip() == host.name


def test_password_login_is_refused_and_an_unknown_host_key_is_rejected(hosts_up: SimulatedHosts, tmp_path: os.PathLike[str]) -> None:
    config = hosts_up.ssh("server1", "sshd", "-T").stdout
    assert "passwordauthentication no" in config
    assert "kbdinteractiveauthentication no" in config
    assert "maxstartups 200:30:400" in config
    empty_known_hosts = f"{tmp_path}/known_hosts"
    result = subprocess.run(
        ["ssh", "-F", str(hosts_up.ssh_config), "-o", f"UserKnownHostsFile={empty_known_hosts}", "server1", "true"],
        capture_output=True, text=True, timeout=30,
    )
    assert result.returncode != 0, "strict checking must refuse a host missing from known_hosts"


def test_each_host_runs_a_separate_docker_engine_reachable_over_ssh(hosts_up: SimulatedHosts) -> None:
    ids = {host.name: hosts_up.ssh(host.name, "docker", "info", "--format", "{{.ID}}").stdout.strip() for host in hosts_up.hosts}
    assert len(set(ids.values())) == len(hosts_up.hosts), f"engines must differ: {ids}"
    # The docker CLI's own ssh transport, through the .simhosts/bin/ssh wrapper (no ~/.ssh edits).
    env = {**os.environ, "PATH": f"{hosts_up.state_dir / 'bin'}:{os.environ['PATH']}"}
    for host in hosts_up.hosts:
        name = subprocess.run(
            ["docker", "-H", f"ssh://root@{host.address}", "info", "--format", "{{.Name}}"],
            capture_output=True, text=True, check=True, env=env, timeout=60,
        ).stdout.strip()
        assert name == host.name


def test_every_host_engine_has_the_debian_base_image(hosts_up: SimulatedHosts) -> None:
    for host in hosts_up.hosts:
        assert hosts_up.ssh(host.name, "docker", "image", "inspect", "--format", "{{.Id}}", BASE_IMAGE).stdout.startswith("sha256:")


def test_a_container_inside_a_host_reaches_the_debian_mirror(hosts_up: SimulatedHosts) -> None:
    # Retries: the mirror is outside this machine, and a dropped connection is not what is tested.
    result = hosts_up.ssh(
        "server2", "docker", "run", "--rm", BASE_IMAGE, "apt-get", "-o", "Acquire::Retries=3", "update",
        check=False, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "InRelease" in result.stdout


@pytest.fixture
def swarm(hosts_up: SimulatedHosts) -> Iterator[SimulatedHosts]:
    """server1 manages a swarm that server2 joins over the simulator network; left again after the
    test, so that no later test finds the hosts in a swarm."""
    hosts_up.ssh("server1", "docker", "swarm", "init", "--advertise-addr", LAB.address("server1"))
    token = hosts_up.ssh("server1", "docker", "swarm", "join-token", "--quiet", "worker").stdout.strip()
    hosts_up.ssh("server2", "docker", "swarm", "join", "--token", token, "--advertise-addr", LAB.address("server2"), f"{LAB.address('server1')}:2377")
    yield hosts_up
    hosts_up.ssh("server2", "docker", "swarm", "leave", "--force", check=False)
    hosts_up.ssh("server1", "docker", "swarm", "leave", "--force", check=False)


def test_server2_joins_the_swarm_of_server1_and_both_nodes_are_ready(swarm: SimulatedHosts) -> None:
    nodes = swarm.ssh("server1", "docker", "node", "ls", "--format", "{{.Hostname}} {{.Status}}").stdout.split("\n")
    assert sorted(line for line in nodes if line) == ["server1 Ready", "server2 Ready"]


def test_containers_on_an_attachable_overlay_talk_tcp_across_hosts(swarm: SimulatedHosts) -> None:
    swarm.ssh("server1", "docker", "network", "create", "--driver", "overlay", "--attachable",
              "--subnet", OVERLAY_SUBNET, OVERLAY)
    try:
        swarm.ssh("server1", "docker", "run", "--detach", "--name", "dslab-listener", "--network", OVERLAY,
                  "--ip", "10.20.30.10", "--volume", BUSYBOX, BASE_IMAGE, "/bin/busybox", "nc", "-l", "-p", "5000")
        sender = swarm.ssh(
            "server2", "docker", "run", "--rm", "--network", OVERLAY, "--ip", "10.20.30.11", BASE_IMAGE,
            "bash", "-c",
            # The listener, or the overlay's path to it, may still be coming up: retry, each attempt
            # bounded (a SYN nobody answers yet would hold bash's connect for two minutes).
            "for i in $(seq 30); do timeout 3 bash -c 'echo hello-from-server2 >/dev/tcp/10.20.30.10/5000' && "
            "cat /sys/class/net/eth0/mtu && exit 0; sleep 0.25; done; exit 1",
            check=False, timeout=120,
        )
        assert sender.returncode == 0, sender.stderr
        # VXLAN takes 50 bytes of the simulator bridge's 1500.
        assert sender.stdout.strip() == "1450"
        deadline = time.monotonic() + 10
        received = ""
        while "hello-from-server2" not in received and time.monotonic() < deadline:
            received = swarm.ssh("server1", "docker", "logs", "dslab-listener").stdout
            time.sleep(0.2)
        assert "hello-from-server2" in received
    finally:
        swarm.ssh("server1", "docker", "rm", "--force", "dslab-listener", check=False)
        swarm.ssh("server1", "docker", "network", "rm", OVERLAY, check=False)


def test_a_stopped_engine_refuses_docker_but_keeps_ssh_and_comes_back_on_start(hosts_up: SimulatedHosts) -> None:
    faults.stop_engine(LAB, "server2")
    try:
        assert not faults.engine_running(LAB, "server2")
        assert hosts_up.ssh("server2", "docker", "info", check=False).returncode != 0
        assert hosts_up.ssh("server2", "hostname").stdout.strip() == "server2"
    finally:
        faults.start_engine(LAB, "server2")
    assert faults.engine_running(LAB, "server2")
    assert hosts_up.ssh("server2", "docker", "info", "--format", "{{.Name}}").stdout.strip() == "server2"


def _mangle_rules(host: str) -> list[str]:
    out = subprocess.run(["docker", "exec", LAB.host(host).container, "iptables-save", "-t", "mangle"],
                         capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if not line.startswith("#") and not line.startswith(":")]


def test_a_cut_network_isolates_the_host_and_restore_brings_back_exactly_what_was_there(hosts_up: SimulatedHosts) -> None:
    before = _mangle_rules("server2")
    faults.cut_network(LAB, "server2")
    try:
        assert faults.network_cut(LAB, "server2")
        assert hosts_up.ssh("server2", "true", check=False, timeout=30).returncode != 0
        probe = hosts_up.ssh("server1", "timeout", "3", "bash", "-c", f": </dev/tcp/{LAB.address('server2')}/22", check=False)
        assert probe.returncode != 0, "server1 must not reach server2 while its cable is pulled"
    finally:
        faults.restore_network(LAB, "server2")
    assert not faults.network_cut(LAB, "server2")
    assert _mangle_rules("server2") == before
    assert hosts_up.ssh("server1", "timeout", "3", "bash", "-c", f": </dev/tcp/{LAB.address('server2')}/22").returncode == 0
    assert hosts_up.ssh("server2", "hostname").stdout.strip() == "server2"


def test_a_stopped_host_comes_back_with_the_same_address_host_keys_engine_and_sshd(hosts_up: SimulatedHosts) -> None:
    host = LAB.host("server2")
    keys_before = hosts.host_keys(host)
    faults.stop_host(LAB, "server2")
    try:
        assert hosts.state(host) == "exited"
        assert hosts_up.ssh("server2", "true", check=False, timeout=30).returncode != 0
    finally:
        faults.start_host(LAB, "server2")
    assert hosts.host_keys(host) == keys_before
    inspect = json.loads(subprocess.run(["docker", "inspect", host.container], capture_output=True, text=True,
                                        check=True).stdout)[0]
    assert inspect["NetworkSettings"]["Networks"][LAB.network_name]["IPAddress"] == host.address
    # Strict host key checking against the unchanged known_hosts proves the keys are the same.
    assert hosts_up.ssh("server2", "docker", "info", "--format", "{{.Name}}").stdout.strip() == "server2"
    assert hosts_up.ssh("server2", "docker", "image", "inspect", BASE_IMAGE, check=False).returncode == 0


def copy_seconds(hosts_up: SimulatedHosts, remote: str, send: bool) -> float:
    """How long 5 MB takes from the operator to server1 (SEND) or back, with REMOTE run there."""
    started = time.monotonic()
    subprocess.run(
        ["ssh", "-F", str(hosts_up.ssh_config), "server1", remote],
        input=b"\0" * 5_000_000 if send else None, stdout=subprocess.DEVNULL, check=True, timeout=120,
    )  # fmt: skip
    return time.monotonic() - started


def test_limited_links_hold_a_copy_to_their_rate_and_up_without_them_takes_the_limits_away(
    hosts_up: SimulatedHosts,
) -> None:
    # 5 MB is 40 Mbit: at least 2 s over the operator's 20 Mbit/s, either way (a busy machine only adds).
    lifecycle.up(LAB, 2, print, rates=LinkRates(host="80mbit", operator="20mbit"))
    try:
        assert [lifecycle.links.link_rates(LAB, host) for host in hosts_up.hosts] == [
            LinkRates(host="80mbit", operator="20mbit")
        ] * 2
        assert copy_seconds(hosts_up, "head -c 5000000 /dev/zero", send=False) >= 1.8, "the operator's downlink"
        assert copy_seconds(hosts_up, "cat >/dev/null", send=True) >= 1.8, "the operator's uplink"
    finally:
        lifecycle.up(LAB, 2, print)
    assert [lifecycle.links.link_rates(LAB, host) for host in hosts_up.hosts] == [LinkRates()] * 2
    pid = subprocess.run(
        ["docker", "inspect", "--format", "{{.State.Pid}}", hosts_up.hosts[0].container],
        capture_output=True, text=True, check=True,
    ).stdout.strip()
    sending = subprocess.run(
        ["nsenter", "--target", pid, "--net", "tc", "qdisc", "show", "dev", "eth0"], capture_output=True, text=True
    )
    assert "htb" not in sending.stdout and "tbf" not in sending.stdout, sending.stdout


def engine_pid(host: str) -> str:
    return subprocess.run(
        ["docker", "exec", LAB.host(host).container, "cat", "/run/docker.pid"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_up_restarts_an_engine_in_no_swarm_that_still_holds_the_gossip_port_and_no_other(
    hosts_up: SimulatedHosts,
) -> None:
    # What a worker that left with its manager can keep for good (moby/moby#31913), here a listener.
    for host in ("server1", "server2"):
        assert hosts.swarm_state(LAB.host(host)) == "inactive", f"{host} must start in no swarm"
        # A leave closes the port within seconds; an engine that has not yet is not the case tested.
        assert hosts.gossip_port(LAB.host(host), "wait_for_gossip_port_free"), f"{host}'s port is free"
    container = LAB.host("server2").container
    subprocess.run(["docker", "exec", "--detach", container, "busybox", "nc", "-l", "-p", "7946"], check=True)
    try:
        time.sleep(1)
        assert hosts.gossip_port(LAB.host("server2"), "gossip_port_held"), "the port is held"
        before = {host: engine_pid(host) for host in ("server1", "server2")}
        lifecycle.up(LAB, 2, print)
        assert engine_pid("server2") != before["server2"], "its engine was restarted"
        assert engine_pid("server1") == before["server1"], "an engine whose port is free is left alone"
    finally:
        subprocess.run(["docker", "exec", container, "pkill", "-f", "nc -l -p 7946"], check=False)


def test_clean_removes_what_stacks_left_and_keeps_the_images_even_behind_a_frozen_engine(swarm: SimulatedHosts) -> None:
    # What a test run killed halfway leaves: a stack's container and claim, a swarm, results
    # directories and step marks, and here server2's engine frozen by a fault never undone.
    swarm.ssh("server1", "docker", "volume", "create", "dslab-claim")
    swarm.ssh("server1", "docker", "run", "--detach", "--name", "llm", "--volume", "dslab-claim:/claim", BASE_IMAGE, "sleep", "infinity")
    swarm.ssh("server1", "docker", "tag", BASE_IMAGE, "dslab/train:left")
    swarm.ssh("server1", "docker", "tag", BASE_IMAGE, "dslab-test-cache/train:kept")
    for host in ("server1", "server2"):
        swarm.ssh(host, "sh", "-c", "mkdir -p /var/lib/dslab/dslab/dev/runs /root/.dslab/steps && touch /var/lib/dslab/dslab/dev/runs/r /root/.dslab/steps/s")
    faults.hang_engine(LAB, "server2")

    assert lifecycle.clean(LAB, print) == ["server1", "server2"]

    for host in ("server1", "server2"):
        assert swarm.ssh(host, "docker", "ps", "--all", "--quiet").stdout.strip() == "", f"no container left on {host}"
        assert swarm.ssh(host, "docker", "volume", "ls", "--quiet").stdout.strip() == "", f"no volume left on {host}"
        assert hosts.swarm_state(LAB.host(host)) == "inactive", f"{host} in no swarm"
        assert swarm.ssh(host, "sh", "-c", "ls -A /var/lib/dslab /root/.dslab 2>/dev/null || true").stdout.strip() == ""
    images = swarm.ssh("server1", "docker", "images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
    assert "dslab-test-cache/train:kept" in images and BASE_IMAGE in images, f"images stay: {images}"
    assert "dslab/train:left" not in images, "no image under the program's names, as after a destroy"
    swarm.ssh("server1", "docker", "rmi", "dslab-test-cache/train:kept")


def test_images_finds_the_simulators_images_in_place_and_leaves_the_lab_as_it_was(hosts_up: SimulatedHosts) -> None:
    # `make test-e2e` runs it beside the toolchain build; here the lab is up, so the images are
    # there and nothing may be built again or changed on the lab.
    before = take_snapshot(mount_points=hosts_up.mount_points)
    result = subprocess.run(
        [sys.executable, "-m", "simhosts", "images"], capture_output=True, text=True, timeout=300, cwd=paths.REPO_ROOT
    )
    assert result.returncode == 0, result.stderr
    assert "images ready in" in result.stderr, result.stderr
    for building in ("debootstrap", "import local/", "build local/", "load local/"):
        assert building not in result.stderr, f"nothing built or loaded again: {result.stderr}"
    after = take_snapshot(mount_points=hosts_up.mount_points)
    assert (after.containers, after.volumes, after.networks, after.links) == (
        before.containers, before.volumes, before.networks, before.links,
    )


def test_lab_up_again_is_fast_and_keeps_the_operator_key_and_host_keys(hosts_up: SimulatedHosts) -> None:
    key = (hosts_up.state_dir / "operator_ed25519").read_text()
    known_hosts = (hosts_up.state_dir / "known_hosts").read_text()
    started = time.monotonic()
    lifecycle.up(LAB, 2, print)
    assert time.monotonic() - started < 30
    assert (hosts_up.state_dir / "operator_ed25519").read_text() == key
    assert (hosts_up.state_dir / "known_hosts").read_text() == known_hosts
    assert oct(hosts_up.state_dir.stat().st_mode & 0o777) == "0o700"


def test_lab_down_leaves_nothing_behind(hosts_up: SimulatedHosts) -> None:
    lifecycle.down(LAB, print)
    after = take_snapshot(mount_points=hosts_up.mount_points)
    assert after.containers == hosts_up.before.containers
    assert after.volumes == hosts_up.before.volumes
    assert after.networks == hosts_up.before.networks
    assert LAB.bridge_interface not in after.links
    assert after.links == hosts_up.before.links, "no veth or bridge may remain"
    assert after.iptables == hosts_up.before.iptables
    assert hosts_up.mount_points, "the lab's mounts were known while it was up"
    assert after.mounts == frozenset(), "none of the lab's mounts may remain"
    assert after.lab_cgroups == frozenset()
    assert after.lab_processes == ()
    assert not hosts_up.state_dir.exists()
