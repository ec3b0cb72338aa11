"""HostIpsec: strongSwan between every pair of hosts, encrypting the overlay's VXLAN traffic."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_command as command
import pulumi_docker as docker

from components.hosts.remote_host import RemoteHost
from components.hosts.host_script import host_script
from components.steps.training_image import TrainingImage, TrainingImageArgs
from components.naming import component_type
from components.paths import ASSETS_DIR

ROUTE_TABLE = 4789
"""Routing table (and rule priority) that sends VXLAN to a peer into the tunnel."""

TUNNEL_WAIT_SECONDS = 90
"""How long a host waits for its tunnels: a peer's container may start a little later."""

IPSEC_IMAGE_STEP = "ipsec-image"
"""The IPsec image's shipped copy, as the hosts' probe names it."""

TUN = "/dev/net/tun"
"""The TUN device kernel-libipsec encrypts through."""

PSK_PATH = "/etc/swanctl/dslab.psk"
"""Where assets/ipsec/ipsec-peers.sh reads the pre-shared key."""


@dataclass(frozen=True)
class HostIpsecArgs:
    hosts: tuple[RemoteHost, ...]
    """Manager first, as the image's hosts."""
    engines: dict[str, docker.Provider]
    container_name: str
    image: TrainingImageArgs
    """The IPsec image (assets/ipsec/)."""
    tunnel_mtu: pulumi.Input[int]
    """Largest packet the tunnel takes: the overlay's MTU plus the VXLAN header."""


class HostIpsec(pulumi.ComponentResource):
    """Creates the lab's pre-shared key (a local Command on this machine, secret), the IPsec
    image on every host (a TrainingImage of `assets/ipsec/`), and per host its IPsec container
    (a `docker.Container` on the host's network, the key uploaded as a 0600 file) and a Command
    that waits for its tunnel to every other host; that Command's delete removes the routing
    rules the container leaves behind.

    Attributes:
        per_host: host name -> its tunnels' Command (what its training container waits for).
    """

    def __init__(self, name: str, args: HostIpsecArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("HostIpsec"), name, None, opts)
        key = command.local.Command(
            f"{name}-psk",
            create="bash -s",
            stdin=(ASSETS_DIR / "operator" / "new-secret.sh").read_text(encoding="utf-8"),
            # The key is printed nowhere, and kept in state encrypted.
            logging=command.local.Logging.NONE,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(parent=self, additional_secret_outputs=["stdout"]),
        )
        psk: pulumi.Output[str] = pulumi.Output.secret(key.stdout)
        self.image = TrainingImage(f"{name}-image", args.image, pulumi.ResourceOptions(parent=self))
        self.per_host = {host.name: self._tunnels(name, host, args, psk) for host in args.hosts}
        self.register_outputs({})

    def _tunnels(
        self, name: str, host: RemoteHost, args: HostIpsecArgs, psk: pulumi.Output[str]
    ) -> command.remote.Command:
        peers = [other.address for other in args.hosts if other.name != host.name]
        image = self.image.per_host[host.name]
        container = docker.Container(
            f"{name}-{host.name}",
            name=args.container_name,
            image=self.image.ids[host.name],
            command=[
                "up",
                host.address,
                pulumi.Output.from_input(args.tunnel_mtu).apply(str),
                str(ROUTE_TABLE),
                *peers,
            ],  # fmt: skip
            network_mode="host",
            # As the engine reports them back, so the refresh finds nothing changed.
            capabilities=docker.ContainerCapabilitiesArgs(adds=["CAP_NET_ADMIN"]),
            devices=[docker.ContainerDeviceArgs(host_path=TUN, container_path=TUN, permissions="rwm")],
            restart="unless-stopped",
            uploads=[docker.ContainerUploadArgs(file=PSK_PATH, content=psk, permissions="0600")],
            opts=pulumi.ResourceOptions(
                parent=self,
                provider=args.engines[host.name],
                depends_on=[image],
                additional_secret_outputs=["uploads"],
                # Same container name: the old one must go before the new one starts.
                delete_before_replace=True,
            ),
        )
        # The container in the command line, not a trigger: a new container is waited for again
        # in place, and the rules stay; only destroy (or IPsec turned off) runs the delete, once
        # no training container is left to send over the tunnels.
        return host_script(
            f"{name}-{host.name}-tunnels",
            host,
            "host/ipsec-tunnels.sh",
            ["wait", container.id, host.address, str(TUNNEL_WAIT_SECONDS), *peers],
            delete_args=["down", args.image.source.tag, str(ROUTE_TABLE)],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[container]),
        )
