"""LocalCopy: a file on the operator's machine whose bytes come from the stack (the loss curve)."""

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
    content_base64: pulumi.Input[str]
    """The file's bytes, base64-encoded; "" for no file."""


def copy_generation(path: Path) -> int:
    """The probe: the generation the copy was written with while it is intact, the next one
    when it was removed or changed (assets/operator/local-copy.sh), read on every preview and up."""
    found = command.local.run(command=shlex.join(["bash", str(SCRIPT), "generation", str(path)]))
    answer = found.stdout.strip()
    return int(answer) if answer.isdigit() else 0


class LocalCopy(pulumi.ComponentResource):
    """Creates a local Command that writes the file (again, in place, when the probe finds it
    removed or edited), and removes it on destroy.

    Outputs:
        path: where the file is; "" when the stack holds no content for it.
    """

    path: pulumi.Output[str]

    def __init__(self, name: str, args: LocalCopyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("LocalCopy"), name, None, opts)
        script = ["bash", str(SCRIPT)]
        self.resource = command.local.Command(
            f"{name}-write",
            create=shlex.join(["env", f"DSLAB_GEN={copy_generation(args.path)}", *script, "write", str(args.path)]),
            delete=shlex.join([*script, "remove", str(args.path)]),
            stdin=args.content_base64,
            logging=command.local.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.path = pulumi.Output.from_input(args.content_base64).apply(lambda content: str(args.path) if content else "")
        self.register_outputs({"path": self.path})
