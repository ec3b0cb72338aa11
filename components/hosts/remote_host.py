"""How components see a host: its name, its address, and the connection a
`command.remote.Command` takes to it (components.hosts.credentials)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_command as command

from components.hosts.credentials import OperatorCredentials, command_connection
from components.config import Host


@dataclass(frozen=True)
class RemoteHost:
    """A host as components see it: its name, its address, and how to reach it."""

    name: str
    address: str
    command: command.remote.ConnectionArgs
    after: tuple[pulumi.Resource, ...] = ()
    """What every step on the host comes after: the step that keeps the engine's bound there
    (components.steps.host_timeout), which the step's script reads."""


def remote_host(host: Host, credentials: OperatorCredentials, after: tuple[pulumi.Resource, ...] = ()) -> RemoteHost:
    return RemoteHost(
        name=host.name,
        address=host.address,
        command=command_connection(host, credentials),
        after=after,
    )
