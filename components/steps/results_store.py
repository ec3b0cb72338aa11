"""ResultsStore: the stack's results directory on every host, kept or removed at destroy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pulumi

from components.hosts.host_script import host_script
from components.hosts.remote_host import RemoteHost
from components.naming import component_type


RESULTS_STEP = "results"
"""The results directory's step, as the hosts' probe names it."""


@dataclass(frozen=True)
class ResultsStoreArgs:
    hosts: tuple[RemoteHost, ...]
    results_dir: str
    """training.results_dir on every host (components.render.results.host_results_dir)."""
    generations: dict[str, int]
    """Host name -> the generation its step runs with (components.hosts.host_steps): a
    directory found gone or read-only is made again."""
    on_destroy: Literal["keep", "remove"]
    """training.results_on_destroy."""
    stack_tag: str
    """What this stack's run names carry (components.render.results.stack_tag): `remove` removes those only."""
    emptied_dirs: tuple[str, ...]
    """Removed when left empty, with `remove` (components.render.results.emptied_dirs)."""
    after: tuple[pulumi.Resource, ...]
    """The host claims: a host that is down or held by another stack is reported there."""


class ResultsStore(pulumi.ComponentResource):
    """Creates, per host, a Command that runs `host/results-dir.sh`: it makes the results
    directory the containers mount, and on delete (`pulumi destroy`, or the host leaving the
    lab) says that every run stays there or, with `remove`, removes this stack's run
    directories (another stack's stay). The containers depend on it, so it is deleted after them. A changed
    `results_on_destroy` updates it in place and removes nothing.

    Outputs:
        per_host: host name -> its Command, to depend on.
    """

    def __init__(self, name: str, args: ResultsStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("ResultsStore"), name, None, opts)
        emptied = args.emptied_dirs if args.on_destroy == "remove" else ()
        self.per_host = {
            host.name: host_script(
                f"{name}-{host.name}",
                host,
                "host/results-dir.sh",
                ["make", args.results_dir],
                delete_args=["release", args.on_destroy, args.results_dir, args.stack_tag, *emptied],
                generation=args.generations.get(host.name, 0),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
            for host in args.hosts
        }
        self.register_outputs({})
