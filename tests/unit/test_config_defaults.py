"""The configuration's defaults and derived values: what a minimal stack file gets."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import SecretStr, ValidationError

from components.config import (
    CPU_BASE_IMAGE,
    GPU_BASE_IMAGE,
    LLAMAFACTORY_DEFAULT_ARGS,
    Host,
    LlamaFactoryWorkload,
    ScriptWorkload,
    Ulimit,
    load_lab_config,
)


def minimal(**sections: Any) -> dict[str, Any]:
    """The smallest valid configuration: two hosts and an operator key."""
    return {
        "hosts": [
            {"name": "server1", "address": "10.0.18.1", "role": "manager"},
            {"name": "server2", "address": "10.0.18.2"},
        ],
        "operator": {"private_key_path": ".simhosts/operator_ed25519"},
        **sections,
    }


def test_a_minimal_config_gets_the_write_ups_values_as_defaults() -> None:
    config = load_lab_config(minimal())
    assert config.network.name == "test-net", "the write-up's network name"
    assert config.network.subnet == "10.0.3.0/24", (
        "the write-up's containers were in 10.0.3.0/24"
    )
    assert config.container.name == "llm"
    assert (
        config.container.shm_size == "40G" and config.container.shm_size_mb == 40 * 1024
    )
    assert config.container.ulimits == {
        "memlock": Ulimit(soft=-1, hard=-1),
        "stack": Ulimit(soft=67108864, hard=67108864),
    }, "compose's ulimits memlock -1, stack 67108864"
    assert config.container.restart == "always"
    assert config.image.variant == "gpu" and config.image.base_image == GPU_BASE_IMAGE
    assert config.image.python == "3.10"
    assert (
        config.image.distribution == "every-host" and config.image.tag == "dslab/train"
    )
    assert config.operator.known_hosts_path == "~/.ssh/known_hosts"
    training = config.training
    assert training.launch and training.wait and training.master_port == 29500
    assert training.socket_ifname is None, "detected at run time unless overridden"
    assert isinstance(training.workload, LlamaFactoryWorkload)
    assert training.workload.args == LLAMAFACTORY_DEFAULT_ARGS
    ds = training.deepspeed
    assert (ds.zero_stage, ds.precision) == (2, "auto")
    assert ds.allgather_bucket_size == ds.reduce_bucket_size == 500_000_000
    assert not ds.overlap_comm and ds.contiguous_gradients


def test_hosts_default_to_root_on_port_22_as_workers() -> None:
    host = load_lab_config(minimal()).hosts[1]
    assert (host.ssh_user, host.ssh_port, host.role) == ("root", 22, "worker")


def test_gpus_follow_the_image_variant_when_not_given() -> None:
    gpu_lab = load_lab_config(minimal())
    cpu_lab = load_lab_config(minimal(image={"variant": "cpu"}))
    assert [h.gpus for h in gpu_lab.hosts] == ["all", "all"], (
        "a GPU image wants the GPUs"
    )
    assert [h.gpus for h in cpu_lab.hosts] == ["none", "none"], (
        "a CPU lab has none to ask for"
    )


def test_the_cpu_variant_defaults_to_the_labs_debian_image_and_its_own_python() -> None:
    image = load_lab_config(minimal(image={"variant": "cpu"})).image
    assert image.base_image == CPU_BASE_IMAGE == "local/debian:trixie"
    assert image.python is None, "Debian's torch is built for the base image's python3"


@pytest.mark.parametrize(
    ("gpus", "expected_gpus", "expected_slots"),
    [
        ("all", "all", 1),
        ("none", "none", 1),
        (4, 4, 4),
        ("2", 2, 2),
        ([0, 3], ("0", "3"), 2),
    ],
)
def test_slots_default_to_the_gpu_count(
    gpus: Any, expected_gpus: Any, expected_slots: int
) -> None:
    host = Host(name="server1", address="10.0.18.1", gpus=gpus)
    assert host.gpus == expected_gpus
    assert host.slots == expected_slots


def test_explicit_slots_win_over_the_gpu_count() -> None:
    assert Host(name="s", address="10.0.18.1", gpus=8, slots=2).slots == 2


def test_world_size_is_the_sum_of_slots_and_the_manager_comes_first() -> None:
    values = minimal()
    values["hosts"] = [
        {"name": "w1", "address": "10.0.18.2", "gpus": 2},
        {"name": "m", "address": "10.0.18.1", "role": "manager", "gpus": 4},
    ]
    config = load_lab_config(values)
    assert config.world_size == 6
    assert config.manager.name == "m"
    assert [h.name for h in config.hosts_manager_first] == ["m", "w1"]
    assert [h.name for h in config.workers] == ["w1"]


def test_container_addresses_come_from_the_upper_half_of_the_subnet_in_host_order() -> (
    None
):
    plan = load_lab_config(minimal()).address_plan()
    assert plan.container_addresses == (
        ("server1", "10.0.3.128"),
        ("server2", "10.0.3.129"),
    )
    assert (plan.gateway, plan.ip_range) == ("10.0.3.1", "10.0.3.0/25")


def test_llamafactory_args_are_merged_over_the_write_ups_and_null_removes_one() -> None:
    workload = load_lab_config(
        minimal(
            training={
                "workload": {
                    "kind": "llamafactory",
                    "args": {"dataset": "mine", "plot_loss": None},
                }
            }
        )
    ).training.workload
    assert isinstance(workload, LlamaFactoryWorkload)
    assert workload.args["dataset"] == "mine"
    assert "plot_loss" not in workload.args
    assert workload.args["stage"] == "sft", "the other defaults stay"


def test_script_arguments_given_as_yaml_numbers_become_text() -> None:
    workload = load_lab_config(
        minimal(
            training={
                "workload": {
                    "kind": "script",
                    "entrypoint": "/t.py",
                    "args": ["--steps", 20],
                }
            }
        )
    ).training.workload
    assert isinstance(workload, ScriptWorkload)
    assert workload.args == ("--steps", "20")


def test_values_stored_as_strings_by_pulumi_config_set_path_are_accepted() -> None:
    values = minimal(
        training={
            "master_port": "29501",
            "deepspeed": {"zero_stage": "3", "train_batch_size": "auto"},
        }
    )
    values["hosts"][0]["ssh_port"] = "2222"
    config = load_lab_config(values)
    assert config.hosts[0].ssh_port == 2222
    assert config.training.master_port == 29501
    assert config.training.deepspeed.zero_stage == 3


def test_bucket_sizes_accept_the_write_ups_5e8_spelling() -> None:
    ds = load_lab_config(
        minimal(
            training={
                "deepspeed": {
                    "allgather_bucket_size": "5e8",
                    "reduce_bucket_size": 2.5e8,
                }
            }
        )
    ).training.deepspeed
    assert (ds.allgather_bucket_size, ds.reduce_bucket_size) == (
        500_000_000,
        250_000_000,
    )


def test_a_private_key_given_inline_is_kept_secret() -> None:
    values = minimal(operator={"private_key": "-----BEGIN OPENSSH PRIVATE KEY-----"})
    operator = load_lab_config(values).operator
    assert isinstance(operator.private_key, SecretStr)
    assert "BEGIN" not in repr(operator), "the key must never be printed"


def test_the_configuration_is_frozen() -> None:
    config = load_lab_config(minimal())
    with pytest.raises(ValidationError, match="frozen"):
        config.hosts[0].name = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        config.training.deepspeed.zero_stage = 3  # type: ignore[misc]
    with pytest.raises(ValidationError, match="frozen"):
        config.network = config.network  # type: ignore[misc]
    with pytest.raises(AttributeError):
        config.hosts.append(config.hosts[0])  # type: ignore[attr-defined]
    assert config.hosts[0].name == "server1" and config.training.deepspeed.zero_stage == 2, "nothing changed"
