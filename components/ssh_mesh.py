"""SshMesh: every container trusts every other one, with keys made inside the containers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import functools

import pulumi

from components.container_files import PlacedFile, container_files
from components.mesh_files import MeshNode, render_authorized_keys, render_known_hosts, render_ssh_config
from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class MeshMember:
    host_name: str
    connection: pulumi.Input[dict[str, Any]]
    container_name: str
    container_id: pulumi.Input[str]
    """A replaced container has new keys: the whole mesh is made again."""
    address: str
    ssh_port: int


def mesh_node(member: MeshMember, keys: dict[str, Any]) -> MeshNode:
    """The member as the others see it, with the keys collected from its container."""
    return MeshNode(
        name=member.host_name,
        address=member.address,
        port=member.ssh_port,
        user_key=str(keys["user_key"]),
        host_key=str(keys["host_key"]),
    )


@dataclass(frozen=True)
class SshMeshArgs:
    members: tuple[MeshMember, ...]
    """Manager first: the reach check runs from its container."""
    reach_timeout: int
    """How long the manager's container waits for every other node to answer ssh."""


class SshMesh(pulumi.ComponentResource):
    """Creates, per container, a RemoteScript that collects its public user and host keys
    (making those removed inside it), and the ContainerFiles that install everybody's keys as
    authorized_keys and known_hosts, and every node's address by name in root's ssh config;
    then, from the manager's container, checks that every other node answers ssh. Private keys
    never leave their container; strict host key checking stays on. Every refresh reads all
    three again: a key, a file or a node's answer lost inside a container is put right by the
    next `up`.

    Outputs:
        known_hosts: the known_hosts every container got.
        socket_ifname: the manager container's interface on the overlay (for NCCL/gloo).
    """

    known_hosts: pulumi.Output[str]
    socket_ifname: pulumi.Output[str]

    def __init__(self, name: str, args: SshMeshArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("SshMesh"), name, None, opts)
        collected = [self._collect(name, member) for member in args.members]
        # By name, not by the host list's order: reordering the hosts changes no file.
        by_name = sorted(zip(args.members, collected, strict=True), key=lambda pair: pair[0].host_name)
        nodes = pulumi.Output.all(*[keys.result.apply(functools.partial(mesh_node, member)) for member, keys in by_name])
        self.socket_ifname = collected[0].result.apply(lambda keys: str(keys["socket_ifname"]))
        authorized_keys = nodes.apply(render_authorized_keys)
        self.known_hosts = nodes.apply(render_known_hosts)
        ssh_config = nodes.apply(render_ssh_config)
        container_ids = [member.container_id for member, _keys in by_name]
        self.trusts = [
            container_files(
                f"{name}-{member.host_name}-trust",
                label=f"{member.host_name}: ssh trust",
                connection=member.connection,
                container_name=member.container_name,
                dest="/root/.ssh",
                files={
                    "authorized_keys": PlacedFile(authorized_keys, mode=0o600),
                    "known_hosts": PlacedFile(self.known_hosts),
                    "config": PlacedFile(ssh_config, mode=0o600),
                },
                triggers=container_ids,
                opts=pulumi.ResourceOptions(parent=self),
            )
            for member, _keys in by_name
        ]
        manager = args.members[0]
        named = [f"{member.host_name}={member.address}" for member, _keys in by_name if member is not manager]
        self.reach = RemoteScript(
            f"{name}-reach",
            label=f"{manager.host_name}: ssh to every node",
            connection=manager.connection,
            create=script_call("host/mesh-check.sh", manager.container_name, str(args.reach_timeout), *named),
            # Every refresh (every `up`) tries once more; a silent node runs the check again.
            read=script_call("host/mesh-check.sh", "--read", manager.container_name, "0", *named),
            triggers=[trust.id for trust in self.trusts],
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.trusts),
        )  # fmt: skip
        self.register_outputs({"known_hosts": self.known_hosts, "socket_ifname": self.socket_ifname})

    def _collect(self, name: str, member: MeshMember) -> RemoteScript:
        return RemoteScript(
            f"{name}-{member.host_name}-keys",
            label=f"{member.host_name}: ssh keys",
            connection=member.connection,
            create=script_call("host/mesh-collect.sh", "make", member.container_name),
            read=script_call("host/mesh-collect.sh", "read", member.container_name),
            triggers=[member.container_id],
            opts=pulumi.ResourceOptions(parent=self),
        )
