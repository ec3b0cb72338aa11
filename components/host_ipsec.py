"""HostIpsec: strongSwan between every pair of hosts, encrypting the overlay's VXLAN traffic."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi_command as command

from components.connection import RemoteHost
from components.image import TrainingImage, TrainingImageArgs
from components.naming import component_type
from components.paths import ASSETS_DIR
from components.remote_script import RemoteScript, script_call

ROUTE_TABLE = 4789
"""Routing table (and rule priority) that sends VXLAN to a peer into the tunnel."""

TUNNEL_WAIT_SECONDS = 90
"""How long a host waits for its tunnels: a peer's container may start a little later."""


@dataclass(frozen=True)
class HostIpsecArgs:
    hosts: tuple[RemoteHost, ...]
    """Manager first: with build-once the image is built there."""
    container_name: str
    image_tag: str
    image_context: dict[str, dict[str, Any]]
    image_build_args: dict[str, str]
    distribution: Literal["every-host", "build-once"]
    tunnel_mtu: pulumi.Input[int]
    """Largest packet the tunnel takes: the overlay's MTU plus the VXLAN header."""
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before any host is touched (the host claims)."""


class HostIpsec(pulumi.ComponentResource):
    """Creates the lab's pre-shared key (a local Command on this machine, secret), the IPsec
    image on every host (a TrainingImage of `assets/ipsec/`), and per host a RemoteScript that
    runs its IPsec container and waits for the tunnel to every other host.

    Attributes:
        per_host: host name -> its IPsec container resource (what its training container waits for).
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
        image = TrainingImage(
            f"{name}-image",
            TrainingImageArgs(
                hosts=args.hosts,
                tag=args.image_tag,
                context=args.image_context,
                build_args=args.image_build_args,
                distribution=args.distribution,
                after=args.after,
            ),
            pulumi.ResourceOptions(parent=self),
        )
        self.per_host = {host.name: self._run(name, host, args, psk, image) for host in args.hosts}
        self.register_outputs({})

    def _run(
        self, name: str, host: RemoteHost, args: HostIpsecArgs, psk: pulumi.Output[str], image: TrainingImage
    ) -> RemoteScript:
        peers = [other.address for other in args.hosts if other.name != host.name]
        built = image.per_host[host.name]
        return RemoteScript(
            f"{name}-{host.name}",
            label=f"{host.name}: IPsec with {len(peers)} peer(s)",
            connection=host.connection,
            create=script_call(
                "host/ipsec-run.sh",
                args.container_name,
                args.image_tag,
                host.address,
                pulumi.Output.from_input(args.tunnel_mtu).apply(str),
                str(ROUTE_TABLE),
                str(TUNNEL_WAIT_SECONDS),
                *peers,
            ),
            stdin=psk,
            read=script_call("host/ipsec-read.sh", args.container_name),
            delete=script_call("host/ipsec-remove.sh", args.container_name, args.image_tag, str(ROUTE_TABLE)),
            triggers=[built.result.apply(lambda result: str(result["image_id"]))],
            # Same container name: the old one must go before the new one starts.
            delete_before_replace=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[built]),
        )
