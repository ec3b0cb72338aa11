"""`dslab:operator.jump_host`: the login node (bastion) between the operator's machine and the lab."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from components.config.base import FrozenModel
from components.config.fields import IPv4Str, Port, UnixUser
from components.config.on_change import Effect, on_change

_REACH = on_change(Effect.NOTHING, "how this machine reaches the hosts behind it: their steps run again in place")


class JumpHost(FrozenModel):
    """A bastion every connection to the lab's hosts goes through, as `ssh -J user@address:port`
    would: with the operator's key, its host key checked against the operator's known_hosts."""

    address: IPv4Str = Field(
        description="The jump host's IPv4 address, reachable over ssh from the operator's machine.",
        examples=["192.0.2.10"],
        json_schema_extra=_REACH,
    )
    port: Port = Field(
        default=22, description="ssh port of the jump host. Default 22.", examples=[2222], json_schema_extra=_REACH
    )
    user: UnixUser = Field(
        default="root",
        description="ssh login user on the jump host. Default root.",
        examples=["ops"],
        json_schema_extra=_REACH,
    )

    @property
    def destination(self) -> str:
        """`user@address:port`, as our operator scripts take a host."""
        return f"{self.user}@{self.address}:{self.port}"


@dataclass(frozen=True)
class JumpRoute:
    """How one host is reached: through JUMP, set by SETTING (named in every message about it)."""

    jump: JumpHost
    setting: str
    """`operator.jump_host`, or `server2's jump_host` for a host's own."""


def jump_route(host_name: str, own: JumpHost | None, lab_wide: JumpHost | None) -> JumpRoute | None:
    """The jump host in front of HOST_NAME: its OWN (`hosts[].jump_host`) over the LAB_WIDE one
    (`operator.jump_host`); None when it is reached directly."""
    if own is not None:
        return JumpRoute(own, f"{host_name}'s jump_host")
    if lab_wide is not None:
        return JumpRoute(lab_wide, "operator.jump_host")
    return None
