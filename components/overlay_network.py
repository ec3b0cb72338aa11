"""OverlayNetwork: the attachable overlay network that spans every node's container."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.connection import RemoteHost
from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class OverlayNetworkArgs:
    manager: RemoteHost
    hosts: tuple[RemoteHost, ...]
    """Every host: with encryption, each one's kernel must hold IPsec state."""
    network_name: str
    subnet: str
    ip_range: str
    """Where swarm's own endpoints get addresses; the static container addresses are outside it."""
    gateway: str
    mtu: int | None
    encrypted: bool


class OverlayNetwork(pulumi.ComponentResource):
    """Creates the network on the manager with one RemoteScript (workers see it once a
    container of theirs attaches); when encrypted, first one RemoteScript per host that
    checks its kernel can do IPsec, so that an overlay no traffic can cross is never made.

    Outputs:
        name: the network's name.
        network_id: the engine's id of the network.
    """

    name: pulumi.Output[str]
    network_id: pulumi.Output[str]

    def __init__(self, name: str, args: OverlayNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("OverlayNetwork"), name, None, opts)
        ipsec_checks = [
            RemoteScript(
                f"{name}-{host.name}-ipsec",
                label=f"{host.name}: IPsec for network.encrypted",
                connection=host.connection,
                create=script_call("host/ipsec-check.sh"),
                opts=pulumi.ResourceOptions(parent=self),
            )
            for host in (args.hosts if args.encrypted else ())
        ]
        network = RemoteScript(
            f"{name}-{args.network_name}",
            label=f"{args.manager.name}: network {args.network_name}",
            connection=args.manager.connection,
            create=script_call(
                "host/network-create.sh",
                args.network_name,
                args.subnet,
                args.ip_range,
                args.gateway,
                str(args.mtu or ""),
                "true" if args.encrypted else "false",
            ),
            read=script_call("host/network-read.sh", args.network_name),
            delete=script_call("host/network-remove.sh", args.network_name),
            # Same name: the old network must go before the new one is made.
            delete_before_replace=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=ipsec_checks),
        )
        self.resource = network
        self.name = pulumi.Output.from_input(args.network_name)
        self.network_id = network.result.apply(lambda result: str(result["id"]))
        self.register_outputs({"name": self.name, "network_id": self.network_id})
