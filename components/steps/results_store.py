"""ResultsStore: the stack's results directory on every host, kept or removed at destroy as the
stack file says then."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import pulumi
import pulumi_command as command

from components.hosts.host_script import host_script, script_text
from components.hosts.remote_host import RemoteHost
from components.naming import component_type
from components.paths import ASSETS_DIR

RESULTS_STEP = "results"
"""The results directory's step, as the hosts' probe names it."""

RELEASE_SCRIPT = ASSETS_DIR / "operator" / "results-release.sh"


@dataclass(frozen=True)
class ResultsStoreArgs:
    hosts: tuple[RemoteHost, ...]
    results_dir: str
    """training.results_dir on every host (components.render.results.host_results_dir)."""
    generations: dict[str, int]
    """Host name -> the generation its step runs with (components.hosts.host_steps): a
    directory found gone or read-only is made again."""
    on_destroy: Literal["keep", "remove"]
    """training.results_on_destroy as this `up` applies it; destroy reads the stack file again."""
    stack_file: str
    """The stack's file, relative to the project directory (`Pulumi.<stack>.yaml`)."""
    destinations: dict[str, str]
    """Host name -> `user@address:port` (components.hosts.engines.ssh_destination)."""
    ssh_options: Mapping[str, tuple[str, ...]]
    """Host name -> the operator's ssh options for it: strict host keys, its jump host
    (components.hosts.engines.operator_ssh_opts)."""
    stack_tag: str
    """What this stack's run names carry (components.render.results.stack_tag): `remove` removes those only."""
    emptied_dirs: tuple[str, ...]
    """Removed when left empty, with `remove` (components.render.results.emptied_dirs)."""
    after: tuple[pulumi.Resource, ...]
    """The host claims: a host that is down or held by another stack is reported there."""


class ResultsStore(pulumi.ComponentResource):
    """Creates, per host, a Command that runs `host/results-dir.sh` to make the results directory
    the containers mount, and a local Command whose delete (`pulumi destroy`, or the host leaving
    the lab) releases it as `training.results_on_destroy` says in the stack file then
    (assets/operator/results-release.sh): `keep` says where every run stays; `remove` removes
    this stack's run directories over ssh (another stack's stay). `pulumi destroy` runs no
    program: the setting's last word is the file's, not the state's. The containers depend on
    the release, so it comes after them.

    Outputs:
        per_host: host name -> its release Command, to depend on.
    """

    def __init__(self, name: str, args: ResultsStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("ResultsStore"), name, None, opts)
        made = {
            host.name: host_script(
                f"{name}-{host.name}",
                host,
                "host/results-dir.sh",
                ["make", args.results_dir],
                delete_args=["forget"],
                generation=args.generations.get(host.name, 0),
                opts=pulumi.ResourceOptions(parent=self, depends_on=list(args.after)),
            )
            for host in args.hosts
        }
        self.per_host = {
            host.name: command.local.Command(
                f"{name}-{host.name}-release",
                delete=shlex.join(
                    ["bash", str(RELEASE_SCRIPT), args.stack_file, args.on_destroy, host.name,
                     args.destinations[host.name], args.results_dir, args.stack_tag, *args.emptied_dirs,
                     "--", *args.ssh_options[host.name]]
                ),  # fmt: skip
                # The host's script, for `remove` to run there.
                stdin=script_text("host/results-dir.sh", host),
                logging=command.local.Logging.STDERR,
                add_previous_output_in_env=False,
                opts=pulumi.ResourceOptions(parent=self, depends_on=[made[host.name]]),
            )
            for host in args.hosts
        }
        self.register_outputs({})
