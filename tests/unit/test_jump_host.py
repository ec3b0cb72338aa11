"""Servers behind a jump host (operator.jump_host): every ssh the program starts goes through it
with the operator's key and strict host keys at both ends; the probe names the hop that failed
(assets/operator/ask-hosts.sh, run here with a stand-in ssh)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from components.config import Host, LabConfig, load_stack_file
from components.config.jump_host import JumpHost
from components.hosts.engines import docker_ssh_opts, operator_ssh_line, operator_ssh_opts
from components.hosts.operator_files import missing_local_files
from components.hosts.probe import ASK_SCRIPT, HOST_SCRIPT, parse_answers
from harness.pulumi_cli import REPO
from tests.support.probe_stand_ins import stand_ins

JUMP = JumpHost(address="10.0.18.5", port=2200, user="ops")
HOSTS = [Host(name="server1", address="10.0.18.1"), Host(name="server2", address="10.0.18.9")]


def behind_jump(jump: JumpHost = JUMP) -> LabConfig:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    return config.model_copy(update={"operator": config.operator.model_copy(update={"jump_host": jump})})


def test_every_ssh_goes_through_the_jump_host_with_the_same_key_and_strict_host_keys() -> None:
    direct = docker_ssh_opts("/keys/op key", "/kh/known_hosts")
    through = docker_ssh_opts("/keys/op key", "/kh/known_hosts", JUMP)
    assert through[: len(direct)] == direct and through[len(direct)] == "-o"
    assert through[-1].startswith("ProxyCommand=")
    words = shlex.split(through[-1].removeprefix("ProxyCommand="))
    assert words[:6] == ["bash", "assets/operator/jump-host.sh", "%h", "%p", "ops@10.0.18.5", "2200"]
    assert words[6:] == direct, "the jump host is checked as every host is; a path with a space stays one word"
    assert docker_ssh_opts("/k/50%", "/kh", JUMP)[-1].count("/k/50%%") == 1, "ssh's % token escaped in paths"
    assert operator_ssh_opts(behind_jump().operator) == docker_ssh_opts(
        ".simhosts/operator_ed25519", ".simhosts/known_hosts", JUMP
    )


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
            ["bash", str(REPO / "assets/operator/jump-host.sh"), host, "22", f"ops@{jump}", "22", "-o", "BatchMode=yes"],
            capture_output=True, text=True, env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, timeout=30,
        )  # fmt: skip

    assert proxy("10.0.18.1", "10.0.18.5").returncode == 0
    jump_down = proxy("10.0.18.1", "10.0.18.9")
    assert (jump_down.returncode, jump_down.stderr) == (
        255,
        "the jump host 10.0.18.9:22 (operator.jump_host) refused or did not answer: "
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


def ask_through(tmp_path: Path, jump: str) -> str:
    ran = subprocess.run(
        ["bash", str(ASK_SCRIPT), str(HOST_SCRIPT), "o/p/s", "test-net", "no", "5", "10", "", str(tmp_path / "runs"), "",
         f"@jump={jump}", "server1=root@10.0.18.1:22", "server2=root@10.0.18.9:22", "--",
         "-o", "BatchMode=yes", "-o", f"ProxyCommand=ssh -p 22 {jump.rsplit(':', 1)[0]} -W %h:%p"],
        capture_output=True, text=True, env=stand_ins(tmp_path), timeout=30,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_a_jump_host_that_cannot_be_reached_is_named_for_every_host_none_asked(tmp_path: Path) -> None:
    # The stand-in's 10.0.18.9 refuses connections.
    answers = ask_through(tmp_path, "ops@10.0.18.9:22")
    assert answers.splitlines() == [
        "@jump unreachable ssh: connect to host 10.0.18.9 port 22: Connection refused",
        "server1 behind-jump",
        "server2 behind-jump",
    ]
    jump = JumpHost(address="10.0.18.9", user="ops")
    facts = parse_answers(answers, HOSTS, "kh", want_mtu=False, jump=jump)
    assert facts.problems == {
        host: "not asked: cannot reach the jump host 10.0.18.9:22 (operator.jump_host) over SSH (is the host up "
        "and its key in kh?): ssh: connect to host 10.0.18.9 port 22: Connection refused"
        for host in ("server1", "server2")
    }


def test_a_host_the_jump_host_cannot_reach_is_named_with_the_hop(tmp_path: Path) -> None:
    answers = ask_through(tmp_path, "ops@10.0.18.5:22")
    facts = parse_answers(answers, HOSTS, "kh", want_mtu=False, jump=JumpHost(address="10.0.18.5", user="ops"))
    assert "server1" not in facts.problems, "asked through the jump host"
    assert facts.problems["server2"] == (
        "cannot reach server2 (10.0.18.9:22) over SSH through the jump host 10.0.18.5:22: "
        "ssh: connect to host 10.0.18.9 port 22: Connection refused"
    )


def test_a_jump_host_whose_key_changed_says_how_to_check_and_accept_it() -> None:
    facts = parse_answers(
        "@jump host-key-changed\nserver1 behind-jump\n",
        HOSTS[:1],
        "kh",
        want_mtu=False,
        jump=JumpHost(address="10.0.18.7"),
    )
    assert facts.problems["server1"].startswith(
        "not asked: the SSH host key of the jump host (operator.jump_host) (10.0.18.7:22) is not the one kh holds"
    )
    assert "ssh-keyscan -p 22 10.0.18.7 >> kh" in facts.problems["server1"]
