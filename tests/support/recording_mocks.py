"""A recording mock engine for components (no hosts touched): every resource registered,
with its inputs; a RemoteScript's ``result`` is what its script would print."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pulumi

REMOTE_SCRIPT = "pulumi-python:dynamic/dslab:RemoteScript"
DOCKER_CONTAINER = "docker:index/container:Container"
DOCKER_NETWORK = "docker:index/network:Network"
DOCKER_PROVIDER = "pulumi:providers:docker"


@dataclass
class Recorded:
    name: str
    type: str
    inputs: dict[str, Any]


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource; a RemoteScript's `result` is what its script would print, a
    container's `networkDatas` the static addresses it asked for."""

    resources: dict[str, Recorded] = field(default_factory=dict)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources[args.name] = Recorded(name=args.name, type=args.typ, inputs=dict(args.inputs))
        outputs = dict(args.inputs)
        if args.typ == REMOTE_SCRIPT:
            outputs["result"] = fake_result(args.inputs["create"]["script"], args.name)
        if args.typ == DOCKER_CONTAINER:
            outputs["networkDatas"] = [
                {"networkName": network["name"], "ipAddress": network.get("ipv4Address", "")}
                for network in args.inputs.get("networksAdvanced") or []
            ]
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]] | None]:
        return {}, None


def fake_result(script: str, name: str) -> dict[str, Any]:
    return {
        "host/swarm-init.sh": {"join_token": "SWMTKN-1-secret", "node_id": "manager-node"},
        "host/swarm-join.sh": {"node_id": f"{name}-node"},
        "host/image-build.sh": {"image_id": "sha256:built"},
        "host/image-load.sh": {"image_id": "sha256:built"},
        "host/mesh-collect.sh": {
            "user_key": f"ssh-ed25519 AAAA{name}", "host_key": f"ssh-ed25519 BBBB{name}", "socket_ifname": "eth0",
        },
        "host/deepspeed-launch.sh": {"status": "succeeded", "log": "/opt/dslab/run/train.log"},
        "host/interface-mtu.sh": {"interface": "eth0", "mtu": 1500 if "server1" in name else 9000},
        "host/cluster-preflight.sh": {"nodes": 2, "busbw_gbps": 3.5, "allreduce": {"backend": "gloo"}},
        "operator/new-secret.sh": {"secret": "5" * 64},
        "host/ipsec-run.sh": {"container_id": f"{name}-cid"},
    }.get(script, {})
