"""``python -m components.validate`` on stack files, run as the user runs it, plus the loaders."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any
from pathlib import Path

import pytest
import yaml
from pydantic import SecretStr

from components.config import LabConfigError, load_pulumi_config, load_stack_file
from tests.support.validate_cli import run_validate

REPO = Path(__file__).resolve().parents[2]




def write_stack(tmp_path: Path, config: Mapping[str, Any]) -> Path:
    path = tmp_path / "Pulumi.test.yaml"
    path.write_text(yaml.safe_dump({"encryptionsalt": "v1:abc", "config": config}))
    return path


GOOD: dict[str, Any] = {
    "dslab:hosts": [
        {"name": "server1", "address": "10.0.18.1", "role": "manager"},
        {"name": "server2", "address": "10.0.18.2"},
    ],
    "dslab:operator": {"private_key": {"secure": "v1:c2VjcmV0"}},
}


def test_the_dev_stack_is_valid_and_summarised() -> None:
    result = run_validate(REPO / "Pulumi.dev.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].endswith("Pulumi.dev.yaml: valid")
    assert any(
        line.split()[:3] == ["server1", "manager", "root@10.0.18.1:22"]
        and "10.0.3.128" in line
        for line in lines
    ), "the summary shows each host's role, address and container address"
    assert "world size: 2" in lines
    assert any(line.startswith("image: cpu") for line in lines)
    assert any(
        line.startswith("training: script /opt/dslab/train_tiny.py") for line in lines
    )


def test_the_gpu_example_mirroring_the_write_up_is_valid() -> None:
    result = run_validate(REPO / "examples/two-gpu-servers/Pulumi.gpu.yaml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "training: llamafactory sft of /models/chatglm2-6b" in result.stdout, "the model mount names the model"


def test_a_bad_stack_file_prints_every_problem_and_exits_1(tmp_path: Path) -> None:
    config = json.loads(json.dumps(GOOD))
    config["dslab:hosts"][1].update(address="10.0.18.300", role="manager")
    config["dslab:network"] = {"subnet": "10.0.3.0/33"}
    path = write_stack(tmp_path, config)
    result = run_validate(path)
    assert result.returncode == 1
    heading, *problems = result.stdout.splitlines()
    assert heading == f"{path}: 2 problems in the stack configuration:"
    assert len(problems) == 2 and problems[0].startswith(
        "  dslab:hosts[1].address: '10.0.18.300' is not an IPv4 address"
    )
    assert problems[1].startswith("  dslab:network.subnet: '10.0.3.0/33' is not an IPv4 subnet")


def test_a_missing_file_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    result = run_validate(tmp_path / "Pulumi.nope.yaml")
    assert result.returncode == 1
    assert "cannot be read" in result.stdout and "Traceback" not in result.stderr


def test_an_encrypted_private_key_passes_file_validation(tmp_path: Path) -> None:
    config = load_stack_file(write_stack(tmp_path, GOOD))
    assert config.operator.private_key_is_encrypted


def test_keys_without_a_namespace_belong_to_the_project(tmp_path: Path) -> None:
    config = {key.removeprefix("dslab:"): value for key, value in GOOD.items()}
    assert len(load_stack_file(write_stack(tmp_path, config)).hosts) == 2


def test_other_namespaces_are_left_to_their_providers(tmp_path: Path) -> None:
    config = {**GOOD, "docker:host": "unix:///var/run/docker.sock"}
    assert load_stack_file(write_stack(tmp_path, config)).manager.name == "server1"


def test_a_misspelled_namespace_is_reported(tmp_path: Path) -> None:
    config = {**GOOD, "dslb:network": {"name": "x"}}
    with pytest.raises(LabConfigError) as caught:
        load_stack_file(write_stack(tmp_path, config))
    assert caught.value.problems == [
        "dslb:network: unknown namespace 'dslb'; did you mean 'dslab:network'?"
    ]


def test_invalid_yaml_is_reported_with_its_position(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.bad.yaml"
    path.write_text("config:\n  dslab:hosts: [\n")
    with pytest.raises(LabConfigError, match="is not valid YAML"):
        load_stack_file(path)


@pytest.fixture
def pulumi_config() -> Iterator[dict[str, str]]:
    """The runtime's config map, restored afterwards."""
    from pulumi.runtime import config as runtime_config

    previous = runtime_config.CONFIG.get()
    values: dict[str, str] = {}
    runtime_config.CONFIG.set(values)
    yield values
    runtime_config.CONFIG.set(previous)


def test_the_live_loader_reads_structured_values_as_the_engine_passes_them(
    pulumi_config: dict[str, str],
) -> None:
    pulumi_config.update({key: json.dumps(value) for key, value in GOOD.items()})
    pulumi_config["dslab:operator"] = json.dumps({"private_key": "decrypted key text"})
    pulumi_config["pulumi:tags"] = "{}"
    config = load_pulumi_config()
    assert config.manager.address == "10.0.18.1"
    assert isinstance(config.operator.private_key, SecretStr), (
        "secret text never prints"
    )
    assert config.operator.private_key.get_secret_value() == "decrypted key text"


def test_the_live_loader_rejects_a_plain_string_where_a_section_belongs(
    pulumi_config: dict[str, str],
) -> None:
    pulumi_config["dslab:network"] = "test-net"
    with pytest.raises(LabConfigError) as caught:
        load_pulumi_config()
    assert caught.value.problems == [
        "dslab:network: 'test-net' is not a structured value; set its fields with "
        "pulumi config set --path 'network.<field>' <value>"
    ]


def test_auto_batch_values_with_a_plain_script_draw_a_warning(tmp_path: Path) -> None:
    config = {
        **GOOD,
        "dslab:training": {"workload": {"kind": "script", "entrypoint": "/t.py"}},
    }
    result = run_validate(write_stack(tmp_path, config))
    assert result.returncode == 0, "a warning is not an error"
    assert (
        "warning: training.deepspeed: train_batch_size, train_micro_batch_size_per_gpu, "
        'gradient_accumulation_steps, gradient_clipping, precision are "auto", which only the '
        "Hugging Face Trainer integration fills in; a script calling deepspeed.initialize "
        "itself needs numbers"
    ) in result.stdout
