"""The GPU half of the program on a GPU machine without Docker (docs/gpu.md).

``bench/gpu-check.sh STACK_FILE OUT_DIR`` runs it all; this file holds its steps:

    python3 bench/gpu_check.py prepare STACK_FILE --gpus N --record DIR [--make-inputs]
    python3 bench/gpu_check.py versions STACK_FILE
    python3 bench/gpu_check.py report OUT_DIR --run-output DIR

``prepare`` renders what the program places in the manager container for a stack with
``image.variant: gpu`` (``components.render.run_files``: hostfile, ds_config.json,
dataset_info.json, .deepspeed_env, the training's and the preflight all-reduce's
``deepspeed`` command lines) and puts it where the container has it. Rewritten for this
machine: the hostfile (``localhost slots=<GPUs>``), and ``--no_ssh_check`` for the launcher
(it would test ssh to localhost; the containers run sshd, this machine need not). The
container around them is stood in for: the image's ``/opt/dslab`` from its build context,
``/opt/venv`` = this Python's environment, each mount a symbolic link from its target to its
source, the manager container's address added to ``lo`` (NCCL's interface is then found by
the image's own ``socket-ifname.sh``). Where that address cannot be added, the launchers get
``--master_addr 127.0.0.1`` and NCCL ``lo``, and ``deviations.txt`` says so. Run as root.
``versions`` prints the image's pins beside what this machine has; ``report`` reads the
run's logs and prints the figures (``summary.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.metadata
import json
import re
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # run as a file on the GPU machine, not as `python -m`
    sys.path.insert(0, str(REPO))

from components.render.build_context import build_args, context_entries, llamafactory_constraints  # noqa: E402
from components.config import LabConfig, LlamaFactoryWorkload, Mount, load_stack_file  # noqa: E402
from components.render.container_spec import interface_subnet  # noqa: E402
from components.render.loss_plot import loss_plot_in_container  # noqa: E402
from components.render.results import RUN_NAME_TOKEN, RUN_OUTPUT_DIR  # noqa: E402
from components.paths import ASSETS_DIR  # noqa: E402
from components.render.run_files import DEEPSPEED_ENV_PATH, RUN_DIR, RunFiles, run_deepspeed_env, run_files  # noqa: E402
from components.render.workload_inputs import required_paths, workload_mounts  # noqa: E402

LOOPBACK = "127.0.0.1"
IMAGE_VENV = "/opt/venv"
"""The image's virtual environment (first on its PATH, and so in .deepspeed_env's PATH)."""


def local_hostfile(gpus: int) -> str:
    """This machine as the only node, one rank per GPU."""
    return f"localhost slots={gpus}\n"


def without_ssh_check(argv: Sequence[str]) -> tuple[str, ...]:
    """``deepspeed --no_ssh_check ...``: a hostfile makes the launcher test ssh to its first host."""
    return (argv[0], "--no_ssh_check", *argv[1:])


def with_master_addr(argv: Sequence[str], address: str) -> tuple[str, ...]:
    """The command line with ``--master_addr`` set to ``address``."""
    at = list(argv).index("--master_addr") + 1
    return (*argv[:at], address, *argv[at + 1 :])


RUN_NAME = "gpu-check"
"""The run's name, which deepspeed-launch.sh would choose on the manager."""


def named(text: str) -> str:
    """TEXT with the run's name where the program leaves its token (components.render.results)."""
    return text.replace(RUN_NAME_TOKEN, RUN_NAME)


def local_run_files(files: RunFiles, gpus: int) -> RunFiles:
    """The program's run files for this machine: only the hostfile, the ssh check and the run's
    name (chosen at run time on the manager) differ."""
    return dataclasses.replace(
        files,
        hostfile=local_hostfile(gpus),
        argv=without_ssh_check([named(word) for word in files.argv]),
        preflight_argv=without_ssh_check(files.preflight_argv),
    )


def container_mounts(config: LabConfig) -> tuple[Mount, ...]:
    """The manager container's bind mounts, in docker_run_args' order."""
    return (*config.container.mounts, *config.manager.overrides.mounts, *workload_mounts(config))


def image_files(config: LabConfig) -> dict[str, Path]:
    """Path in the image -> file here, for the build context's ``dslab/`` (= ``/opt/dslab/``)."""
    entries = context_entries(config.image, REPO)
    return {
        f"/opt/dslab/{name.removeprefix('dslab/')}": Path(entry["path"])
        for name, entry in entries.items()
        if name.startswith("dslab/")
    }


