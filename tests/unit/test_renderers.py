"""The pure renderers: hostfile, ds_config.json, .deepspeed_env, launch argv, address plan.

Files are compared with golden copies in ``golden/``; after an intended change, rewrite
them with ``UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/unit`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from components.config.address_plan import (
    AddressPlanError,
    plan_addresses,
    static_candidates,
)
from components.config import (
    DeepSpeedSettings,
    LabConfig,
    LlamaFactoryWorkload,
    ScriptWorkload,
    load_stack_file,
)
from components.render.deepspeed_env import (
    DeepSpeedEnvError,
    deepspeed_environment,
    render_deepspeed_env,
)
from components.render.ds_config import build_ds_config, render_ds_config
from components.render.hostfile import render_hostfile
from components.render.launch_argv import launch_argv, launch_argv_for, llamafactory_flags

GOLDEN = Path(__file__).parent / "golden"
REPO = Path(__file__).resolve().parents[2]


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} differs from its golden copy"
    )


@pytest.fixture(scope="module")
def dev() -> LabConfig:
    return load_stack_file(REPO / "Pulumi.dev.yaml")


@pytest.fixture(scope="module")
def gpu() -> LabConfig:
    return load_stack_file(REPO / "examples/two-gpu-servers/Pulumi.gpu.yaml")


# --- hostfile ---


def test_the_dev_hostfile_has_one_slot_per_cpu_host(dev: LabConfig) -> None:
    text = render_hostfile(dev.hosts)
    assert_golden("hostfile", text)
    assert text.splitlines() == ["server1 slots=1", "server2 slots=1"], "each CPU host one rank, by its name"


def test_the_hostfile_puts_the_manager_first_so_it_holds_rank_0(dev: LabConfig) -> None:
    reversed_hosts = tuple(reversed(dev.hosts))
    assert render_hostfile(reversed_hosts).splitlines()[0] == "server1 slots=1"


# --- ds_config.json ---


def test_the_default_ds_config_is_the_write_ups_plus_bf16_auto() -> None:
    text = render_ds_config(DeepSpeedSettings())
    assert_golden("ds_config.writeup.json", text)
    config = json.loads(text)
    assert config["fp16"]["enabled"] == "auto"
    assert config["bf16"] == {"enabled": "auto"}, "bf16 auto: the Trainer turns on the one its args ask for"
    assert config["zero_optimization"]["stage"] == 2
    assert config["zero_optimization"]["allgather_bucket_size"] == 500_000_000, (
        "5e8 as an int"
    )
    assert config["zero_optimization"]["overlap_comm"] is False


def test_the_dev_ds_config_has_numbers_and_no_mixed_precision(dev: LabConfig) -> None:
    text = render_ds_config(dev.training.deepspeed)
    assert_golden("ds_config.dev.json", text)
    config = json.loads(text)
    assert "fp16" not in config and "bf16" not in config, "fp32 on CPU"
    assert config["train_batch_size"] == 8


@pytest.mark.parametrize(
    ("precision", "fp16", "bf16"),
    [
        ("fp16", True, None),
        ("bf16", None, True),
        ("auto", "auto", "auto"),
        ("fp32", None, None),
    ],
)
def test_precision_selects_the_mixed_precision_sections(
    precision: str, fp16: object, bf16: object
) -> None:
    config = build_ds_config(DeepSpeedSettings(precision=precision))  # type: ignore[arg-type]
    assert config.get("fp16", {}).get("enabled") == fp16
    assert config.get("bf16", {}).get("enabled") == bf16


# --- .deepspeed_env ---


def test_the_dev_deepspeed_env_names_the_overlay_interface_and_turns_libuv_off(
    dev: LabConfig,
) -> None:
    text = render_deepspeed_env(deepspeed_environment(dev, "eth0", path="/opt/venv/bin:/usr/bin:/bin"))
    assert_golden("deepspeed_env.dev", text)
    env = dict(line.split("=", 1) for line in text.splitlines())
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "eth0", "the overlay's interface"
    assert env["USE_LIBUV"] == "0", "Debian's CPU torch has no libuv"
    assert env["PATH"] == "/opt/venv/bin:/usr/bin:/bin", "non-login shells of remote ranks get the image's venv"


def test_the_gpu_lab_needs_no_libuv_workaround(gpu: LabConfig) -> None:
    assert "USE_LIBUV" not in deepspeed_environment(gpu, "eth0")


def test_deepspeed_env_has_no_blank_lines_even_for_empty_values() -> None:
    text = render_deepspeed_env({"B": "", "A": "1"})
    assert text == "A=1\nB=\n", "a blank line would end DeepSpeed's parsing"


def test_deepspeed_env_rejects_a_value_with_a_newline() -> None:
    with pytest.raises(DeepSpeedEnvError, match="contains a line break"):
        render_deepspeed_env({"X": "a\nb"})


def test_deepspeed_env_rejects_a_bad_name() -> None:
    with pytest.raises(DeepSpeedEnvError, match="not an environment variable name"):
        render_deepspeed_env({"A=B": "1"})


# --- launch argv ---


def test_the_dev_launch_argv_names_the_manager_container_address(
    dev: LabConfig,
) -> None:
    argv = launch_argv_for(dev, "/opt/dslab/hostfile", "/opt/dslab/ds_config.json", dev.address_plan())
    assert argv == [
        "deepspeed",
        "--hostfile",
        "/opt/dslab/hostfile",
        "--master_addr",
        "10.0.3.128",
        "--master_port",
        "29500",
        "/opt/dslab/train_tiny.py",
        "--deepspeed",
        "/opt/dslab/ds_config.json",
        "--steps",
        "20",
        "--output_dir",
        "/opt/dslab/results/@RUN@",  # the run's own directory, named when it starts
    ]


def test_the_gpu_launch_argv_is_the_write_ups_command(gpu: LabConfig) -> None:
    argv = launch_argv_for(gpu, "hostfile", "ds_config.json", gpu.address_plan())
    assert argv[:10] == [
        "deepspeed",
        "--hostfile",
        "hostfile",
        "--master_addr",
        "10.0.3.128",
        "--master_port",
        "29500",
        "/opt/dslab/llamafactory_train.py",
        "--deepspeed",
        "ds_config.json",
    ]
    flags = argv[10:]
    assert flags[flags.index("--model_name_or_path") + 1] == "/models/chatglm2-6b", "the model mount's target"
    assert flags[flags.index("--dataset") + 1] == "alpaca_gpt4_zh"
    assert flags[flags.index("--stage") + 1] == "sft"
    assert flags[flags.index("--learning_rate") + 1] == "5e-05"
    assert flags[flags.index("--fp16") + 1] == "true"


def test_llamafactory_booleans_are_explicit_so_false_can_be_said() -> None:
    assert llamafactory_flags({"do_train": True, "plot_loss": False, "lr": 0.25}) == [
        "--do_train",
        "true",
        "--plot_loss",
        "false",
        "--lr",
        "0.25",
    ]


def test_a_script_can_take_its_config_through_deepspeed_config() -> None:
    workload = ScriptWorkload(
        entrypoint="/t.py", args=("--x",), deepspeed_config_flag="--deepspeed_config"
    )
    argv = launch_argv(
        hostfile_path="h",
        master_addr="10.0.3.128",
        master_port=1,
        workload=workload,
        ds_config_path="d.json",
        launcher_args=["--ssh_port", "2222"],
    )
    assert argv == [
        "deepspeed",
        "--hostfile",
        "h",
        "--master_addr",
        "10.0.3.128",
        "--master_port",
        "1",
        "--ssh_port",
        "2222",
        "/t.py",
        "--deepspeed_config",
        "d.json",
        "--x",
    ]


def test_argv_items_are_never_joined_into_a_shell_string() -> None:
    workload = LlamaFactoryWorkload(args={"dataset": "a b; rm -rf /"})
    argv = launch_argv(
        hostfile_path="h",
        master_addr="a",
        master_port=1,
        workload=workload,
        ds_config_path="d",
    )
    assert "a b; rm -rf /" in argv, "a value with spaces stays one argument"


# --- address plan ---


def test_the_address_plan_skips_requested_addresses_for_the_others() -> None:
    plan = plan_addresses(
        "10.0.3.0/24", [("a", None), ("b", "10.0.3.128"), ("c", None)]
    )
    assert plan.container_addresses == (
        ("a", "10.0.3.129"),
        ("b", "10.0.3.128"),
        ("c", "10.0.3.130"),
    )


def test_the_address_plan_is_deterministic() -> None:
    hosts = [("a", None), ("b", None)]
    assert plan_addresses("10.0.3.0/24", hosts) == plan_addresses("10.0.3.0/24", hosts)


def test_static_candidates_avoid_gateway_broadcast_and_the_dynamic_range() -> None:
    candidates = [
        str(a) for a in static_candidates("10.0.3.0/28", "10.0.3.8/29", "10.0.3.1")
    ]
    assert candidates == [f"10.0.3.{n}" for n in range(2, 8)]


def test_the_address_plan_fails_when_the_subnet_is_full() -> None:
    with pytest.raises(
        AddressPlanError, match="no free static address left for host 'd'"
    ):
        plan_addresses(
            "10.0.3.0/29", [("a", None), ("b", None), ("c", None), ("d", None)]
        )

