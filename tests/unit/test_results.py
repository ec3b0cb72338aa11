"""Where a run's results go (components.render.results): the directory on every host, the name
of a run's inputs, and the command line's output directory."""

from __future__ import annotations

import re
from pathlib import Path

from components.config.loading import load_stack_file
from components.render.launch_argv import launch_argv_for
from components.render.results import RUN_OUTPUT_DIR, host_results_dir, run_key

REPO = Path(__file__).resolve().parents[2]


def test_the_default_results_directory_is_the_stacks_own_and_a_set_one_is_kept() -> None:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    assert host_results_dir(config, "organization/dslab/dev") == "/var/lib/dslab/dev/runs"
    assert host_results_dir(config, "organization/dslab/lab-b") == "/var/lib/dslab/lab-b/runs"
    chosen = config.model_copy(update={"training": config.training.model_copy(update={"results_dir": "/srv/runs"})})
    assert host_results_dir(chosen, "organization/dslab/dev") == "/srv/runs"


def test_the_run_key_names_the_inputs_and_changes_with_any_of_them() -> None:
    key = run_key("deepspeed train.py --steps 20", "{}", "", "server1 slots=1\n")
    assert re.fullmatch(r"[0-9a-f]{12}", key), "12 hex digits in the run directory's name"
    assert key == run_key("deepspeed train.py --steps 20", "{}", "", "server1 slots=1\n"), "the same inputs, the same key"
    assert key != run_key("deepspeed train.py --steps 25", "{}", "", "server1 slots=1\n")
    assert key != run_key("deepspeed train.py --steps 20", "{}", "", "server1 slots=1\nserver2 slots=1\n")
    # The inputs are kept apart: moving text from one to the next is another run.
    assert run_key("ab", "c") != run_key("a", "bc")


def test_the_dev_script_gets_its_runs_directory_with_its_flag() -> None:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    argv = launch_argv_for(config, "/opt/dslab/run/hostfile", "/opt/dslab/run/ds_config.json", config.address_plan())
    assert argv[-2:] == ["--output_dir", RUN_OUTPUT_DIR]
    assert RUN_OUTPUT_DIR == "/opt/dslab/results/@RUN@"