def under(root: Path, path: str) -> Path:
    """An absolute container path below ``root`` (``/`` on the GPU machine, a folder in tests)."""
    return root / path.lstrip("/")


def link(root: Path, target: str, source: str) -> None:
    """``target`` -> ``source``, as a bind mount shows it; an existing other target is an error."""
    path, wanted = under(root, target), under(root, source)
    if path.is_symlink() and path.resolve() == wanted.resolve():
        return
    if path.exists() or path.is_symlink():
        raise SystemExit(f"gpu_check: {path} exists and is not a link to {wanted}; remove it or use another machine")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(wanted)


def lay_out(root: Path, config: LabConfig, files: RunFiles, deepspeed_env: str, venv: str) -> None:
    """The manager container's files below ``root``: image scripts, venv, mounts, run files."""
    for target, source in image_files(config).items():
        path = under(root, target)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(source.read_bytes())
        path.chmod(0o755)
    if not under(root, IMAGE_VENV).exists():
        link(root, IMAGE_VENV, venv)
    for mount in container_mounts(config):
        under(root, mount.source).mkdir(parents=True, exist_ok=True)  # as `docker run --volume` does
        link(root, mount.target, mount.source)
    run_dir = under(root, RUN_DIR)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "hostfile").write_text(files.hostfile, encoding="utf-8")
    (run_dir / "ds_config.json").write_text(files.ds_config, encoding="utf-8")
    if files.dataset_info is not None:
        (run_dir / "dataset_info.json").write_text(files.dataset_info, encoding="utf-8")
    under(root, DEEPSPEED_ENV_PATH).parent.mkdir(parents=True, exist_ok=True)
    under(root, DEEPSPEED_ENV_PATH).write_text(deepspeed_env, encoding="utf-8")


def output_dir(config: LabConfig) -> str:
    """Where a LLaMA-Factory run writes its logs and adapter (the run's directory), else ``""``."""
    return named(RUN_OUTPUT_DIR) if isinstance(config.training.workload, LlamaFactoryWorkload) else ""


def record(directory: Path, config: LabConfig, files: RunFiles, deepspeed_env: str, deviations: list[str]) -> None:
    """What ran, for the shell (``*.argv`` NUL-separated, ``workdir``, ``loss_plot``) and the report."""
    directory.mkdir(parents=True, exist_ok=True)
    texts = {
        "hostfile": files.hostfile,
        "ds_config.json": files.ds_config,
        "dataset_info.json": files.dataset_info or "",
        "deepspeed_env": deepspeed_env,
        "train.argv": "\0".join(files.argv) + "\0",
        "preflight.argv": "\0".join(files.preflight_argv) + "\0",
        "workdir": config.training.workload.workdir + "\n",
        "output_dir": output_dir(config) + "\n",
        "loss_plot": named(loss_plot_in_container(config.training.workload) or "") + "\n",
        "deviations.txt": "".join(f"{line}\n" for line in deviations),
    }
    for name, text in texts.items():
        (directory / name).write_text(text, encoding="utf-8")


