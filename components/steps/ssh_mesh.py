"""SshMesh: every container trusts every other one, with keys made inside the containers."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass

import pulumi
import pulumi_command as command

from components.render.file_bundle import PlacedFile, bundle
from components.hosts.step_result import step_result
from components.hosts.host_script import host_script
from components.hosts.remote_host import RemoteHost
from components.render.mesh_files import MeshNode, render_authorized_keys, render_known_hosts, render_ssh_config
from components.naming import component_type

KEYS_STEP = "keys"
TRUST_STEP = "trust"
REACH_STEP = "reach"


@dataclass(frozen=True)
class MeshMember:
    host: RemoteHost
    container_name: str
    container_id: pulumi.Input[str]
    """A replaced container has new keys: the whole mesh is made again."""
    address: str
    ssh_port: int
    generations: dict[str, int]
    """Step -> the generation its Command runs with (components.hosts.probe): the keys, the
    trust files, and on the manager the reach check."""


def collected_keys(stdout: str) -> dict[str, str]:
    """mesh-keys.sh's result: the container's keys and the interface its address is on."""
    result = step_result(stdout, "mesh-keys.sh", ["socket_ifname"])
    return {key: str(value) for key, value in result.items()}


def mesh_node(member: MeshMember, keys: dict[str, str]) -> MeshNode:
    """The member as the others see it, with the keys collected from its container."""
    return MeshNode(
        name=member.host.name,
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
    """Creates, per container, a Command that collects its public user and host keys (making
    those removed inside it), and a Command that installs everybody's keys as authorized_keys
    and known_hosts, and every node's address by name in root's ssh config; then, from the
    manager's container, a Command that checks that every other node answers ssh. Private keys
    never leave their container; strict host key checking stays on. The hosts' probe checks all
    three on every preview and up: a key, a file or a node's answer lost inside a container is
    put right by the next `up`, in place.

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
        by_name = sorted(args.members, key=lambda member: member.host.name)
        keys = [command.stdout.apply(collected_keys) for command in collected]
        nodes = pulumi.Output.all(
            *[found.apply(functools.partial(mesh_node, member)) for member, found in zip(args.members, keys, strict=True)]
        ).apply(lambda found: sorted(found, key=lambda node: node.name))
        self.socket_ifname = keys[0].apply(lambda found: found["socket_ifname"])
        authorized_keys = nodes.apply(render_authorized_keys)
        self.known_hosts = nodes.apply(render_known_hosts)
        ssh_config = nodes.apply(render_ssh_config)
        files = {
            "/root/.ssh/authorized_keys": PlacedFile(authorized_keys, mode=0o600),
            "/root/.ssh/known_hosts": PlacedFile(self.known_hosts),
            "/root/.ssh/config": PlacedFile(ssh_config, mode=0o600),
        }
        self.trusts = [
            host_script(
                f"{name}-{member.host.name}-trust",
                member.host,
                "host/container-place-files.sh",
                [member.container_name, TRUST_STEP],
                data=bundle(files),
                generation=member.generations.get(TRUST_STEP, 0),
                # A new container has none of it.
                triggers=[member.container_id],
                opts=pulumi.ResourceOptions(parent=self, depends_on=collected),
            )
            for member in by_name
        ]
        manager = args.members[0]
        others = [member.host.name for member in by_name if member is not manager]
        self.reach = host_script(
            f"{name}-reach",
            manager.host,
            "host/mesh-reach.sh",
            [manager.container_name, str(args.reach_timeout), *others],
            generation=manager.generations.get(REACH_STEP, 0),
            # New trusted keys (a container made again, keys made again) are checked again.
            triggers=[nodes.apply(lambda found: hashlib.sha256(repr(found).encode()).hexdigest())],
            opts=pulumi.ResourceOptions(parent=self, depends_on=self.trusts),
        )
        self.register_outputs({"known_hosts": self.known_hosts, "socket_ifname": self.socket_ifname})

    def _collect(self, name: str, member: MeshMember) -> command.remote.Command:
        return host_script(
            f"{name}-{member.host.name}-keys",
            member.host,
            "host/mesh-keys.sh",
            [member.container_name],
            generation=member.generations.get(KEYS_STEP, 0),
            # A new container has new keys.
            triggers=[member.container_id],
            opts=pulumi.ResourceOptions(parent=self),
        )
