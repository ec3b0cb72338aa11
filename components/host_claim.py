"""HostClaims: each host marked as this stack's before anything else runs on it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.connection import RemoteHost
from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class HostClaimsArgs:
    hosts: tuple[RemoteHost, ...]
    owner: str
    """`org/project/stack`: the label every container of this stack carries too."""


class HostClaims(pulumi.ComponentResource):
    """Creates, per host, a RemoteScript that claims the host for this stack (a labelled
    docker volume) and refuses one that another stack holds; everything else on the hosts
    depends on the claims, so a refused or unreachable host stops `pulumi up` before any
    host is changed, and the claims are released last on `pulumi destroy`.

    Outputs:
        resources: the claims, to depend on.
    """

    def __init__(self, name: str, args: HostClaimsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("HostClaims"), name, None, opts)
        self.resources: tuple[RemoteScript, ...] = tuple(
            RemoteScript(
                f"{name}-{host.name}",
                label=f"{host.name}: claim for {args.owner}",
                connection=host.connection,
                create=script_call("host/host-claim.sh", args.owner),
                read=script_call("host/host-claim-read.sh", args.owner),
                delete=script_call("host/host-release.sh", args.owner),
                # One claim per host: a new owner (a renamed stack) takes it after the old let go.
                delete_before_replace=True,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for host in args.hosts
        )
        self.register_outputs({})
