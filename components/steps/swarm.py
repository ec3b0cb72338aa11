"""Swarm: the manager's `docker swarm init` and every worker's join, over SSH."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_command as command

from components.hosts.remote_host import RemoteHost
from components.hosts.host_script import host_script
from components.hosts.step_result import step_result
from components.naming import component_type


@dataclass(frozen=True)
class SwarmArgs:
    manager: RemoteHost
    workers: tuple[RemoteHost, ...]
    generations: dict[str, int]
    """Host name -> the generation its swarm step runs with (components.hosts.probe)."""
    known_nodes: dict[str, str]
    """Host name -> the node id it already has in this swarm (components.hosts.probe): known to
    the preview, so a container labelled with it does not show as replaced."""
    after: tuple[pulumi.Resource, ...] = ()
    """What must exist before any host is touched (the host claims)."""


SWARM_STEP = "swarm"


def node_id_of(member: command.remote.Command) -> pulumi.Output[str]:
    """The swarm node id that swarm-manager.sh or swarm-worker.sh printed."""
    return member.stdout.apply(lambda stdout: str(step_result(stdout, "the swarm step", ["node_id"])["node_id"]))


class Swarm(pulumi.ComponentResource):
    """Creates a Command for the manager's init and, per worker, one for its join (the hosts'
    probe sees a host that left the swarm, and the next `up` runs the step again), and a Command
    on the manager that forgets the node when the worker is removed, or the node it was before
    it joined again.

    Outputs:
        join_token: the worker join token (secret).
        joins: per worker name, its join resource (containers on it depend on it).
        node_ids: per host name, its swarm node id (a host that joins again gets a new one).
    """

    join_token: pulumi.Output[str]

    def __init__(self, name: str, args: SwarmArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("Swarm"), name, None, opts)
        self.manager = self._create_manager(name, args)
        self.join_token = pulumi.Output.secret(self.manager.stdout.apply(
                lambda stdout: str(step_result(stdout, "swarm-manager.sh", ["join_token"])["join_token"])
            ))
        # Not secret, though the manager's result (which holds the join token) is. The same id
        # the step prints, where the hosts' probe already found it.
        manager_node = self._known(args, args.manager.name, pulumi.Output.unsecret(node_id_of(self.manager)))
        self.joins = {worker.name: self._create_worker(name, worker, manager_node, args) for worker in args.workers}
        self.node_ids = {args.manager.name: manager_node} | {
            host: self._known(args, host, node_id_of(join)) for host, join in self.joins.items()
        }
        self.register_outputs({"join_token": self.join_token})

    def _create_manager(self, name: str, args: SwarmArgs) -> command.remote.Command:
        manager = args.manager
        return host_script(
            f"{name}-{manager.name}-init",
            manager,
            "host/swarm-manager.sh",
            ["init", manager.address],
            delete_args=["leave"],
            generation=args.generations.get(manager.name, 0),
            # Its result holds the join token.
            opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after), additional_secret_outputs=["stdout"]),
        )

    @staticmethod
    def _known(args: SwarmArgs, host: str, made: pulumi.Output[str]) -> pulumi.Output[str]:
        return pulumi.Output.from_input(args.known_nodes[host]) if host in args.known_nodes else made

    def _create_worker(
        self, name: str, worker: RemoteHost, manager_node: pulumi.Output[str], args: SwarmArgs
    ) -> command.remote.Command:
        manager = args.manager
        # The manager's node too: a manager made anew at the same address (its machine
        # reinstalled) is another swarm, which every worker joins again.
        join = host_script(
            f"{name}-{worker.name}-join",
            worker,
            "host/swarm-worker.sh",
            ["join", f"{manager.address}:2377", worker.address, manager_node],
            delete_args=["leave"],
            data=self.join_token,
            generation=args.generations.get(worker.name, 0),
            # A worker cannot be in two swarms: leave before joining again.
            opts=pulumi.ResourceOptions(parent=self, depends_on=[self.manager, *args.after], delete_before_replace=True),
        )
        # Made after the join, so destroyed before the worker leaves: the manager
        # forgets the node instead of listing it as "down" forever. A worker that left behind
        # our back joins again as a new node: the membership then forgets the node the host
        # was before.
        node_id = node_id_of(join)
        host_script(
            f"{name}-{worker.name}-membership",
            manager,
            "host/swarm-node.sh",
            ["prune", worker.address, node_id],
            delete_args=["remove", node_id],
            opts=pulumi.ResourceOptions(parent=self, depends_on=[join]),
        )
        return join
