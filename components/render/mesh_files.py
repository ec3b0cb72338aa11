"""The files of the SSH mesh: who may log in to a container, which host keys to trust, and
where each node is."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MeshNode:
    """One container as seen by the others."""

    name: str
    """Host name, also the container's hostname and hostfile entry."""
    address: str
    """Static overlay address."""
    port: int
    """Port of the container's sshd."""
    user_key: str
    """Public key of the container's root user (`ssh-ed25519 AAAA... comment`)."""
    host_key: str
    """Public sshd host key (`ssh-ed25519 AAAA...`)."""


def render_authorized_keys(nodes: Sequence[MeshNode]) -> str:
    """Every container's user key: each may log in to every other (and to itself)."""
    return "".join(f"{node.user_key.strip()}\n" for node in nodes)


def render_known_hosts(nodes: Sequence[MeshNode]) -> str:
    """Every container's host key under its name and address, so strict checking holds."""
    lines = []
    for node in nodes:
        names = [node.name, node.address]
        if node.port != 22:
            names = [f"[{name}]:{node.port}" for name in names]
        lines.append(f"{','.join(names)} {node.host_key.strip()}\n")
    return "".join(lines)


def render_ssh_config(nodes: Sequence[MeshNode]) -> str:
    """root's ssh client config: each node's name leads to its address. The hostfile names the
    nodes, and a container made before or after another knows none of them by itself (they are
    not in its /etc/hosts, which would tie every container to the whole host list)."""
    lines = ["# Written by dslab: where each node of the lab is.\n"]
    for node in nodes:
        lines.append(f"Host {node.name}\n    HostName {node.address}\n")
    return "".join(lines)
