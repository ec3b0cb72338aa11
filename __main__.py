"""Builds the lab described by this stack's `dslab:*` configuration."""

from pathlib import Path

import pulumi

from components.hosts.credentials import read_operator_credentials
from components.config import load_pulumi_config
from components.interrupt import end_quietly_on_interrupt
from components.lab import Lab
from components.hosts.operator_files import require_local_files

end_quietly_on_interrupt()

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
