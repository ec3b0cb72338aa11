"""bench/gpu_check.py's rendering half, here without a GPU: what it runs on a GPU machine is what
the program places in the manager container for the same stack (only the hostfile, and the
launcher's ssh check, differ), laid out where the container has it; and the figures it reads
back from a run's files.

Golden files are in ``golden/``; rewrite them with ``UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations


import json
import os
from pathlib import Path
from typing import Any

import pulumi
import pytest

from bench import gpu_check
from components.config import LabConfig, LlamaFactoryWorkload, load_stack_file
from components.paths import ASSETS_DIR
from components.render.run_files import RunFiles, run_deepspeed_env, run_files
from tests.support.credentials import unit_credentials
from harness.pulumi_cli import REPO
from tests.support.recording_mocks import RecordingMocks, launch_call, placed_files

STACK = REPO / "bench" / "gpu-check.yaml"
GOLDEN = Path(__file__).parent / "golden"


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden copy"


def gpu_stack() -> LabConfig:
    return load_stack_file(STACK)


def local_files(gpus: int = 8) -> RunFiles:
    return gpu_check.local_run_files(run_files(gpu_stack(), gpu_stack().address_plan()), gpus)


def after_dashes(args: list[str]) -> list[str]:
    return args[args.index("--") + 1 :]


# --- the stack and what the program renders for it -----------------------------------------


def test_the_check_stack_is_the_write_ups_fp16_zero2_lora_sft_on_the_gpu_image() -> None:
    config = gpu_stack()
    workload = config.training.workload
    assert config.image.variant == "gpu" and config.image.llamafactory == "0.9.4"
    assert isinstance(workload, LlamaFactoryWorkload)
    assert workload.args["fp16"] is True and workload.args["finetuning_type"] == "lora"
    ds_config = json.loads(run_files(config, config.address_plan()).ds_config)
    assert ds_config["fp16"]["enabled"] == "auto", "the write-up's fp16 auto, filled in from --fp16 true"
    assert ds_config["zero_optimization"]["stage"] == 2


def test_the_gpu_runs_argv_and_rank_environment_are_golden() -> None:
    files = run_files(gpu_stack(), gpu_stack().address_plan())
    env_text = run_deepspeed_env(gpu_stack(), "eth0")
    assert_golden("launch_argv.gpu-check.txt", "\n".join(files.argv) + "\n")
    assert_golden("preflight_argv.gpu-check.txt", "\n".join(files.preflight_argv) + "\n")
    assert_golden("deepspeed_env.gpu-check", env_text)
    rendezvous = ("deepspeed", "--hostfile", "/opt/dslab/run/hostfile", "--master_addr", "10.0.3.128", "--master_port", "29500")
    assert files.argv[:10] == (*rendezvous, "/opt/dslab/llamafactory_train.py", "--deepspeed", "/opt/dslab/run/ds_config.json")
    flags = dict(zip(files.argv[10::2], files.argv[11::2], strict=True))
    assert flags["--fp16"] == "true"
    assert (flags["--stage"], flags["--finetuning_type"], flags["--max_steps"]) == ("sft", "lora", "60")
    assert flags["--model_name_or_path"] == "/models/tiny-llama" and flags["--dataset"] == "tiny_alpaca"
    assert flags["--output_dir"] == "/opt/dslab/results/@RUN@"
    assert files.preflight_argv[:8] == (*rendezvous, "/opt/dslab/allreduce_bench.py"), "the same launcher as training"
    pre = files.preflight_argv[8:]
    assert pre[pre.index("--sizes-mb") + 1] == "1,16,64,256,1024", "the stack's preflight.sizes_mb"
    env = dict(line.split("=", 1) for line in env_text.splitlines())
    assert env["NCCL_SOCKET_IFNAME"] == env["GLOO_SOCKET_IFNAME"] == "eth0"
    assert env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1", "offline ranks"
    assert env["DISABLE_VERSION_CHECK"] == "1"
    assert env["PATH"].startswith("/opt/venv/bin:"), "the image's venv first"
    assert "USE_LIBUV" not in env, "the CPU image's workaround only"


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = RecordingMocks()
    pulumi.runtime.set_mocks(recording, project="dslab", stack="gpu", preview=False)
    return recording


@pulumi.runtime.test
def test_what_the_check_runs_is_what_the_program_places_in_the_manager_container_but_the_hostfile(
    mocks: RecordingMocks,
) -> Any:
    from components.lab import Lab

    config = gpu_stack()
    lab = Lab("lab", config, project_dir=REPO, owner="organization/dslab/gpu", credentials=unit_credentials(config))
    assert lab.launch is not None
    local = local_files(gpus=8)

    def check(_: Any) -> None:
        placed = placed_files(mocks.resources["lab-training-gpu1-files"])
        launch = launch_call(mocks.resources["lab-training-run"])
        assert placed["/opt/dslab/run/ds_config.json"] == local.ds_config
        assert placed["/opt/dslab/run/dataset_info.json"] == local.dataset_info
        # The mock container found its overlay interface as eth0; the GPU machine's is found the same way.
        assert placed["/root/.deepspeed_env"] == run_deepspeed_env(config, "eth0")
        program_argv = launch.argv
        program_preflight = after_dashes(launch.preflight)
        named_argv = [word.replace("@RUN@", "gpu-check") for word in program_argv[1:]]
        assert local.argv == ("deepspeed", "--no_ssh_check", *named_argv), "the run's name put in"
        assert local.preflight_argv == ("deepspeed", "--no_ssh_check", *program_preflight[1:])
        assert placed["/opt/dslab/run/hostfile"] == "gpu1 slots=1\n"
        assert local.hostfile == "localhost slots=8\n", "this machine, one rank per GPU"

    return pulumi.Output.all(lab.container_ips, lab.launch.status, lab.launch.resource.urn).apply(check)


# --- on the GPU machine -------------------------------------------------------------------------


def test_the_files_land_where_the_manager_container_has_them(tmp_path: Path) -> None:
    config, local = gpu_stack(), local_files(gpus=2)
    env = run_deepspeed_env(config, "lo")
    gpu_check.lay_out(tmp_path, config, local, env, venv="/opt/torch/.venv")

    run = tmp_path / "opt/dslab/run"
    assert (run / "hostfile").read_text() == "localhost slots=2\n"
    assert (run / "ds_config.json").read_text() == local.ds_config
    assert (run / "dataset_info.json").read_text() == local.dataset_info
    assert (tmp_path / "root/.deepspeed_env").read_text() == env, "where the launcher and deepspeed-env.sh read it"
    for entry_point in ("/opt/dslab/llamafactory_train.py", "/opt/dslab/allreduce_bench.py"):
        assert entry_point in local.argv + local.preflight_argv
        placed = gpu_check.under(tmp_path, entry_point)
        assert placed.read_bytes() == (ASSETS_DIR / placed.name).read_bytes() and os.access(placed, os.X_OK)
    assert (tmp_path / "opt/dslab/deepspeed-env.sh").exists(), "the container scripts come along"
    assert os.readlink(tmp_path / "opt/venv") == str(tmp_path / "opt/torch/.venv"), "the image's venv"
    model = tmp_path / "models/tiny-llama"
    assert model.is_symlink() and model.resolve() == (tmp_path / "srv/dslab/models/tiny-llama").resolve()
    assert (tmp_path / "datasets").resolve() == (tmp_path / "srv/dslab/datasets").resolve()


def test_a_path_that_is_not_the_mounts_link_is_left_alone(tmp_path: Path) -> None:
    (tmp_path / "datasets").mkdir()
    with pytest.raises(SystemExit, match="datasets exists and is not a link"):
        gpu_check.lay_out(tmp_path, gpu_stack(), local_files(), "", venv="/v")


def test_the_record_holds_the_command_lines_exactly(tmp_path: Path) -> None:
    config, local = gpu_stack(), local_files()
    gpu_check.record(tmp_path, config, local, "A=1\n", ["a deviation"])
    assert (tmp_path / "train.argv").read_text().split("\0")[:-1] == list(local.argv)
    assert (tmp_path / "preflight.argv").read_text().split("\0")[:-1] == list(local.preflight_argv)
    assert (tmp_path / "workdir").read_text() == "/opt/dslab\n"
    assert (tmp_path / "output_dir").read_text() == "/opt/dslab/results/gpu-check\n"
    assert (tmp_path / "loss_plot").read_text() == "/opt/dslab/results/gpu-check/training_loss.png\n"
    assert (tmp_path / "deviations.txt").read_text() == "a deviation\n"


def test_without_the_managers_address_the_launchers_rendezvous_on_loopback() -> None:
    argv = gpu_check.with_master_addr(local_files().argv, "127.0.0.1")
    assert argv[argv.index("--master_addr") + 1] == "127.0.0.1"
    assert len(argv) == len(local_files().argv)


def test_a_cpu_stack_is_refused_before_anything_changes(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="image.variant cpu; set variant: gpu"):
        gpu_check.main(["prepare", str(REPO / "Pulumi.dev.yaml"), "--gpus", "1", "--record", str(tmp_path)])
    assert not any(tmp_path.iterdir())


def test_the_images_pins_come_from_the_dockerfile_the_stack_and_the_constraints() -> None:
    pins = gpu_check.image_pins(gpu_stack())
    assert {key: pins[key] for key in ("python", "torch", "torchvision", "torchaudio", "cuda")} == {
        "python": "3.11",  # the stack's image.python, over the Dockerfile's 3.10
        "torch": "2.5.1",
        "torchvision": "0.20.1",
        "torchaudio": "2.5.1",
        "cuda": "12.4",
    }
    assert (pins["deepspeed"], pins["llamafactory"], pins["transformers"]) == ("0.19.8", "0.9.4", "4.57.1")


# --- the report -------------------------------------------------------------------------------


def test_the_report_reads_the_figures_of_a_run(tmp_path: Path) -> None:
    steps = [
        {"current_steps": 2, "total_steps": 4, "loss": 6.9, "elapsed_time": "0:00:01"},
        {"current_steps": 4, "total_steps": 4, "loss": 5.1, "elapsed_time": "0:00:02"},
    ]
    run_output = tmp_path / "output"
    run_output.mkdir()
    (run_output / "trainer_log.jsonl").write_text("".join(json.dumps(step) + "\n" for step in steps))
    (run_output / "all_results.json").write_text(json.dumps({"train_runtime": 2.0, "train_loss": 6.0}))
    allreduce = {"backend": "nccl", "world_size": 1, "busbw_gbps": 1234.5, "sizes": []}
    (tmp_path / "preflight.log").write_text("noise\n[rank0] dslab: allreduce_result " + json.dumps(allreduce) + "\n")
    (tmp_path / "gpu_memory.csv").write_text("0, 500\n0, 1500\n1, 700\n")
    (tmp_path / "train.log").write_text("compute dtype: torch.float16\nsomething else\n  fp16_enabled ..... True\n")
    (tmp_path / "training_loss.png").write_bytes(b"png")

    summary = gpu_check.summarize(tmp_path, run_output)

    assert summary["loss"] == {"first": (2, 6.9), "last": (4, 5.1), "logged": 2}
    assert summary["time_per_step_ms"] == 500.0, "train_runtime over the steps"
    assert summary["allreduce"] == allreduce
    assert summary["gpu_memory_peak_mib"] == {"0": 1500, "1": 700}
    assert summary["evidence"] == ["compute dtype: torch.float16", "fp16_enabled ..... True"], "in log order"
    assert summary["loss_plot"] is True
