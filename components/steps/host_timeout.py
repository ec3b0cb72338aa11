"""HostTimeout: how long each host's Docker engine may take to answer our scripts
(`operator.host_timeout`), kept on the host itself."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_command as command

from components.hosts.host_script import host_script
from components.hosts.remote_host import RemoteHost
from components.naming import component_type

HOST_TIMEOUT_STEP = "host-timeout"
"""The step's name, as the hosts' probe and its mark on the host name it."""


@dataclass(frozen=True)
class HostTimeoutArgs:
    hosts: tuple[RemoteHost, ...]
    """Every host, in step order."""
    seconds: int
    """operator.host_timeout."""
    generations: dict[str, int]
    """Host name -> the generation its step runs with (components.hosts.host_steps): a bound
    found gone or other than the stack's is written again."""
    after: tuple[pulumi.Resource, ...]
    """The host claims: a host held by another stack is reported there first."""


class HostTimeout(pulumi.ComponentResource):
    """Creates, per host, a Command that runs `host/host-timeout.sh` to keep the bound in a file
    on the host, which every step's script reads (host/lib/engine-bound.sh) and the providers'
    engine watch too (assets/operator/engine-watch.sh). So the bound is on no other step's
    command line: a new `operator.host_timeout` is one update per host, and nothing else runs.
    Every other step on the host depends on it, so its delete (the file goes) comes last.

    Outputs:
        per_host: host name -> its Command, for the host's other steps to come after.
    """

    def __init__(self, name: str, args: HostTimeoutArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("HostTimeout"), name, None, opts)
        self.per_host: dict[str, command.remote.Command] = {
            host.name: host_script(
                f"{name}-{host.name}",
                host,
                "host/host-timeout.sh",
                ["set", str(args.seconds)],
                delete_args=["forget"],
                generation=args.generations.get(host.name, 0),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
            for host in args.hosts
        }
        self.register_outputs({})
