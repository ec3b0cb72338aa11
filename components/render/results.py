"""Where a training run's results live (pure): one directory per run on every host, under the
stack's results directory, mounted into every container. The run's name is chosen on the
manager when the run starts (`<UTC time>-<inputs key>`, assets/host/deepspeed-launch.sh), so
the command line holds a token in its place."""

from __future__ import annotations

import hashlib

from components.config import LabConfig

RESULTS_MOUNT = "/opt/dslab/results"
"""The results directory inside every container."""

RUN_NAME_TOKEN = "@RUN@"
"""Stands for the run's name in the command line; deepspeed-launch.sh puts the name in."""

RUN_OUTPUT_DIR = f"{RESULTS_MOUNT}/{RUN_NAME_TOKEN}"
"""The run's directory in the containers: LLaMA-Factory's output_dir, a script's output flag."""


def default_results_dir(project: str, stack: str) -> str:
    """`/var/lib/dslab/<project>/<stack>/runs`: two projects' stacks of the same name keep their
    runs apart."""
    return f"/var/lib/dslab/{project}/{stack}/runs"


def host_results_dir(config: LabConfig, owner: str) -> str:
    """`training.results_dir`, or the default for the stack OWNER (`<organization>/<project>/<stack>`):
    on every host."""
    _, project, stack = owner.split("/")
    return config.training.results_dir or default_results_dir(project, stack)


def emptied_dirs(config: LabConfig, owner: str) -> tuple[str, ...]:
    """What `training.results_on_destroy: remove` also removes when left empty: the default
    results directory and its parents up to /var/lib/dslab; a directory the user chose stays."""
    if config.training.results_dir:
        return ()
    runs = host_results_dir(config, owner)
    stack_dir = runs.rsplit("/", 1)[0]
    project_dir = stack_dir.rsplit("/", 1)[0]
    return (runs, stack_dir, project_dir, project_dir.rsplit("/", 1)[0])


def stack_tag(owner: str) -> str:
    """What a run's name says of the stack that made it (`<organization>/<project>/<stack>`):
    8 hex digits. A stack resumes and removes only the runs that carry its own."""
    return hashlib.sha256(owner.encode()).hexdigest()[:8]


def run_suffix(owner: str, key: str) -> str:
    """The end of a run's name, `<stack tag>-<inputs key>`, after the UTC time it started
    (assets/host/deepspeed-launch.sh): the last run with this suffix is the one to resume."""
    return f"{stack_tag(owner)}-{key}"
