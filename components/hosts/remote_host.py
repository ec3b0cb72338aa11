"""How components see a host: its name, its address, and the connection a
`command.remote.Command` takes to it (components.hosts.credentials)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi_command as command

from components.hosts.credentials import OperatorCredentials, command_connection
from components.config import Host


@dataclass(frozen=True)
class RemoteHost:
    """A host as components see it: its name, its address, and how to reach it."""

    name: str
    address: str
    command: command.remote.ConnectionArgs
    engine_timeout: int
    """Seconds a Docker engine call of a host script may take (`operator.host_timeout`)."""


def remote_host(host: Host, credentials: OperatorCredentials, engine_timeout: int) -> RemoteHost:
    return RemoteHost(
        name=host.name,
        address=host.address,
        command=command_connection(host, credentials),
        engine_timeout=engine_timeout,
    )
