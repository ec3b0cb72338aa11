"""`dslab:network`: the overlay (or the hosts' network), its addresses, MTU and encryption."""

from __future__ import annotations

import ipaddress
from typing import Annotated, Literal

from pydantic import BeforeValidator, ConfigDict, Field, model_validator
from pydantic.json_schema import JsonDict

from components.config.address_plan import MAX_PREFIX_LENGTH, default_gateway, default_ip_range
from components.config.base import FrozenModel, Problems
from components.config.fields import DockerName, IPv4NetworkStr, Mtu, ipv4_network
from components.config.on_change import Effect, on_change
from components.config.shapes import Shape
from components.config.shapes import ipv4_network as ipv4_network_text

Subnet = Annotated[
    str,
    BeforeValidator(ipv4_network),
    # Its size is checked with the other network rules; here it is a pattern.
    Shape(
        f"string (IPv4 subnet, CIDR, /{MAX_PREFIX_LENGTH} or larger)",
        {"type": "string", "pattern": ipv4_network_text(MAX_PREFIX_LENGTH)},
        replace=True,
    ),
]

_EVERY_CONTAINER = on_change(Effect.NEW_CONTAINERS, "a new overlay: every container")

# ipsec: strongswan asks for encrypted: true (the rule _ipsec_needs_encryption checks).
_STRONGSWAN_ENCRYPTS: JsonDict = {
    "if": {"required": ["ipsec"], "properties": {"ipsec": {"const": "strongswan"}}},
    "then": {"required": ["encrypted"], "properties": {"encrypted": {"const": True}}},
}


class NetworkConfig(FrozenModel):
    """The attachable overlay network the training containers share."""

    model_config = ConfigDict(json_schema_extra=_STRONGSWAN_ENCRYPTS)

    mode: Literal["overlay", "host"] = Field(
        default="overlay",
        description=(
            'How containers reach each other. "overlay" (default): a swarm overlay network, '
            'one address per container. "host": the hosts\' own network (no swarm, no '
            "overlay, no VXLAN); the container's sshd then listens on container.ssh_port."
        ),
        examples=["host"],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "every container, and a new run (the hostfile changes)"),
    )
    name: DockerName = Field(
        default="test-net",
        description="Network name. Default test-net.",
        examples=["lab-net"],
        json_schema_extra=_EVERY_CONTAINER,
    )
    subnet: Subnet = Field(
        default="10.0.3.0/24",
        description="Overlay subnet; must not contain the hosts' addresses. Default 10.0.3.0/24.",
        examples=["10.200.0.0/24"],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "a new overlay: every container, at new addresses"),
    )
    ip_range: IPv4NetworkStr | None = Field(
        default=None,
        description=(
            "Range docker allocates swarm's own endpoints from; static container addresses "
            "stay outside it. Default: the lower half of the subnet (10.0.3.0/25)."
        ),
        examples=["10.0.3.0/26"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, "a new overlay: every container", default="the subnet's lower half"
        ),
    )
    mtu: Mtu | None = Field(
        default=None,
        description=(
            "Overlay MTU in bytes. Default: the smallest MTU of the hosts' interfaces "
            "(the ones holding hosts[].address) minus 50 for VXLAN."
        ),
        examples=[1400],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "a new overlay: every container; unset, also when the hosts' interface MTU changes",
            default="the hosts' smallest interface MTU minus 50",
        ),
    )
    encrypted: bool = Field(
        default=False,
        description="Encrypt overlay traffic between hosts (IPsec). Default false.",
        examples=[True],
        json_schema_extra=_EVERY_CONTAINER,
    )
    ipsec: Literal["docker", "strongswan"] = Field(
        default="docker",
        description=(
            'Who does the IPsec of an encrypted overlay. "docker" (default): the overlay\'s own '
            '(ESP in the hosts\' kernels, which must support it). "strongswan": a strongSwan '
            "container on every host (IKEv2, ESP in userspace over a TUN device: for kernels "
            "without ESP; slower); the hosts need /dev/net/tun."
        ),
        examples=["strongswan"],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "a new overlay: every container (with encrypted: true)"),
    )

    @property
    def encryption(self) -> Literal["none", "docker", "strongswan"]:
        """Who encrypts the overlay: nobody, its own IPsec, or strongSwan containers."""
        return self.ipsec if self.encrypted else "none"

    @model_validator(mode="after")
    def _ipsec_needs_encryption(self) -> NetworkConfig:
        if self.ipsec != "docker" and not self.encrypted:
            problems = Problems()
            problems.add(
                ("ipsec",),
                f"{self.ipsec!r} has effect only on an encrypted overlay; set network.encrypted: "
                "true, or remove network.ipsec",
            )
            problems.raise_if_any()
        return self

    @model_validator(mode="after")
    def _range_inside_subnet(self) -> NetworkConfig:
        problems = Problems()
        subnet = ipaddress.IPv4Network(self.subnet)
        if subnet.prefixlen > MAX_PREFIX_LENGTH:
            problems.add(
                ("subnet",),
                f"{self.subnet!r} is too small for a gateway, a dynamic range and "
                f"static container addresses; expected a /{MAX_PREFIX_LENGTH} or larger, "
                "e.g. 10.0.3.0/24",
            )
        if self.ip_range is not None:
            dynamic = ipaddress.IPv4Network(self.ip_range)
            if not dynamic.subnet_of(subnet):
                problems.add(
                    ("ip_range",),
                    f"{self.ip_range!r} is not inside subnet {self.subnet}; "
                    f"expected a part of it, e.g. {default_ip_range(self.subnet)}",
                )
            elif dynamic == subnet:
                problems.add(
                    ("ip_range",),
                    f"{self.ip_range!r} is the whole subnet, which leaves no room "
                    f"for static container addresses; use a part, e.g. {default_ip_range(self.subnet)}",
                )
        problems.raise_if_any()
        return self

    @property
    def effective_ip_range(self) -> str:
        """``ip_range`` as configured, or the default lower half of the subnet."""
        return self.ip_range or default_ip_range(self.subnet)

    @property
    def gateway(self) -> str:
        """The overlay gateway docker assigns by default: the subnet's first address."""
        return default_gateway(self.subnet)
