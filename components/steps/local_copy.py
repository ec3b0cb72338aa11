"""LocalCopy: a file on the operator's machine copied from a host (the loss curve), read from the
file itself, so that its bytes never pass through the stack's state."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

import pulumi
import pulumi_command as command

from components.naming import component_type
from components.paths import ASSETS_DIR

SCRIPT = ASSETS_DIR / "operator" / "local-copy.sh"


@dataclass(frozen=True)
class LocalCopyArgs:
    path: Path
    source: pulumi.Input[str]
    """The file on the host; "" for no file (yet)."""
    destination: str
    """The host, `user@address:port` (components.hosts.engines.ssh_destination)."""
    ssh_options: tuple[str, ...]
    """The operator's ssh options for it: strict host keys, its jump host (components.hosts.engines.operator_ssh_opts)."""


def copy_generation(path: Path) -> int:
    """The probe: the generation the copy was written with while it is intact, the next one
    when it was removed or changed (assets/operator/local-copy.sh), read on every preview and up."""
    found = command.local.run(command=shlex.join(["bash", str(SCRIPT), "generation", str(path)]))
    answer = found.stdout.strip()
    return int(answer) if answer.isdigit() else 0


class LocalCopy(pulumi.ComponentResource):
    """Creates a local Command that copies the file over ssh (again, in place, when the source
    changes or the probe finds the copy removed or edited), and removes the copy on destroy.

    Outputs:
        path: where the copy is; "" when there is no source.
    """

    path: pulumi.Output[str]

    def __init__(self, name: str, args: LocalCopyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("LocalCopy"), name, None, opts)
        script = ["bash", str(SCRIPT)]
        generation = copy_generation(args.path)
        self.resource = command.local.Command(
            f"{name}-write",
            create=pulumi.Output.from_input(args.source).apply(
                lambda source: shlex.join(
                    ["env", f"DSLAB_GEN={generation}", *script, "fetch", str(args.path), source, args.destination,
                     "--", *args.ssh_options]
                )  # fmt: skip
            ),
            delete=shlex.join([*script, "remove", str(args.path)]),
            logging=command.local.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.path = pulumi.Output.from_input(args.source).apply(lambda source: str(args.path) if source else "")
        self.register_outputs({"path": self.path})
