"""HostClaims: each host marked as this stack's before anything else runs on it."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_docker as docker

from components.naming import component_type

CLAIM_VOLUME = "dslab-claim"
OWNER_LABEL = "dslab.owner"


@dataclass(frozen=True)
class HostClaimsArgs:
    engines: dict[str, docker.Provider]
    """Host name -> its engine, in step order."""
    owner: str
    """`org/project/stack`: the label every container of this stack carries too."""


class HostClaims(pulumi.ComponentResource):
    """Creates, per host, a `docker.Volume` `dslab-claim` labelled with the stack. A host that
    another stack holds is refused by the hosts' probe (components.hosts.probe) before anything
    is registered; everything else on the hosts depends on the claims, so they are released
    last on `pulumi destroy`, and a claim removed behind our back is made again by the next
    `up` (the refresh finds it gone).

    Outputs:
        resources: the claims, to depend on.
    """

    def __init__(self, name: str, args: HostClaimsArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("HostClaims"), name, None, opts)
        self.resources: tuple[docker.Volume, ...] = tuple(
            docker.Volume(
                f"{name}-{host}",
                name=CLAIM_VOLUME,
                labels=[docker.VolumeLabelArgs(label=OWNER_LABEL, value=args.owner)],
                opts=pulumi.ResourceOptions(parent=self, provider=engine, delete_before_replace=True),
            )
            for host, engine in args.engines.items()
        )
        self.register_outputs({})
