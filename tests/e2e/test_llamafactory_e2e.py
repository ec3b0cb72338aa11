"""The write-up's workload end to end on the simulated 2-host lab: LLaMA-Factory LoRA SFT with
ZeRO-2 on CPU across both containers, on a tiny Llama and a tiny alpaca dataset that the
test makes with the stack's own image (nothing downloaded).

The tests share one stack and run in file order: the image first, then the inputs on one
host only (refused, naming the other host and the path), then on both (trained, adapter on
the manager, loss curve copied back here), then a no-change preview and a destroy.
"""

from __future__ import annotations

import base64
import json
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

import pytest

from components.render.results import default_results_dir
from tests.support.pulumi_output import change_counts
from tests.support.sim_hosts import SSH_CONFIG, host_fault, hosts_up, keep_build_cache, on_host, reuse_built_images
from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy
from tests.support.tiny_llamafactory import DATASETS, INPUTS, MODEL, TINY_LORA_SFT

pytestmark = [pytest.mark.e2e, pytest.mark.program]

HOSTS = ("server1", "server2")
STACK = "llf"
RESULTS = default_results_dir("dslab", STACK)
def copy_between_hosts(source: str, target: str, path: str) -> None:
    """What an operator does with rsync: the host's folder, as is, onto the other host."""
    ssh = f"ssh -F {shlex.quote(str(SSH_CONFIG))}"
    subprocess.run(
        f"{ssh} {source} tar -C / -c {path.lstrip('/')} | {ssh} {target} tar -C / -x",
        shell=True, check=True, timeout=120,
    )  # fmt: skip


def in_manager(*command: str, check: bool = True) -> str:
    return on_host("server1", "docker", "exec", "llm", *command, check=check)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ensure_toolchain()
    hosts_up(len(HOSTS))
    for host in HOSTS:  # an earlier session's unfinished runs of this stack would be resumed
        on_host(host, "rm", "-rf", RESULTS)
    for host in HOSTS:
        on_host(host, "rm", "-rf", INPUTS)
    work = tmp_path_factory.mktemp("llamafactory-e2e")
    cli = PulumiCli(project_dir=project_copy(work, (STACK,)), state_dir=work / "state")
    cli.run("stack", "init", STACK)
    yield Stack(cli, STACK)
    cli.run("destroy", "--yes", "--stack", STACK, check=False)
    for host in HOSTS:
        on_host(host, "rm", "-rf", INPUTS, check=False)


def test_the_image_with_llamafactory_makes_the_tiny_model_and_dataset(stack: Stack) -> None:
    stack.merge_config({"image": {"llamafactory": "0.9.4"}, "training": {"launch": False}})
    reuse_built_images(stack.cli.project_dir, STACK)
    stack.pulumi("up", "--yes")
    keep_build_cache()
    image_ids = stack.outputs()["image_ids"]
    assert isinstance(image_ids, dict)

    on_host(
        "server1", "docker", "run", "--rm", "--entrypoint", "python3", "--volume", f"{INPUTS}:{INPUTS}",
        str(image_ids["server1"]), "/opt/dslab/make_tiny_llama.py", "--model-dir", MODEL, "--dataset-dir", DATASETS,
    )  # fmt: skip
    made = on_host("server1", "find", INPUTS, "-type", "f").split()
    assert f"{MODEL}/config.json" in made and f"{MODEL}/model.safetensors" in made and f"{MODEL}/tokenizer.json" in made
    assert f"{DATASETS}/tiny_alpaca.json" in made


def test_a_host_without_the_model_is_named_before_any_container_changes(stack: Stack) -> None:
    containers_before = {host: on_host(host, "docker", "inspect", "--format", "{{.Id}}", "llm") for host in HOSTS}
    stack.merge_config(
        {"training": {"launch": True, "workload": TINY_LORA_SFT, "deepspeed": {"zero_stage": 2, "precision": "fp32"}}},
    )
    code, output = stack.attempt("up", "--yes")

    assert code != 0
    assert f"server2: the model directory (training.workload.model.source) {MODEL} does not exist" in output
    assert f"server2: the dataset directory (training.workload.dataset_dir.source) {DATASETS} does not exist" in output
    assert "server1: every training input is here" in output
    for host in HOSTS:
        after = on_host(host, "docker", "inspect", "--format", "{{.Id}}", "llm")
        assert after == containers_before[host], f"{host}'s container was left as it was"


