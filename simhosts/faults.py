"""Fault injection for reliability tests: a host's engine, network or whole self goes away.

Each fault has an exact inverse. Host names are ``server1``..``server8``.
"""

from __future__ import annotations

from simhosts import hosts
from simhosts.plan import host_by_name
from simhosts.proc import docker, run


def stop_engine(name: str) -> None:
    """Stop dockerd inside host ``name`` (sshd stays up; its containers stop with the engine)."""
    docker("exec", host_by_name(name).container, "dslab-engine", "stop")


def start_engine(name: str) -> None:
    """Start dockerd inside host ``name`` again and wait until it answers."""
    docker("exec", host_by_name(name).container, "dslab-engine", "start")


def engine_running(name: str) -> bool:
    """Return whether dockerd inside host ``name`` answers."""
    host = host_by_name(name)
    if hosts.state(host) != "running":
        return False
    return run(["docker", "exec", host.container, "dslab-engine", "status"], check=False).returncode == 0


def hang_engine(name: str) -> None:
    """Freeze dockerd inside host ``name`` (SIGSTOP): its socket still accepts connections, no
    call gets a reply, sshd answers, its containers run on. A deadlocked engine looks like this."""
    docker("exec", host_by_name(name).container, "sh", "-c", 'kill -STOP "$(cat /run/docker.pid)"')


def resume_engine(name: str) -> None:
    """Undo :func:`hang_engine` (SIGCONT)."""
    docker("exec", host_by_name(name).container, "sh", "-c", 'kill -CONT "$(cat /run/docker.pid)"')


def cut_network(name: str) -> None:
    """Drop every packet in and out of host ``name``'s eth0, like a pulled cable."""
    docker("exec", host_by_name(name).container, "dslab-netcut", "cut")


def restore_network(name: str) -> None:
    """Undo :func:`cut_network` exactly."""
    docker("exec", host_by_name(name).container, "dslab-netcut", "restore")


def network_cut(name: str) -> bool:
    """Return whether host ``name``'s network is cut."""
    return docker("exec", host_by_name(name).container, "dslab-netcut", "status") == "cut"


def stop_host(name: str) -> None:
    """Stop host ``name`` as a whole (power off): its engine shuts down, sshd goes away."""
    docker("stop", "--time", "30", host_by_name(name).container)


def start_host(name: str) -> None:
    """Start host ``name`` again (power on): same address, same host keys; waits for engine and sshd."""
    host = host_by_name(name)
    docker("start", host.container)
    hosts.wait_ready(host)
