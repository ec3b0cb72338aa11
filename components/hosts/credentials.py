"""How `command.remote.Command` reaches a host: the operator's key (a secret) and the host key
the operator's known_hosts trusts for it, checked on every connection."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_command as command

from components.config import Host, LabConfig
from components.hosts.known_hosts import host_key
from components.paths import project_path

DIAL_ATTEMPTS = 3
"""Connection attempts before a step fails: a host that is down is named within ~30 s."""
DIAL_TIMEOUT_SECONDS = 10


@dataclass(frozen=True)
class OperatorCredentials:
    """The operator's private key (secret) and, per host name, the host key to check."""

    private_key: pulumi.Input[str]
    host_keys: dict[str, str]
    proxies: dict[str, command.remote.ProxyConnectionArgs] = field(default_factory=dict)
    """Per host name behind a jump host (operator.jump_host or its own): the jump host, its key
    checked."""


def read_operator_credentials(config: LabConfig, project_dir: Path) -> OperatorCredentials:
    """The credentials from the stack's key and known_hosts files, which
    components.hosts.operator_files has checked (each host's key is there)."""
    operator = config.operator
    if operator.private_key_path is not None:
        text = project_path(operator.private_key_path, project_dir).read_text(encoding="utf-8")
    else:
        text = operator.secret_key_text()
    known_hosts = project_path(operator.known_hosts_path, project_dir)
    host_keys: dict[str, str] = {}
    for host in config.hosts:
        key = host_key(known_hosts, host.address, host.ssh_port)
        if key is None:
            raise ValueError(f"{operator.known_hosts_path} holds no key for {host.name} ({host.address})")
        host_keys[host.name] = key
    private_key = pulumi.Output.secret(text.rstrip("\n") + "\n")
    proxies: dict[str, command.remote.ProxyConnectionArgs] = {}
    for host in config.hosts:
        route = host.jump_route(operator.jump_host)
        if route is None:
            continue
        jump = route.jump
        jump_key = host_key(known_hosts, jump.address, jump.port)
        if jump_key is None:
            raise ValueError(f"{operator.known_hosts_path} holds no key for the jump host ({jump.address}, {route.setting})")
        proxies[host.name] = command.remote.ProxyConnectionArgs(
            host=jump.address,
            port=jump.port,
            user=jump.user,
            private_key=private_key,
            host_key=jump_key,
            dial_error_limit=DIAL_ATTEMPTS,
            per_dial_timeout=DIAL_TIMEOUT_SECONDS,
        )
    return OperatorCredentials(private_key=private_key, host_keys=host_keys, proxies=proxies)


def command_connection(host: Host, credentials: OperatorCredentials) -> command.remote.ConnectionArgs:
    return command.remote.ConnectionArgs(
        host=host.address,
        port=host.ssh_port,
        user=host.ssh_user,
        private_key=credentials.private_key,
        host_key=credentials.host_keys[host.name],
        dial_error_limit=DIAL_ATTEMPTS,
        per_dial_timeout=DIAL_TIMEOUT_SECONDS,
        proxy=credentials.proxies.get(host.name),
    )
