"""InputCheck: every host holds the workload's model and datasets before its container starts."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.hosts.remote_host import RemoteHost
from components.naming import component_type
from components.hosts.host_script import host_script


@dataclass(frozen=True)
class InputCheckArgs:
    hosts: tuple[RemoteHost, ...]
    paths: tuple[tuple[str, str], ...]
    """(what it is, path on the host), from components.render.workload_inputs.required_paths."""
    image_tag: str
    """A new image (hence new containers) checks again."""


class InputCheck(pulumi.ComponentResource):
    """Creates, per host, a Command that runs `host/require-paths.sh`: `pulumi up`
    stops before any container is (re)made when a model or dataset directory is missing or
    empty on a host, with one line per problem naming the host and the path. It runs again
    when the paths or the image change.

    Outputs:
        checked: the host names checked.
    """

    checked: pulumi.Output[list[str]]

    def __init__(self, name: str, args: InputCheckArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("InputCheck"), name, None, opts)
        flat = [item for pair in args.paths for item in pair]
        self.per_host = {
            host.name: host_script(
                f"{name}-{host.name}",
                host,
                "host/require-paths.sh",
                [host.name, *flat],
                triggers=[args.image_tag],
                opts=pulumi.ResourceOptions(parent=self),
            )
            for host in args.hosts
        }
        self.checked = pulumi.Output.from_input(list(self.per_host))
        self.register_outputs({"checked": self.checked})