def test_lora_sft_trains_across_both_containers_and_the_loss_curve_comes_back(stack: Stack) -> None:
    copy_between_hosts("server1", "server2", INPUTS)
    stack.pulumi("up", "--yes")
    outputs = stack.outputs()

    assert outputs["training_status"] == "succeeded"
    log = in_manager("cat", "/opt/dslab/run/train.log")
    assert "Process rank: 0, world size: 2" in log and "Process rank: 1, world size: 2" in log, "one rank per container"
    assert "'loss':" in log and "train_runtime" in log, "LLaMA-Factory's trainer logged its steps and finished"
    assert float(str(outputs["preflight_busbw_gbps"])) > 0, "the preflight measured the overlay first"

    # The run's own directory, on the hosts (training.results_dir), seen in the containers.
    results = outputs["training_results"]
    assert isinstance(results, dict) and set(results) == {"server1", "server2"}
    on_manager_host = str(results["server1"])
    assert on_manager_host.startswith(f"{RESULTS}/") and results["server2"] == on_manager_host
    on_host("server1", "test", "-s", f"{on_manager_host}/adapter_model.safetensors")  # raises when missing or empty
    output_dir = f"/opt/dslab/results/{PurePosixPath(on_manager_host).name}"
    assert "adapter_config.json" in in_manager("ls", output_dir)
    worker_listing = on_host("server2", "ls", on_manager_host, check=False)
    assert "adapter_model.safetensors" in worker_listing, "each host keeps the adapter (save_on_each_node)"

    plot = Path(str(outputs["training_loss_plot"]))
    assert plot.is_absolute() and plot.name == "training_loss.png"
    data = plot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n"), "a PNG picture"
    remote = subprocess.run(
        ["ssh", "-F", str(SSH_CONFIG), "server1", f"cat {on_manager_host}/training_loss.png"],
        capture_output=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert data == remote, "the copy holds what LLaMA-Factory drew"


def test_a_second_up_changes_nothing_and_a_lost_copy_of_the_curve_comes_back(stack: Stack) -> None:
    stack.pulumi("preview", "--expect-no-changes")
    plot = Path(str(stack.outputs()["training_loss_plot"]))
    plot.unlink()
    output = stack.pulumi("up", "--yes")
    assert plot.read_bytes().startswith(b"\x89PNG"), "written again from the stack"
    changes = change_counts(output)
    assert {what: n for what, n in changes.items() if what != "unchanged"} == {"updated": 1}, (
        f"only the local copy changed; training did not run again: {changes}"
    )
    # The copy reads the file on the host: the picture is nowhere in the state.
    state = stack.cli.run("stack", "export", "--stack", STACK).stdout
    picture = plot.read_bytes()
    assert base64.b64encode(picture[:48]).decode()[:60] not in state
    STATE_SIZES.parent.mkdir(parents=True, exist_ok=True)
    STATE_SIZES.write_text(json.dumps({"state_bytes": len(state), "loss_curve_bytes": len(picture)}) + "\n")


STATE_SIZES = REPO / "bench" / "out" / "state_size.json"
"""The state's size after a run with its loss curve, and the curve's (figures for the notes)."""


FIRST_RUN: list[str] = []
"""The first run's directory on the manager host and what it holds (`ls -lR`): later runs leave it as it is."""


def test_a_dataset_changed_on_one_host_is_refused_naming_it_and_on_every_host_makes_a_new_run(stack: Stack) -> None:
    first = str(stack.outputs()["training_results"]["server1"])  # type: ignore[index]
    FIRST_RUN[:] = [first, on_host("server1", "ls", "-lR", first)]
    dataset = f"{DATASETS}/tiny_alpaca.json"
    # A value changes (the same size, another digest): still a valid dataset.
    edit = f"sed -i 's/Add the/ADD the/' {dataset}"
    on_host("server2", "sh", "-c", edit)
    code, refused = stack.attempt("up", "--yes")
    assert code != 0
    assert f"server2's copy of the training inputs differs from server1's: {dataset} is " in refused, refused[-3000:]
    on_host("server1", "sh", "-c", edit)
    changed = set(stack.preview_changes())
    assert changed == {"lab-training-run", "lab-loss-plot-write"}, f"the same files everywhere: a new run, nothing else: {changed}"


LONG_STEPS = 300
"""About 30 s here (11 steps/s, a checkpoint every 50): long enough to be cut after its first."""


def newest_checkpoint() -> int:
    """The newest checkpoint-N the Trainer saved in the last run's directory on the manager, or 0."""
    name = on_host("server1", "cat", f"{RESULTS}/last-run", check=False).strip()
    if not name:
        return 0
    found = on_host("server1", "sh", "-c", f"ls -d {RESULTS}/{name}/checkpoint-* 2>/dev/null || true").split()
    return max((int(path.rsplit("-", 1)[-1]) for path in found), default=0)


def complete_checkpoints(host: str, run: str) -> list[int]:
    """The steps of the checkpoints HOST holds marked complete in RUN's directory."""
    found = on_host(host, "sh", "-c", f"ls -d {RESULTS}/{run}/checkpoint-*/dslab-complete.json 2>/dev/null || true")
    return sorted(int(path.rsplit("/", 2)[-2].rsplit("-", 1)[-1]) for path in found.split())


def test_a_run_cut_after_a_checkpoint_goes_on_from_it_with_the_next_plain_up(stack: Stack) -> None:
    args = {**TINY_LORA_SFT["args"], "max_steps": LONG_STEPS, "save_strategy": "steps", "save_steps": 50}
    # The first run proved the preflight; the cut run and its resumption go without one.
    workload = {**TINY_LORA_SFT, "args": args}
    stack.merge_config({"training": {"workload": workload, "stall_timeout": 120, "preflight": {"enabled": False}}})
    running = subprocess.Popen(
        ["pulumi", "up", "--yes", "--stack", STACK, "--non-interactive"],
        cwd=stack.cli.project_dir, env=stack.cli.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while newest_checkpoint() < 100:
            assert running.poll() is None and time.monotonic() < deadline, "the run saved its first checkpoints"
            time.sleep(1)
        host_fault("network-cut", "server2")
        output, _ = running.communicate(timeout=600)
    finally:
        if running.poll() is None:
            running.kill()
        host_fault("network-restore", "server2")
    assert running.returncode != 0 and "server2" in output, output[-3000:]
    run = on_host("server1", "cat", f"{RESULTS}/last-run").strip()
    whole = sorted(set(complete_checkpoints("server1", run)) & set(complete_checkpoints("server2", run)))
    assert len(whole) >= 2 and whole[-1] < LONG_STEPS, whole
    cut_at = whole[-1]

    # A shard of the newest checkpoint truncated on server2 (a full disk): the run goes on from
    # the one before on both nodes, and says which one it skipped and why.
    shard = on_host(
        "server2", "sh", "-c", f"ls {RESULTS}/{run}/checkpoint-{cut_at}/global_step{cut_at}/*optim_states.pt | head -n 1"
    ).strip()
    size = int(on_host("server2", "stat", "-c", "%s", shard))
    on_host("server2", "truncate", "-s", str(size // 2), shard)
    checkpoint = whole[-2]
    resumed = stack.pulumi("up", "--yes")
    outputs = stack.outputs()
    assert f"resuming run {run} from its last checkpoint" in resumed, resumed[-3000:]
    assert outputs["training_resumed_from"] == checkpoint, (outputs["training_resumed_from"], checkpoint)
    log = in_manager("cat", "/opt/dslab/run/train.log")
    assert f"Continuing training from global step {checkpoint}" in log
    relative = shard.split(f"/checkpoint-{cut_at}/", 1)[1]
    skipped = f"dslab: skipped the checkpoint of step {cut_at}: server2: {relative} is {size // 2} bytes, {size} when saved"
    assert skipped in log, log[-3000:]
    state = json.loads(on_host("server1", "cat", f"{RESULTS}/{run}/trainer_state.json"))
    assert state["global_step"] == LONG_STEPS, "the configured number of steps, not more"
    first, listing = FIRST_RUN
    assert run != first.rsplit("/", 1)[-1] and on_host("server1", "ls", "-lR", first) == listing, "the first run's untouched"
    on_host("server1", "test", "-s", f"{RESULTS}/{run}/adapter_model.safetensors")


def test_destroy_removes_the_copy_and_leaves_the_inputs(stack: Stack) -> None:
    plot = Path(str(stack.outputs()["training_loss_plot"]))
    stack.pulumi("destroy", "--yes")
    assert not plot.exists()
    for host in HOSTS:
        assert on_host(host, "docker", "ps", "-aq", "--filter", "name=llm") == ""
        assert f"{MODEL}/config.json" in on_host(host, "find", MODEL), "the operator's data is not ours to delete"
