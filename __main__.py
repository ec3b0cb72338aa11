"""Builds the lab described by this stack's `dslab:*` configuration."""

from pathlib import Path

import pulumi

from components.interrupt import end_quietly_on_interrupt
from components.provider_start import start_dynamic_provider

end_quietly_on_interrupt()
start_dynamic_provider()  # first: the provider starts while the imports below are read

from components.command_connection import read_operator_credentials  # noqa: E402
from components.config import load_pulumi_config  # noqa: E402
from components.lab import Lab  # noqa: E402
from components.local_files import require_local_files  # noqa: E402

config = load_pulumi_config()
require_local_files(config, Path.cwd())  # before any host is touched
lab = Lab(
    "lab",
    config,
    project_dir=Path.cwd(),
    owner=f"{pulumi.get_organization()}/{pulumi.get_project()}/{pulumi.get_stack()}",
    credentials=read_operator_credentials(config, Path.cwd()),
)
for name, value in lab.outputs.items():
    pulumi.export(name, value)
