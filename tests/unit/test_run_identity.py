"""What a run is (components.render.run_identity): what changes its result changes its key;
where it is reached from, how it is watched and where its results go do not."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from components.config.loading import load_stack_file
from components.render.run_files import run_files
from components.render.run_identity import identity_key, identity_text, run_identity, training_argv

REPO = Path(__file__).resolve().parents[2]

ARGV = [
    "deepspeed", "--hostfile", "/opt/dslab/run/hostfile", "--master_addr", "10.0.18.50", "--master_port", "29500",
    "train.py", "--deepspeed_config", "/opt/dslab/run/ds_config.json", "--steps", "20",
]  # fmt: skip


def key(**changes: Any) -> str:
    inputs: dict[str, Any] = {
        "argv": ARGV,
        "ds_config": '{"train_batch_size": 2}',
        "dataset_info": None,
        "hostfile": "server1 slots=1\nserver2 slots=1\n",
        "image": "dslab-train:aaaa",
        "inputs": "e3b0c442",
    }
    return identity_key(run_identity(**(inputs | changes)))


def test_what_changes_the_result_changes_the_key() -> None:
    assert re.fullmatch(r"[0-9a-f]{12}", key())
    assert key() == key(), "the same run, the same key"
    assert key(argv=[*ARGV[:-1], "25"]) != key(), "a training argument"
    assert key(ds_config='{"train_batch_size": 4}') != key(), "the DeepSpeed config"
    assert key(dataset_info='{"alpaca": {}}') != key(), "the datasets registered"
    assert key(hostfile="server1 slots=1\n") != key(), "the ranks"
    assert key(hostfile="server2 slots=1\nserver1 slots=1\n") != key(), "the ranks' order (rank 0 moves)"
    assert key(hostfile="server1 slots=2\nserver2 slots=1\n") != key(), "a host's slots"
    assert key(image="dslab-train:bbbb") != key(), "the image"
    assert key(inputs="5feceb66") != key(), "the model or the dataset files"


def test_where_the_run_is_reached_from_is_not_what_it_is() -> None:
    moved = [value.replace("10.0.18.50", "10.0.18.60").replace("29500", "29511") for value in ARGV]
    assert key(argv=moved) == key(), "the master's address and port"
    with_ssh_port = [*ARGV[:7], "--ssh_port", "2222", *ARGV[7:]]
    assert key(argv=with_ssh_port) == key(), "the containers' ssh port"
    assert training_argv(with_ssh_port) == [a for a in ARGV if a not in ("--master_addr", "10.0.18.50", "--master_port", "29500")]


def test_how_a_run_is_watched_and_where_its_results_go_are_not_in_it() -> None:
    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    training = config.training

    def identity_of(**changes: Any) -> str:
        changed = config.model_copy(update={"training": training.model_copy(update=changes)})
        files = run_files(changed, changed.address_plan())
        return identity_key(
            run_identity(
                argv=files.argv, ds_config=files.ds_config, dataset_info=files.dataset_info,
                hostfile=files.hostfile, image="dslab-train:aaaa", inputs="",
            )
        )  # fmt: skip

    same = identity_of()
    assert identity_of(wait=not training.wait) == same
    assert identity_of(stall_timeout=training.stall_timeout + 60) == same
    assert identity_of(resume="never") == same
    assert identity_of(results_dir="/srv/elsewhere") == same
    assert identity_of(results_on_destroy="remove") == same
    assert identity_of(master_port=training.master_port + 1) == same


def test_the_identity_is_one_json_line_kept_in_the_runs_directory() -> None:
    identity = run_identity(
        argv=ARGV, ds_config="{}", dataset_info=None, hostfile="server1 slots=1\n", image="dslab-train:aaaa", inputs="ab"
    )
    text = identity_text(identity)
    assert "\n" not in text
    assert json.loads(text) == identity
    assert identity["argv"][0] == "deepspeed" and "--master_port" not in identity["argv"]