def is_local(address: str) -> bool:
    """Whether this machine holds ``address``: the route to it starts from it. (A UDP socket's
    connect sends nothing; binding would not tell, some kernels allow non-local binds.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((address, 9))
        except OSError:  # no route at all
            return False
        return bool(probe.getsockname()[0] == address)


def take_address(address: str) -> str | None:
    """Give ``lo`` the manager container's address, as the overlay gives it eth0; None when
    done, else why not."""
    if is_local(address):
        return None
    try:
        added = subprocess.run(
            ["ip", "addr", "add", f"{address}/32", "dev", "lo"], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return "no ip command (iproute2)"
    return None if is_local(address) else (added.stderr.strip() or f"ip exited {added.returncode}")


def socket_ifname(config: LabConfig) -> str | None:
    """``training.socket_ifname``, or the interface the image's entrypoint would find."""
    if config.training.socket_ifname:
        return config.training.socket_ifname
    found = subprocess.run(
        [str(ASSETS_DIR / "container" / "socket-ifname.sh"), interface_subnet(config, config.manager)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return found.stdout.strip() or None


def make_inputs(config: LabConfig, records: int) -> None:
    """The tiny Llama and alpaca set (assets/make_tiny_llama.py) where the stack's sources are empty."""
    workload = config.training.workload
    if not isinstance(workload, LlamaFactoryWorkload) or workload.model is None or workload.dataset_dir is None:
        return
    if Path(workload.model.source, "config.json").exists():
        return
    file_name = next(iter(workload.datasets.values())).file_name if workload.datasets else "tiny_alpaca.json"
    subprocess.run(
        [sys.executable, str(ASSETS_DIR / "make_tiny_llama.py"), "--model-dir", workload.model.source,
         "--dataset-dir", workload.dataset_dir.source, "--file-name", file_name, "--records", str(records)],
        check=True,
    )  # fmt: skip


def prepare(args: argparse.Namespace) -> None:
    config = load_stack_file(args.stack_file)
    if config.image.variant != "gpu":
        raise SystemExit(f"gpu_check: {args.stack_file} has image.variant {config.image.variant}; set variant: gpu")
    if args.make_inputs:
        make_inputs(config, args.records)
    missing = [f"{what} {path}" for what, path in required_paths(config) if not Path(path).exists()]
    if missing:
        raise SystemExit("gpu_check: missing here: " + "; ".join(missing))
    plan = config.address_plan()
    files = local_run_files(run_files(config, plan), args.gpus)
    deviations: list[str] = []
    master = config.node_address(config.manager.name, plan)
    refused = take_address(master)
    if refused:
        deviations.append(f"the manager address {master} could not be added to lo ({refused}): --master_addr {LOOPBACK}")
        files = dataclasses.replace(
            files,
            argv=with_master_addr(files.argv, LOOPBACK),
            preflight_argv=with_master_addr(files.preflight_argv, LOOPBACK),
        )
    ifname = socket_ifname(config)
    if ifname is None:
        deviations.append(f"no interface holds {interface_subnet(config, config.manager)}: NCCL and gloo on lo")
        ifname = "lo"
    deepspeed_env = run_deepspeed_env(config, ifname)
    lay_out(Path("/"), config, files, deepspeed_env, sys.prefix)
    record(args.record, config, files, deepspeed_env, deviations)
    print(f"gpu_check: {args.stack_file} rendered for {args.gpus} GPU(s), NCCL on {ifname}; files in {RUN_DIR}")
    for line in deviations:
        print(f"gpu_check: deviation: {line}")


# --- versions -------------------------------------------------------------------------------

ARG_PACKAGES = {
    "PYTHON_VERSION": "python",
    "TORCH_VERSION": "torch",
    "TORCHVISION_VERSION": "torchvision",
    "TORCHAUDIO_VERSION": "torchaudio",
    "DEEPSPEED_VERSION": "deepspeed",
    "LLAMAFACTORY_VERSION": "llamafactory",
}


def image_pins(config: LabConfig) -> dict[str, str]:
    """Package -> version the image installs: Dockerfile ARGs (as the stack sets them), then the
    LLaMA-Factory constraints; ``cuda`` is the torch index's (``cu124`` -> 12.4)."""
    dockerfile = (ASSETS_DIR / "image" / f"Dockerfile.{config.image.variant}").read_text(encoding="utf-8")
    args = dict(re.findall(r"^ARG (\w+)=\"?([^\"\n]*)\"?$", dockerfile, flags=re.MULTILINE))
    args |= build_args(config.image)
    pins = {package: args[arg] for arg, package in ARG_PACKAGES.items() if args.get(arg)}
    cuda = re.search(r"/cu(\d+)(\d)$", args.get("TORCH_INDEX_URL", ""))
    if cuda:
        pins["cuda"] = f"{cuda[1]}.{cuda[2]}"
    if config.image.llamafactory:
        lines = llamafactory_constraints(config.image.llamafactory).read_text(encoding="utf-8").splitlines()
        pins |= dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
    return pins


def installed(package: str) -> str:
    """The version this machine has, or ``-``."""
    if package == "python":
        return ".".join(map(str, sys.version_info[:3]))
    if package == "cuda":  # the CUDA this machine's torch is built for
        try:
            return str(importlib.import_module("torch").version.cuda)
        except ImportError:
            return "-"

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def versions(args: argparse.Namespace) -> None:
    config = load_stack_file(args.stack_file)
    print(f"{'package':<24} {'image pins':<14} {'here':<22} differs")
    for package, pinned in image_pins(config).items():
        here = installed(package)
        same = here == pinned or here.startswith(f"{pinned}.")  # python 3.11 is 3.11.x
        print(f"{package:<24} {pinned:<14} {here:<22} {'' if same else 'absent' if here == '-' else 'yes'}".rstrip())


# --- report ---------------------------------------------------------------------------------

EVIDENCE = re.compile(
    r"compute dtype|half precision|fp16_enabled|\bfloat16_config|dynamic_loss_scale_args|zero_optimization_stage"
    r"|ZeRO stage \d optimizer|skipped=|OVERFLOW|TorchBackend in DeepSpeed with backend"
)
"""Log lines that say which precision, ZeRO stage and backend ran (LLaMA-Factory's, the Trainer's, DeepSpeed's)."""


def allreduce_result(log: str) -> dict[str, Any]:
    """allreduce_bench.py's ``dslab: allreduce_result {json}`` line."""
    lines = [line for line in log.splitlines() if "dslab: allreduce_result " in line]
    return json.loads(lines[-1].split("dslab: allreduce_result ", 1)[1]) if lines else {}


def memory_peak_mib(samples: str) -> dict[str, int]:
    """GPU index -> the largest ``memory.used`` (MiB) of nvidia-smi's ``index, memory.used`` lines."""
    peaks: dict[str, int] = {}
    for line in samples.splitlines():
        fields = [field.strip() for field in line.split(",")]
        if len(fields) >= 2 and fields[-1].isdigit():
            peaks[fields[-2]] = max(peaks.get(fields[-2], 0), int(fields[-1]))
    return peaks


def summarize(out: Path, run_output: Path) -> dict[str, Any]:
    """The figures of a run whose logs are in ``out`` (what bench/gpu-check.sh collects) and
    whose LLaMA-Factory output (``trainer_log.jsonl``, ``all_results.json``) is in ``run_output``."""

    def text(path: Path) -> str:
        return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""

    steps = [json.loads(line) for line in text(run_output / "trainer_log.jsonl").splitlines() if line.strip()]
    losses = [(step["current_steps"], step["loss"]) for step in steps if "loss" in step]
    results = json.loads(text(run_output / "all_results.json") or "{}")
    total = int(steps[-1]["total_steps"]) if steps else 0
    runtime = float(results.get("train_runtime", 0.0))
    return {
        "evidence": list(dict.fromkeys(line.strip()[:200] for line in text(out / "train.log").splitlines() if EVIDENCE.search(line))),
        "loss": {"first": losses[0] if losses else None, "last": losses[-1] if losses else None, "logged": len(losses)},
        "steps": total,
        "train_runtime_s": runtime,
        "time_per_step_ms": round(runtime / total * 1e3, 1) if total else None,
        "train_results": results,
        "allreduce": allreduce_result(text(out / "preflight.log")),
        "gpu_memory_peak_mib": memory_peak_mib(text(out / "gpu_memory.csv")),
        "loss_plot": (out / "training_loss.png").exists(),
    }


def report(args: argparse.Namespace) -> None:
    summary = summarize(args.out, args.run_output)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({key: value for key, value in summary.items() if key != "evidence"}, indent=1))
    print("precision, ZeRO and backend, as logged:", *summary["evidence"][:16], sep="\n  ")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="gpu_check.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    step = commands.add_parser("prepare", help="render and place the run's files (as root)")
    step.add_argument("stack_file", type=Path)
    step.add_argument("--gpus", type=int, required=True, help="GPUs of this machine: the hostfile's slots")
    step.add_argument("--record", type=Path, required=True, help="where copies of what runs are written")
    step.add_argument("--make-inputs", action="store_true", help="make the tiny model and dataset where missing")
    step.add_argument("--records", type=int, default=256, help="dataset records for --make-inputs (default 256)")
    step.set_defaults(run=prepare)
    step = commands.add_parser("versions", help="the image's pins beside this machine's versions")
    step.add_argument("stack_file", type=Path)
    step.set_defaults(run=versions)
    step = commands.add_parser("report", help="the figures of a finished run")
    step.add_argument("out", type=Path, help="bench/gpu-check.sh's OUT_DIR")
    step.add_argument("--run-output", type=Path, required=True, help="the run's output_dir (trainer_log.jsonl, ...)")
    step.set_defaults(run=report)
    args = parser.parse_args(argv)
    args.run(args)


if __name__ == "__main__":
    main()
