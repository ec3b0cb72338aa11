"""Swarm: the manager's `docker swarm init` and every worker's join, over SSH."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.connection import RemoteHost
from components.naming import component_type
from components.host_command import host_script
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class SwarmArgs:
    manager: RemoteHost
    workers: tuple[RemoteHost, ...]
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before any host is touched (the host claims)."""


def node_id_of(member: RemoteScript) -> pulumi.Output[str]:
    """The swarm node id that swarm-init.sh or swarm-join.sh printed."""
    return member.result.apply(lambda result: str(result["node_id"]))


class Swarm(pulumi.ComponentResource):
    """Creates one RemoteScript for the manager's init and, per worker, one for its join
    (their reads see a host that left the swarm), and a Command on the manager that forgets
    the node when the worker is removed, or the node it was before it joined again.

    Outputs:
        join_token: the worker join token (secret).
        manager_address: `address:2377`.
        joins: per worker name, its join resource (containers on it depend on it).
        node_ids: per host name, its swarm node id (a host that joins again gets a new one).
    """

    join_token: pulumi.Output[str]
    manager_address: pulumi.Output[str]

    def __init__(self, name: str, args: SwarmArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("Swarm"), name, None, opts)
        self.manager = self._create_manager(name, args.manager, args.after)
        self.join_token = pulumi.Output.secret(self.manager.result.apply(lambda result: str(result["join_token"])))
        self.manager_address = pulumi.Output.from_input(f"{args.manager.address}:2377")
        self.joins = {
            worker.name: self._create_worker(name, worker, args.manager, args.after) for worker in args.workers
        }
        # Not secret, though the manager's result (which holds the join token) is.
        self.node_ids = {
            args.manager.name: pulumi.Output.unsecret(node_id_of(self.manager)),
            **{host: node_id_of(join) for host, join in self.joins.items()},
        }
        self.register_outputs({"join_token": self.join_token, "manager_address": self.manager_address})

    def _create_manager(self, name: str, manager: RemoteHost, after: tuple[pulumi.Resource, ...]) -> RemoteScript:
        return RemoteScript(
            f"{name}-{manager.name}-init",
            label=f"{manager.name}: swarm init",
            connection=manager.connection,
            create=script_call("host/swarm-init.sh", manager.address),
            read=script_call("host/swarm-read.sh"),
            delete=script_call("host/swarm-leave.sh"),
            # The result holds the join token.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(after), additional_secret_outputs=["result"]),
        )

    def _create_worker(
        self, name: str, worker: RemoteHost, manager: RemoteHost, after: tuple[pulumi.Resource, ...]
    ) -> RemoteScript:
        join = RemoteScript(
            f"{name}-{worker.name}-join",
            label=f"{worker.name}: swarm join",
            connection=worker.connection,
            create=script_call("host/swarm-join.sh", f"{manager.address}:2377", worker.address),
            read=script_call("host/swarm-join-read.sh"),
            delete=script_call("host/swarm-leave.sh"),
            stdin=self.join_token,
            # A worker cannot be in two swarms: leave before joining again.
            delete_before_replace=True,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.manager, *after]),
        )
        # Made after the join, so destroyed before the worker leaves: the manager
        # forgets the node instead of listing it as "down" forever. A worker that left behind
        # our back joins again as a new node: the membership is made anew and forgets the node
        # the host was before.
        node_id = node_id_of(join)
        host_script(
            f"{name}-{worker.name}-membership",
            manager.command,
            "host/swarm-node.sh",
            ["prune", worker.address, node_id],
            delete_args=["remove", node_id],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[join]),
        )
        return join
