"""NodeContainer: one host's training container on the overlay, with its static address."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class NodeContainerArgs:
    host_name: str
    connection: pulumi.Input[dict[str, Any]]
    container_name: str
    network_name: str
    address: str
    """Static overlay address (from the address plan)."""
    run_args: list[str]
    """`docker run` arguments after the name, image last (components.container_spec)."""
    image_id: pulumi.Input[str]
    """A new image id replaces the container."""
    network_id: pulumi.Input[str]
    """A new network (or "host") replaces the container: a network in use cannot be removed."""


class NodeContainer(pulumi.ComponentResource):
    """Creates one RemoteScript that runs the container and reads it back on refresh: a
    container deleted or stopped behind our back is made again by the next `up`.

    Outputs:
        address: the container's overlay address, as the engine reports it.
        container_id: the engine's container id.
        socket_ifname: the container's interface on the overlay (for NCCL/gloo).
    """

    address: pulumi.Output[str]
    container_id: pulumi.Output[str]
    socket_ifname: pulumi.Output[str]

    def __init__(self, name: str, args: NodeContainerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("NodeContainer"), name, None, opts)
        container = RemoteScript(
            f"{name}-run",
            label=f"{args.host_name}: container {args.container_name}",
            connection=args.connection,
            create=script_call("host/container-run.sh", args.container_name, args.network_name, "--", *args.run_args),
            read=script_call("host/container-read.sh", args.container_name, args.network_name, args.address),
            delete=script_call("host/container-remove.sh", args.container_name),
            triggers=[args.image_id, args.network_id],
            # One name per host: the old container goes before the new one starts.
            delete_before_replace=True,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.resource = container
        self.address = container.result.apply(lambda result: str(result["ip"]))
        self.container_id = container.result.apply(lambda result: str(result["container_id"]))
        self.socket_ifname = container.result.apply(lambda result: str(result.get("socket_ifname", "")))
        self.register_outputs(
            {"address": self.address, "container_id": self.container_id, "socket_ifname": self.socket_ifname}
        )
