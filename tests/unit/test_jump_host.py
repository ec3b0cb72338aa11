"""Servers behind a jump host (operator.jump_host, or a host's own jump_host): every ssh the
program starts to a host goes through its jump host with the operator's key and strict host keys
at both ends; the probe names the hop that failed (assets/operator/ask-hosts.sh, run here with a
stand-in ssh)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from components.config import Host, LabConfig, load_stack_file
from components.config import LabConfigError
from components.config.loading import load_lab_config, strip_namespace
from components.config.jump_host import JumpHost, JumpRoute
from components.hosts.credentials import read_operator_credentials
from components.hosts.engines import docker_ssh_opts, operator_ssh_line, operator_ssh_opts
from components.hosts.probe import ask_command
from components.hosts.operator_files import missing_local_files
from components.hosts.probe import ASK_SCRIPT, HOST_SCRIPT, parse_answers
from harness.pulumi_cli import REPO
from tests.support.probe_stand_ins import stand_ins

JUMP = JumpHost(address="10.0.18.5", port=2200, user="ops")
LAB_WIDE = JumpRoute(JUMP, "operator.jump_host")
HOSTS = [Host(name="server1", address="10.0.18.1"), Host(name="server2", address="10.0.18.9")]


def behind_jump(jump: JumpHost = JUMP) -> LabConfig:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    return config.model_copy(update={"operator": config.operator.model_copy(update={"jump_host": jump})})


def worker_behind(jump: JumpHost = JUMP) -> LabConfig:
    """The dev stack with only its worker behind a jump host of its own: the manager reached directly."""
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    hosts = document["config"]["dslab:hosts"]
    hosts[1]["jump_host"] = jump.model_dump()
    return load_lab_config(strip_namespace(document["config"])[0])


def test_every_ssh_goes_through_the_jump_host_with_the_same_key_and_strict_host_keys() -> None:
    direct = docker_ssh_opts("/keys/op key", "/kh/known_hosts")
    through = docker_ssh_opts("/keys/op key", "/kh/known_hosts", LAB_WIDE)
    assert through[: len(direct)] == direct and through[len(direct)] == "-o"
    assert through[-1].startswith("ProxyCommand=")
    words = shlex.split(through[-1].removeprefix("ProxyCommand="))
    assert words[:7] == [
        "bash",
        "assets/operator/jump-host.sh",
        "%h",
        "%p",
        "ops@10.0.18.5",
        "2200",
        "operator.jump_host",
    ]
    assert words[7:] == direct, "the jump host is checked as every host is; a path with a space stays one word"
    assert docker_ssh_opts("/k/50%", "/kh", LAB_WIDE)[-1].count("/k/50%%") == 1, "ssh's % token escaped in paths"
    config = behind_jump()
    for host in config.hosts:
        assert operator_ssh_opts(config.operator, host) == docker_ssh_opts(
            ".simhosts/operator_ed25519", ".simhosts/known_hosts", LAB_WIDE
        )


def test_a_host_of_its_own_jump_host_goes_through_it_the_others_as_the_lab_says() -> None:
    own = JumpHost(address="10.0.18.6", user="ops")
    config = worker_behind(own)
    manager, worker = config.hosts
    direct = docker_ssh_opts(".simhosts/operator_ed25519", ".simhosts/known_hosts")
    assert operator_ssh_opts(config.operator, manager) == direct, "no jump host for the manager: reached directly"
    assert operator_ssh_opts(config.operator, worker) == docker_ssh_opts(
        ".simhosts/operator_ed25519", ".simhosts/known_hosts", JumpRoute(own, "server2's jump_host")
    )
    # Its own replaces the lab's.
    both = config.model_copy(update={"operator": config.operator.model_copy(update={"jump_host": JUMP})})
    assert "ops@10.0.18.6" in operator_ssh_opts(both.operator, both.hosts[1])[-1]
    assert "ops@10.0.18.5" in operator_ssh_opts(both.operator, both.hosts[0])[-1]
    # The lines given to the user, the probe's and the Commands' connections follow it.
    assert "ProxyCommand" not in operator_ssh_line(config.operator, manager, "true")
    assert "-p 22 ops@10.0.18.6 -W %h:%p" in operator_ssh_line(config.operator, worker, "true")
    asked = shlex.split(ask_command(config, "o/p/s", False, ["img:1"], "/runs"))
    at = asked.index("server2=root@10.0.18.2:22")
    assert asked[at - 2 : at] == ["@jump=ops@10.0.18.6:22", operator_ssh_opts(config.operator, worker)[-1]]
    assert asked[at - 3] == "server1=root@10.0.18.1:22", "the manager asked directly"
    assert not any(word.startswith("ProxyCommand=") for word in asked[asked.index("--") :]), "one proxy per host"


def test_the_commands_connect_through_each_host_s_own_jump_host(tmp_path: Path) -> None:
    own = JumpHost(address="10.0.18.6", user="ops")
    config = worker_behind(own)
    (tmp_path / ".simhosts").mkdir()
    (tmp_path / ".simhosts" / "operator_ed25519").write_text("key")
    (tmp_path / ".simhosts" / "known_hosts").write_text(
        "10.0.18.1 ssh-ed25519 AAAAOne\n10.0.18.2 ssh-ed25519 AAAATwo\n10.0.18.6 ssh-ed25519 AAAAJump\n"
    )
    credentials = read_operator_credentials(config, tmp_path)
    assert list(credentials.proxies) == ["server2"], "the manager is reached directly"
    proxy = credentials.proxies["server2"]
    assert (proxy.host, proxy.port, proxy.user, proxy.host_key) == ("10.0.18.6", 22, "ops", "ssh-ed25519 AAAAJump")


def test_the_proxy_names_the_hop_that_failed(tmp_path: Path) -> None:
    # A stand-in ssh: the jump host 10.0.18.5 forwards to 10.0.18.1 only; 10.0.18.9 refuses.
    (tmp_path / "ssh").write_text(
        "#!/bin/bash\n"
        'case "$*" in\n'
        '  *10.0.18.9*) echo "ssh: connect to host 10.0.18.9 port 22: Connection refused" >&2; exit 255;;\n'
        '  *"-W 10.0.18.1:22"*) exit 0;;\n'
        '  *) printf "channel 0: open failed: connect failed: Connection refused\\nstdio forwarding failed\\n" >&2; exit 255;;\n'
        "esac\n"
    )
    (tmp_path / "ssh").chmod(0o755)

    def proxy(host: str, jump: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(REPO / "assets/operator/jump-host.sh"), host, "22", f"ops@{jump}", "22", "server2's jump_host",
             "-o", "BatchMode=yes"],
            capture_output=True, text=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, timeout=30,
        )  # fmt: skip

    assert proxy("10.0.18.1", "10.0.18.5").returncode == 0
    jump_down = proxy("10.0.18.1", "10.0.18.9")
    assert (jump_down.returncode, jump_down.stderr) == (
        255,
        "the jump host 10.0.18.9:22 (server2's jump_host) refused or did not answer: "
        "ssh: connect to host 10.0.18.9 port 22: Connection refused\n",
    )
    host_down = proxy("10.0.18.2", "10.0.18.5")
    assert (host_down.returncode, host_down.stderr) == (
        255,
        "cannot reach 10.0.18.2:22 from the jump host 10.0.18.5:22: channel 0: open failed: connect failed: Connection refused\n",
    )


def test_the_command_lines_given_to_the_user_go_through_it_too() -> None:
    config = behind_jump()
    line = operator_ssh_line(config.operator, config.manager, "docker exec -it llm bash", tty=True)
    words = shlex.split(line)
    proxy = next(word for word in words if word.startswith("ProxyCommand="))
    assert proxy.endswith("-p 2200 ops@10.0.18.5 -W %h:%p")
    assert words[-6:] == ["-t", "root@10.0.18.1", "docker", "exec", "-it", "llm", "bash"][-6:]


def test_a_jump_host_known_hosts_holds_no_key_for_is_named(tmp_path: Path) -> None:
    (tmp_path / ".simhosts").mkdir()
    (tmp_path / ".simhosts" / "operator_ed25519").write_text("key")
    (tmp_path / ".simhosts" / "operator_ed25519").chmod(0o600)
    (tmp_path / ".simhosts" / "known_hosts").write_text(
        "10.0.18.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOne\n10.0.18.2 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITwo\n"
    )
    assert missing_local_files(behind_jump(), tmp_path) == [
        "dslab:operator.jump_host: '.simhosts/known_hosts' holds no key for the jump host ([10.0.18.5]:2200); "
        "add its key after checking its fingerprint, e.g. ssh-keyscan -p 2200 10.0.18.5"
    ]
    with (tmp_path / ".simhosts" / "known_hosts").open("a") as known_hosts:
        known_hosts.write("[10.0.18.5]:2200 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJump\n")
    assert missing_local_files(behind_jump(), tmp_path) == []
    assert missing_local_files(worker_behind(JumpHost(address="10.0.18.6")), tmp_path) == [
        "dslab:hosts[1].jump_host: '.simhosts/known_hosts' holds no key for the jump host (10.0.18.6); "
        "add its key after checking its fingerprint, e.g. ssh-keyscan -p 22 10.0.18.6"
    ]


def test_a_host_s_own_jump_host_that_is_a_lab_host_is_refused_naming_it() -> None:
    with pytest.raises(LabConfigError) as refused:
        worker_behind(JumpHost(address="10.0.18.1"))
    assert "dslab:hosts[1].jump_host.address: 10.0.18.1:22 is hosts[0] (server1)" in str(refused.value)


def ask_through(tmp_path: Path, jump: str, worker_jump: str | None = None) -> str:
    """ask-hosts.sh: server1 and server2 behind JUMP; server2 behind WORKER_JUMP when given."""

    def behind(jump: str) -> list[str]:
        return [f"@jump={jump}", f"ProxyCommand=ssh -p 22 {jump.rsplit(':', 1)[0]} -W %h:%p"]

    ran = subprocess.run(
        ["bash", str(ASK_SCRIPT), str(HOST_SCRIPT), "o/p/s", "test-net", "no", "5", "10", "", str(tmp_path / "runs"), "",
         *behind(jump), "server1=root@10.0.18.1:22", *behind(worker_jump or jump), "server2=root@10.0.18.9:22",
         "--", "-o", "BatchMode=yes"],
        capture_output=True, text=True, env=stand_ins(tmp_path), timeout=30,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


ROUTES = {host.name: LAB_WIDE for host in HOSTS}


def test_a_jump_host_that_cannot_be_reached_is_named_for_every_host_none_asked(tmp_path: Path) -> None:
    # The stand-in's 10.0.18.9 refuses connections.
    answers = ask_through(tmp_path, "ops@10.0.18.9:22")
    assert answers.splitlines() == [
        "@jump=ops@10.0.18.9:22 unreachable ssh: connect to host 10.0.18.9 port 22: Connection refused",
        "server1 behind-jump",
        "server2 behind-jump",
    ]
    route = JumpRoute(JumpHost(address="10.0.18.9", user="ops"), "operator.jump_host")
    facts = parse_answers(answers, HOSTS, "kh", want_mtu=False, routes={"server1": route, "server2": route})
    assert facts.problems == {
        host: "not asked: cannot reach the jump host 10.0.18.9:22 (operator.jump_host) over SSH (is the host up "
        "and its key in kh?): ssh: connect to host 10.0.18.9 port 22: Connection refused"
        for host in ("server1", "server2")
    }


def test_a_host_the_jump_host_cannot_reach_is_named_with_the_hop(tmp_path: Path) -> None:
    answers = ask_through(tmp_path, "ops@10.0.18.5:22")
    route = JumpRoute(JumpHost(address="10.0.18.5", user="ops"), "operator.jump_host")
    facts = parse_answers(answers, HOSTS, "kh", want_mtu=False, routes={"server1": route, "server2": route})
    assert "server1" not in facts.problems, "asked through the jump host"
    assert facts.problems["server2"] == (
        "cannot reach server2 (10.0.18.9:22) over SSH through the jump host 10.0.18.5:22: "
        "ssh: connect to host 10.0.18.9 port 22: Connection refused"
    )


def test_a_jump_host_whose_key_changed_says_how_to_check_and_accept_it() -> None:
    facts = parse_answers(
        "@jump=root@10.0.18.7:22 host-key-changed\nserver1 behind-jump\n",
        HOSTS[:1],
        "kh",
        want_mtu=False,
        routes={"server1": JumpRoute(JumpHost(address="10.0.18.7"), "operator.jump_host")},
    )
    assert facts.problems["server1"].startswith(
        "not asked: the SSH host key of the jump host (operator.jump_host) (10.0.18.7:22) is not the one kh holds"
    )
    assert "ssh-keyscan -p 22 10.0.18.7 >> kh" in facts.problems["server1"]


def test_a_jump_host_down_stops_only_the_hosts_behind_it(tmp_path: Path) -> None:
    # server1 behind 10.0.18.5 (answers), server2 behind 10.0.18.9 (refuses).
    answers = ask_through(tmp_path, "ops@10.0.18.5:22", worker_jump="ops@10.0.18.9:22")
    lines = answers.splitlines()
    assert lines[0] == "@jump=ops@10.0.18.9:22 unreachable ssh: connect to host 10.0.18.9 port 22: Connection refused"
    assert lines[-1] == "server2 behind-jump"
    assert "server1 held server1 10.0.3.128" in lines, "server1 asked through the jump host that answers"
    routes = {
        "server1": LAB_WIDE,
        "server2": JumpRoute(JumpHost(address="10.0.18.9", user="ops"), "server2's jump_host"),
    }
    facts = parse_answers(answers, HOSTS, "kh", want_mtu=False, routes=routes)
    assert list(facts.problems) == ["server2"], "server1 was asked through its own jump host"
    assert facts.problems["server2"].startswith(
        "not asked: cannot reach the jump host 10.0.18.9:22 (server2's jump_host) over SSH"
    )
