"""The DeepSpeed hostfile: one ``<name> slots=<n>`` line per host, manager first.

DeepSpeed numbers ranks in hostfile order, so the manager (whose container address is
passed as ``--master_addr``) comes first and holds rank 0. Names are the containers'
hostnames: ssh (pdsh's) finds each through root's ssh config, which the SSH mesh writes, and
Docker's DNS on the overlay resolves them; on the hosts' network (``network.mode: host``)
they are the hosts' addresses.
"""

from __future__ import annotations

from collections.abc import Sequence

from components.config import Host


def order_manager_first(hosts: Sequence[Host]) -> list[Host]:
    """The manager, then the other hosts in configuration order."""
    return sorted(hosts, key=lambda host: host.role != "manager")


def render_hostfile(hosts: Sequence[Host], by_address: bool = False) -> str:
    """Hostfile text, newline-terminated, e.g. ``server1 slots=1\\nserver2 slots=1\\n``
    (``10.0.18.1 slots=1\\n...`` by address)."""
    return "".join(
        f"{host.address if by_address else host.name} slots={host.slots}\n"
        for host in order_manager_first(hosts)
    )
