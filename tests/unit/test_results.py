"""Where a run's results go (components.render.results): the directory on every host, what a
run's name says of its stack, and the command line's output directory."""

from __future__ import annotations

import re
from pathlib import Path

from components.config.loading import load_stack_file
from components.render.launch_argv import launch_argv_for
from components.render.results import RUN_OUTPUT_DIR, emptied_dirs, host_results_dir, run_suffix, stack_tag

REPO = Path(__file__).resolve().parents[2]


def test_the_default_results_directory_is_the_projects_stacks_own_and_a_set_one_is_kept() -> None:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    assert host_results_dir(config, "organization/dslab/dev") == "/var/lib/dslab/dslab/dev/runs"
    assert host_results_dir(config, "organization/dslab/lab-b") == "/var/lib/dslab/dslab/lab-b/runs"
    # Two projects' `dev` stacks keep their runs apart.
    assert host_results_dir(config, "organization/other/dev") == "/var/lib/dslab/other/dev/runs"
    chosen = config.model_copy(update={"training": config.training.model_copy(update={"results_dir": "/srv/runs"})})
    assert host_results_dir(chosen, "organization/dslab/dev") == "/srv/runs"
    assert emptied_dirs(chosen, "organization/dslab/dev") == (), "a directory the user chose stays"
    assert emptied_dirs(config, "organization/dslab/dev") == (
        "/var/lib/dslab/dslab/dev/runs", "/var/lib/dslab/dslab/dev", "/var/lib/dslab/dslab", "/var/lib/dslab"
    )  # fmt: skip


def test_a_runs_name_says_which_stack_made_it() -> None:
    tag = stack_tag("organization/dslab/dev")
    assert re.fullmatch(r"[0-9a-f]{8}", tag)
    assert tag == stack_tag("organization/dslab/dev"), "the same stack, the same tag"
    assert tag != stack_tag("organization/other/dev"), "another project's stack of the same name"
    assert tag != stack_tag("organization/dslab/prod")
    assert run_suffix("organization/dslab/dev", "0123456789ab") == f"{tag}-0123456789ab"


def test_the_dev_script_gets_its_runs_directory_with_its_flag() -> None:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    argv = launch_argv_for(config, "/opt/dslab/run/hostfile", "/opt/dslab/run/ds_config.json", config.address_plan())
    assert argv[-2:] == ["--output_dir", RUN_OUTPUT_DIR]
    assert RUN_OUTPUT_DIR == "/opt/dslab/results/@RUN@"
