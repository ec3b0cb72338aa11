"""How the program reaches a host: the SSH connection RemoteScript takes, and the one
`command.remote.Command` takes (components.command_connection)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_command as command
from pydantic import SecretStr

from components.command_connection import OperatorCredentials, command_connection
from components.config import Host, OperatorConfig


@dataclass(frozen=True)
class RemoteHost:
    """A host as components see it: its name, its address, and how to reach it."""

    name: str
    address: str
    connection: pulumi.Input[dict[str, Any]]
    command: command.remote.ConnectionArgs


def remote_host(host: Host, operator: OperatorConfig, credentials: OperatorCredentials) -> RemoteHost:
    return RemoteHost(
        name=host.name,
        address=host.address,
        connection=host_connection(host, operator),
        command=command_connection(host, credentials),
    )


def host_connection(host: Host, operator: OperatorConfig) -> pulumi.Input[dict[str, Any]]:
    """The connection to `host`: its address and port, and the operator's key and known_hosts.

    Paths stay as configured (relative to the project directory, where Pulumi runs the
    program and its providers), so moving the checkout does not show as a change. A key
    given as a secret makes the whole connection secret, in state and in logs.
    """
    connection: dict[str, Any] = {
        "name": host.name,
        "host": host.address,
        "port": host.ssh_port,
        "user": host.ssh_user,
        "known_hosts_path": operator.known_hosts_path,
    }
    if operator.private_key_path is not None:
        return {**connection, "private_key_path": operator.private_key_path}
    if not isinstance(operator.private_key, SecretStr):
        raise ValueError("dslab:operator.private_key could not be decrypted; run through `pulumi up`")
    return pulumi.Output.secret({**connection, "private_key": operator.private_key.get_secret_value()})
