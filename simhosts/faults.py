"""Fault injection for reliability tests: a host's engine, network or whole self goes away, or
its SSH host keys change (a machine reinstalled whole: simhosts.lifecycle.reinstall_host, which
provisions it again).

Each fault but the new host keys has an exact inverse. Host names are ``server1``..``server8`` of one
lab, or ``bastion`` (``up --bastion``).
"""

from __future__ import annotations

from simhosts import hosts
from simhosts.plan import SimLab
from simhosts.proc import docker, run


def stop_engine(lab: SimLab, name: str) -> None:
    """Stop dockerd inside host ``name`` (sshd stays up; its containers stop with the engine)."""
    docker("exec", lab.host(name).container, "dslab-engine", "stop")


def start_engine(lab: SimLab, name: str) -> None:
    """Start dockerd inside host ``name`` again and wait until it answers."""
    docker("exec", lab.host(name).container, "dslab-engine", "start")


def engine_running(lab: SimLab, name: str) -> bool:
    """Return whether dockerd inside host ``name`` answers."""
    host = lab.host(name)
    if hosts.state(host) != "running":
        return False
    return run(["docker", "exec", host.container, "dslab-engine", "status"], check=False).returncode == 0


def hang_engine(lab: SimLab, name: str) -> None:
    """Freeze dockerd inside host ``name`` (SIGSTOP): its socket still accepts connections, no
    call gets a reply, sshd answers, its containers run on. A deadlocked engine looks like this."""
    docker("exec", lab.host(name).container, "sh", "-c", 'kill -STOP "$(cat /run/docker.pid)"')


def resume_engine(lab: SimLab, name: str) -> None:
    """Undo :func:`hang_engine` (SIGCONT)."""
    hosts.resume_engine(lab.host(name))


def cut_network(lab: SimLab, name: str) -> None:
    """Drop every packet in and out of host ``name``'s eth0, like a pulled cable."""
    docker("exec", lab.host(name).container, "dslab-netcut", "cut")


def restore_network(lab: SimLab, name: str) -> None:
    """Undo :func:`cut_network` exactly."""
    docker("exec", lab.host(name).container, "dslab-netcut", "restore")


def network_cut(lab: SimLab, name: str) -> bool:
    """Return whether host ``name``'s network is cut."""
    return docker("exec", lab.host(name).container, "dslab-netcut", "status") == "cut"


def stop_host(lab: SimLab, name: str) -> None:
    """Stop host ``name`` as a whole (power off): its engine shuts down, sshd goes away."""
    docker("stop", "--time", "30", lab.host(name).container)


def start_host(lab: SimLab, name: str) -> None:
    """Start host ``name`` again (power on): same address, same host keys; waits for engine and sshd."""
    host = lab.host(name)
    docker("start", host.container)
    hosts.wait_ready(host)


def rekey_host(lab: SimLab, name: str) -> None:
    """Host ``name``'s SSH host keys made anew (a reinstall that did not keep them): sshd serves
    the new keys at once; the operator's known_hosts still holds the old ones."""
    hosts.run_fault_script(lab.host(name), "new-host-keys.sh")


SSHD_STOPPED = ["INPUT", "-p", "tcp", "--dport", "22", "-m", "comment", "--comment", "dslab-sshd-stopped",
                "-j", "REJECT", "--reject-with", "tcp-reset"]  # fmt: skip
"""The rule that makes port 22 answer as a host whose sshd is stopped does: connection refused
(stopping the sshd itself would end the simulated host, whose entrypoint waits on it)."""


def stop_sshd(lab: SimLab, name: str) -> None:
    """Host ``name`` refuses ssh connections, as with its sshd stopped; the rest runs on."""
    container = lab.host(name).container
    if run(["docker", "exec", container, "iptables", "-w", "-C", *SSHD_STOPPED], check=False).returncode != 0:
        docker("exec", container, "iptables", "-w", "-I", *SSHD_STOPPED[:1], "1", *SSHD_STOPPED[1:])


def start_sshd(lab: SimLab, name: str) -> None:
    """Undo :func:`stop_sshd` exactly."""
    container = lab.host(name).container
    while run(["docker", "exec", container, "iptables", "-w", "-D", *SSHD_STOPPED], check=False).returncode == 0:
        pass
