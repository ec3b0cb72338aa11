"""NodeContainer: one host's training container, a `docker.Container` on that host's engine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_docker as docker

from components.render.container_spec import ContainerSpec
from components.naming import component_type

READY_CHECK = ["CMD", "/opt/dslab/ready.sh"]
"""The image's readiness script (assets/container/ready.sh): keys settled, sshd running."""


SWARM_NODE_LABEL = "dslab.swarm-node"


@dataclass(frozen=True)
class NodeContainerArgs:
    host_name: str
    spec: ContainerSpec
    image_id: pulumi.Input[str]
    """The image by id: a rebuilt image replaces the container."""
    network_id: pulumi.Input[str] | None
    """The overlay network by id (None on the hosts' network): a new network replaces the
    container, since a network in use cannot be removed."""
    swarm_node: pulumi.Input[str] | None
    """The host's swarm node id (None on the hosts' network), kept in a label: a host that
    left the swarm and joined again is a new node, and its container, which lost the overlay
    with the old node, is made again."""


def healthcheck() -> docker.ContainerHealthcheckArgs:
    """Checked every second while the container starts (`pulumi up` waits for healthy), then
    every 30 s. Durations are written as the engine reads them back, so refresh sees no change."""
    return docker.ContainerHealthcheckArgs(
        tests=READY_CHECK,
        interval="30s",
        start_period="2m0s",
        start_interval="1s",
        timeout="10s",
        retries=3,
    )


class NodeContainer(pulumi.ComponentResource):
    """Creates the `<host>-<name>` container with its static overlay address (or on the host's
    network), hostname, shm, ulimits, GPUs, restart policy, mounts and environment, and waits
    until it is healthy. A container deleted or stopped behind our back is dropped by
    `pulumi refresh` and made again by the next `up`.

    The component's `providers` option names the host's engine.

    Outputs:
        address: the container's overlay address as the engine reports it (the host's in host mode).
        container_id: the engine's container id.
    """

    address: pulumi.Output[str]
    container_id: pulumi.Output[str]

    def __init__(self, name: str, args: NodeContainerArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("NodeContainer"), name, None, opts)
        spec = args.spec
        networks = None
        if args.network_id is not None:
            networks = [
                docker.ContainerNetworksAdvancedArgs(
                    name=args.network_id, ipv4_address=spec.address, aliases=[spec.hostname]
                )
            ]
        self.resource = docker.Container(
            f"{args.host_name}-{spec.name}",
            name=spec.name,
            image=args.image_id,
            hostname=spec.hostname,
            network_mode="host" if args.network_id is None else "bridge",
            networks_advanced=networks,
            shm_size=spec.shm_size_mb,
            restart=spec.restart,
            ulimits=[docker.ContainerUlimitArgs(name=n, soft=soft, hard=hard) for n, soft, hard in spec.ulimits],
            gpus=spec.gpus,
            volumes=[
                docker.ContainerVolumeArgs(
                    host_path=mount.source, container_path=mount.target, read_only=mount.read_only
                )
                for mount in spec.mounts
            ],
            envs=[f"{key}={value}" for key, value in spec.env],
            labels=[
                *(docker.ContainerLabelArgs(label=key, value=value) for key, value in spec.labels),
                *(
                    [docker.ContainerLabelArgs(label=SWARM_NODE_LABEL, value=args.swarm_node)]
                    if args.swarm_node
                    else []
                ),
            ],
            healthcheck=healthcheck(),
            wait=True,
            wait_timeout=150,
            must_run=True,
            opts=pulumi.ResourceOptions(
                parent=self,
                # One name per host: the old container goes before the new one starts.
                delete_before_replace=True,
                # The engine reports any GPU request as "all"; the request is in a label
                # (dslab.gpus), so a changed one still replaces the container. Containers made
                # before the SSH mesh named the other nodes had them in /etc/hosts (`hosts`):
                # they keep them rather than being replaced for it.
                ignore_changes=["gpus", "hosts"],
            ),
        )
        self.container_id = self.resource.id
        if args.network_id is None:
            self.address = pulumi.Output.from_input(spec.address)
        else:
            self.address = self.resource.network_datas.apply(lambda datas: overlay_address(datas, spec.address))
        self.register_outputs({"address": self.address, "container_id": self.container_id})


def overlay_address(datas: Sequence[docker.outputs.ContainerNetworkData] | None, planned: str) -> str:
    """The address the engine gave the container on the overlay: the planned one, or, when
    the engine reports something else, that (so an output never claims what is not there)."""
    addresses = [data.ip_address for data in datas or [] if data.ip_address]
    return planned if planned in addresses or not addresses else addresses[0]
