"""OverlayNetwork: the attachable overlay network that spans every node's container."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_docker as docker

from components.hosts.remote_host import RemoteHost
from components.naming import component_type
from components.hosts.host_script import host_script


@dataclass(frozen=True)
class OverlayNetworkArgs:
    hosts: tuple[RemoteHost, ...]
    """Every host: with encryption, each one's kernel must hold IPsec state."""
    network_name: str
    subnet: str
    ip_range: str
    """Where swarm's own endpoints get addresses; the static container addresses are outside it."""
    gateway: str
    mtu: int | None
    """None: the smallest MTU of the hosts' interfaces minus the VXLAN overhead."""
    interface_mtus: tuple[int, ...]
    kept_mtu: int | None = None
    """The overlay's MTU as it stands, kept while a host's interface MTU is unknown (a host that
    did not answer a preview): a new MTU would replace the network and every container on it."""
    """The MTU of each host's interface that holds its address (components.hosts.probe, read
    on every preview and up): a host that joins the list is known to the preview."""
    encryption: Literal["none", "docker", "strongswan"] = "none"
    """Docker's own IPsec on the overlay, or strongSwan's tunnels under it (components.steps.host_ipsec),
    whose packets are larger and at most LIBIPSEC_MTU."""

    @property
    def docker_ipsec(self) -> bool:
        return self.encryption == "docker"


MTU_OPTION = "com.docker.network.driver.mtu"
ENCRYPTED_OPTION = "encrypted"

ETHERNET_MTU = 1500
"""The usual interface MTU, assumed only where no host could tell its own."""

VXLAN_OVERHEAD = 50
"""Bytes VXLAN adds to each packet (outer Ethernet 14, IPv4 20, UDP 8, VXLAN 8)."""

ESP_IN_UDP_OVERHEAD = 80
"""Bytes strongSwan's tunnel adds to each packet: outer IPv4 20, UDP 8, ESP header 8,
AES-GCM IV 8, padding up to 3, trailer 2, ICV 16 (65 at most), rounded up."""

LIBIPSEC_MTU = 1400
"""The largest packet strongSwan's userspace tunnel takes: it reads its TUN device with a
buffer of the device's MTU at creation, 1400 (measured: a larger MTU set later truncates
packets, so ssh over the overlay hangs after the TCP handshake)."""


def overlay_mtu(interface_mtus: list[int], tunnel_overhead: int = 0, tunnel_limit: int | None = None) -> int:
    """The overlay MTU that lets every host's VXLAN packets (in a tunnel, if any) through
    unfragmented."""
    # No host told its MTU only in a preview that could reach none (it warns): Ethernet's.
    underlay = min(interface_mtus, default=ETHERNET_MTU) - tunnel_overhead
    if tunnel_limit is not None:
        underlay = min(underlay, tunnel_limit)
    return underlay - VXLAN_OVERHEAD


def tunnel_mtu(overlay: int) -> int:
    """The largest packet strongSwan's tunnel must take for the overlay's VXLAN packets: a
    configured network.mtu may ask for more than it takes, and VXLAN packets are then
    fragmented before they enter it."""
    return min(overlay + VXLAN_OVERHEAD, LIBIPSEC_MTU)


def mtu_of_driver_option(driver_mtu: int) -> int:
    """The containers' MTU under the driver's `com.docker.network.driver.mtu` (driver_mtu_option's inverse)."""
    return driver_mtu - VXLAN_OVERHEAD


def driver_mtu_option(mtu: int) -> int:
    """The overlay driver's `com.docker.network.driver.mtu` for containers to get `mtu`:
    docker takes the option as the underlay's MTU and gives containers 50 bytes less
    (measured with docker 26: option 1450 -> container eth0 1400; no option -> 1450)."""
    return mtu + VXLAN_OVERHEAD


class OverlayNetwork(pulumi.ComponentResource):
    """Creates the `docker.Network` (overlay, attachable, static IPAM, MTU, encryption) on the
    manager's engine (the component's `providers` option); when encrypted, first one Command per
    host that checks its kernel can do IPsec, so that an overlay no traffic can cross is never
    made. Without a configured MTU, the overlay's follows the smallest of the hosts' interfaces
    (docker's fixed 1450 breaks large packets on hosts below 1500, and wastes jumbo frames).

    Outputs:
        name: the network's name.
        network_id: the engine's id of the network.
        mtu: the overlay's MTU.
    """

    name: pulumi.Output[str]
    network_id: pulumi.Output[str]
    mtu: pulumi.Output[int]

    def __init__(self, name: str, args: OverlayNetworkArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("OverlayNetwork"), name, None, opts)
        ipsec_checks = [
            host_script(
                f"{name}-{host.name}-ipsec",
                host,
                "host/ipsec-check.sh",
                [host.name],
                opts=pulumi.ResourceOptions(parent=self),
            )
            for host in (args.hosts if args.docker_ipsec else ())
        ]
        if args.mtu is not None:
            mtu = args.mtu
        elif args.kept_mtu is not None:
            mtu = args.kept_mtu
        else:
            tunnel = args.encryption == "strongswan"
            mtu = overlay_mtu(
                list(args.interface_mtus),
                tunnel_overhead=ESP_IN_UDP_OVERHEAD if tunnel else 0,
                tunnel_limit=LIBIPSEC_MTU if tunnel else None,
            )
        self.mtu = pulumi.Output.from_input(mtu)
        driver_mtu = self.mtu.apply(lambda mtu: str(driver_mtu_option(mtu)))
        options: dict[str, pulumi.Input[str]] = {MTU_OPTION: driver_mtu}
        if args.docker_ipsec:
            options[ENCRYPTED_OPTION] = ""
        # The engine adds options of its own (the VXLAN id), which refresh reads back: the
        # options are ignored after creation and repeated as labels, which are read back as
        # they are, so a new MTU or encryption setting still replaces the network.
        labels = [
            docker.NetworkLabelArgs(label="dslab.driver-mtu", value=driver_mtu),
            docker.NetworkLabelArgs(label="dslab.encrypted", value=str(args.docker_ipsec).lower()),
        ]
        # On the manager's engine (the component's `providers` option); workers see it when
        # a container of theirs attaches.
        network = docker.Network(
            args.network_name,
            name=args.network_name,
            driver="overlay",
            attachable=True,
            ipam_configs=[
                docker.NetworkIpamConfigArgs(subnet=args.subnet, ip_range=args.ip_range, gateway=args.gateway)
            ],
            options=options,
            labels=labels,
            opts=pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["options"],
                depends_on=ipsec_checks,
                # Same name: the old network must go before the new one is made.
                delete_before_replace=True,
            ),
        )
        self.resource = network
        self.name = network.name
        self.network_id = network.id
        self.register_outputs({"name": self.name, "network_id": self.network_id, "mtu": self.mtu})
