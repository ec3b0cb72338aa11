"""The LLaMA-Factory workload: its launch argv, dataset_info.json, .deepspeed_env, mounts and
input check, for the tiny CPU run proven in the image (2 ranks, ZeRO-2, fp32, LoRA SFT).

Golden files are in ``golden/``; rewrite them with ``UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.config import LabConfig, LabConfigError, load_lab_config, strip_namespace
from components.render.container_spec import container_spec, docker_run_args
from components.render.dataset_info import render_dataset_info
from components.render.deepspeed_env import deepspeed_environment, render_deepspeed_env
from components.render.launch_argv import launch_argv_for
from components.paths import ASSETS_DIR
from components.render.workload_inputs import required_paths
from tests.support.tiny_llamafactory import TINY_LORA_SFT

REPO = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden"
REQUIRE_PATHS = ASSETS_DIR / "host" / "require-paths.sh"

TINY_WORKLOAD: dict[str, Any] = TINY_LORA_SFT


def assert_golden(name: str, text: str) -> None:
    import os

    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden copy"


def dev_values() -> dict[str, Any]:
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, problems = strip_namespace(document["config"])
    assert not problems
    return values


def tiny_lab(**workload_changes: Any) -> LabConfig:
    """The dev lab (cpu, two hosts) running the tiny LLaMA-Factory workload."""
    values = dev_values()
    values["image"] = {**values["image"], "llamafactory": "0.9.4"}
    values["training"] = {
        "workload": {**TINY_WORKLOAD, **workload_changes},
        "deepspeed": {"zero_stage": 2, "precision": "fp32"},
    }
    return load_lab_config(values)


def problems_of(**workload_changes: Any) -> list[str]:
    with pytest.raises(LabConfigError) as caught:
        tiny_lab(**workload_changes)
    return caught.value.problems


# --- what the run gets --------------------------------------------------------------------


def test_the_launch_argv_is_the_proven_one_with_the_images_entry_point() -> None:
    argv = launch_argv_for(tiny_lab(), "/opt/dslab/run/hostfile", "/opt/dslab/run/ds_config.json", tiny_lab().address_plan())
    assert_golden("launch_argv.llamafactory-tiny.txt", "\n".join(argv) + "\n")
    assert argv[:7] == [
        "deepspeed", "--hostfile", "/opt/dslab/run/hostfile", "--master_addr", "10.0.3.128", "--master_port", "29500",
    ], "the manager's overlay address"  # fmt: skip
    assert argv[7] == "/opt/dslab/llamafactory_train.py", "a file path: the launcher prepends --local_rank"
    assert argv[8:10] == ["--deepspeed", "/opt/dslab/run/ds_config.json"]
    flags = dict(zip(argv[10::2], argv[11::2], strict=True))
    for name, value in TINY_WORKLOAD["args"].items():
        if value is None:
            assert f"--{name}" not in flags, f"null removes the write-up's {name}"
        else:
            assert flags[f"--{name}"] == str(value), name
    assert flags["--stage"] == "sft" and flags["--finetuning_type"] == "lora", "the write-up's LoRA SFT"
    assert flags["--output_dir"] == "/opt/dslab/results/@RUN@", "the run's own directory"


def test_the_model_and_dataset_fill_their_arguments_unless_given() -> None:
    args = tiny_lab().training.workload.args
    assert args["model_name_or_path"] == "/models/tiny-llama", "the model mount's target"
    assert args["dataset"] == "tiny_alpaca", "every registered dataset"
    given = tiny_lab(args={**TINY_WORKLOAD["args"], "model_name_or_path": "/elsewhere"}).training.workload.args
    assert given["model_name_or_path"] == "/elsewhere", "an explicit argument wins"


def test_the_dataset_dir_is_the_run_directory_where_dataset_info_json_is_placed() -> None:
    argv = launch_argv_for(tiny_lab(), "/opt/dslab/run/hostfile", "/opt/dslab/run/ds_config.json", tiny_lab().address_plan())
    assert argv[argv.index("--dataset_dir") + 1] == "/opt/dslab/run", "beside ds_config.json"


def test_dataset_info_names_each_file_by_its_path_in_the_container() -> None:
    text = render_dataset_info(tiny_lab().training.workload)  # type: ignore[arg-type]
    assert text is not None
    assert_golden("dataset_info.llamafactory-tiny.json", text)
    assert json.loads(text)["tiny_alpaca"]["file_name"] == "/datasets/tiny_alpaca.json"


def test_columns_are_passed_on_as_given() -> None:
    lab = tiny_lab(datasets={"d": {"file_name": "/data/d.json", "columns": {"prompt": "q", "response": "a"}}})
    text = render_dataset_info(lab.training.workload)  # type: ignore[arg-type]
    assert text is not None and json.loads(text) == {
        "d": {"file_name": "/data/d.json", "formatting": "alpaca", "columns": {"prompt": "q", "response": "a"}}
    }


def test_without_datasets_no_dataset_info_is_made() -> None:
    workload = {**TINY_WORKLOAD, "datasets": {}, "args": {**TINY_WORKLOAD["args"], "dataset": "x", "dataset_dir": "/d"}}
    values = dev_values()
    values["training"] = {"workload": workload, "deepspeed": {"precision": "fp32"}}
    assert render_dataset_info(load_lab_config(values).training.workload) is None  # type: ignore[arg-type]


def env_lines(text: str) -> dict[str, str]:
    """``.deepspeed_env`` as the launcher reads it: one ``KEY=VALUE`` a line, split at the first ``=``."""
    return dict(line.split("=", 1) for line in text.splitlines())


def test_every_rank_runs_offline() -> None:
    text = render_deepspeed_env(deepspeed_environment(tiny_lab(), "eth0", path="/opt/venv/bin:/usr/bin:/bin"))
    assert_golden("deepspeed_env.llamafactory-tiny", text)
    env = env_lines(text)
    assert {key: env.get(key) for key in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE")} == {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }, "no rank asks the Hub for the model or the datasets"
    assert env.get("DISABLE_VERSION_CHECK") == "1", "LLaMA-Factory 0.9.4 would refuse the image's DeepSpeed"
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "eth0"


def test_the_model_and_dataset_are_mounted_in_every_container() -> None:
    lab = tiny_lab()
    for host in lab.hosts:
        args = docker_run_args(container_spec(lab, host, "dslab/train:x", "o/p/s", lab.address_plan()))
        volumes = [args[i + 1] for i, arg in enumerate(args) if arg == "--volume"]
        assert "/srv/dslab/models/tiny-llama:/models/tiny-llama:ro" in volumes
        assert "/srv/dslab/datasets:/datasets:ro" in volumes


# --- configuration errors -------------------------------------------------------------------


def test_a_relative_dataset_file_needs_a_dataset_dir() -> None:
    assert problems_of(dataset_dir=None) == [
        "dslab:training.workload.datasets.tiny_alpaca.file_name: 'tiny_alpaca.json' is relative, but "
        "there is no dataset_dir to start from; set dataset_dir: {source: /srv/datasets, target: "
        "/datasets}, or give an absolute path in the container"
    ]


def test_a_dataset_that_is_not_registered_is_named() -> None:
    assert problems_of(args={**TINY_WORKLOAD["args"], "dataset": "tiny_alpaca,other"}) == [
        "dslab:training.workload.args.dataset: 'other' is not one of datasets (tiny_alpaca); register "
        "it under datasets, or use e.g. dataset: tiny_alpaca"
    ]


def test_an_own_dataset_dir_cannot_hide_the_generated_one() -> None:
    (problem,) = problems_of(args={**TINY_WORKLOAD["args"], "dataset_dir": "data"})
    assert problem.startswith("dslab:training.workload.args.dataset_dir: 'data' would hide the dataset_info.json")


def test_llamafactory_on_python_3_10_is_refused_with_the_fix() -> None:
    values = dev_values()
    values["image"] = {"variant": "gpu", "python": "3.10", "llamafactory": "0.9.4"}
    with pytest.raises(LabConfigError) as caught:
        load_lab_config(values)
    assert caught.value.problems == [
        "dslab:image.python: '3.10' is too old for llamafactory 0.9.4, which needs Python 3.11 or "
        'later; set python: "3.11"'
    ]


def test_an_unknown_llamafactory_release_is_refused() -> None:
    values = dev_values()
    values["image"] = {**values["image"], "llamafactory": "0.9.5"}
    with pytest.raises(LabConfigError) as caught:
        load_lab_config(values)
    assert caught.value.problems == ["dslab:image.llamafactory: '0.9.5' is not allowed; expected one of '0.9.4'"]


# --- the host-side check --------------------------------------------------------------------


def test_every_host_checks_the_model_the_dataset_dir_and_each_dataset() -> None:
    assert required_paths(tiny_lab()) == [
        ("model directory (training.workload.model.source)", "/srv/dslab/models/tiny-llama"),
        ("dataset directory (training.workload.dataset_dir.source)", "/srv/dslab/datasets"),
        ("dataset tiny_alpaca (training.workload.datasets.tiny_alpaca.file_name)", "/srv/dslab/datasets/tiny_alpaca.json"),
    ]


def run_check(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REQUIRE_PATHS), *args], capture_output=True, text=True, check=False)


def test_the_check_names_the_host_and_each_missing_or_empty_path(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = run_check("server2", "model directory", str(tmp_path / "model"), "dataset directory", str(tmp_path / "empty"))
    assert result.returncode == 1, "up stops before the container is made"
    assert result.stderr.splitlines() == [
        f"server2: the model directory {tmp_path}/model does not exist; copy it there on every host",
        f"server2: the dataset directory {tmp_path}/empty is empty; copy it there on every host",
    ]


def test_the_check_passes_when_everything_is_there(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    result = run_check("server1", "model directory", str(tmp_path / "model"), "dataset", str(tmp_path / "model" / "config.json"))
    assert result.returncode == 0, result.stderr
