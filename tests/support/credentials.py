"""Operator credentials for building the Lab under mocks: a key and a host key per host,
well-formed but opening nothing (no host is reached under mocks)."""

from __future__ import annotations

import pulumi

from components.hosts.credentials import OperatorCredentials
from components.config import LabConfig


def unit_credentials(config: LabConfig) -> OperatorCredentials:
    return OperatorCredentials(
        private_key=pulumi.Output.secret(
            "-----BEGIN OPENSSH PRIVATE KEY-----\nunit\n-----END OPENSSH PRIVATE KEY-----\n"
        ),
        host_keys={host.name: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{host.name}" for host in config.hosts},
    )
