"""Timings of the stack's lifecycle on the simulated hosts, each beside its floor.

- cold `pulumi up` (claims, swarm, overlay, image, containers, SSH mesh; no training) against
  floor-up.sh doing the same steps by hand, as parallel as a shell script gets;
- no-op `pulumi up` / `pulumi preview` on the unchanged stack (refreshing first, as the project
  says, and a preview with `--refresh=false`) against `pulumi preview` of an empty program
  (what the engine costs by itself);
- a training-argument change: how long `pulumi up` takes until the new run has started;
- image distribution: build on every host against build once and ship.

Runs alternate between the tool and its floor so that drift in the machine's speed hits both.
"""

from __future__ import annotations

import compileall
import re
import shlex
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from components.render.build_context import build_args, context_entries, image_tag
from components.steps.context_cache import context_dir
from components.config import load_stack_file
from components.render.container_spec import container_spec, docker_run_args
from components.steps.overlay_network import driver_mtu_option
from harness.pulumi_cli import REPO, PulumiCli
from harness.stack_project import Stack, project_copy

STACK = "bench"
FLOOR_UP = REPO / "bench" / "floor-up.sh"
FLOOR_DOWN = REPO / "bench" / "floor-down.sh"
LAB_CONFIG = REPO / ".simhosts" / "stack-config.yaml"
SSH_CONFIG = REPO / ".simhosts" / "ssh_config"


def log(message: str) -> None:
    print(f"bench: {message}", flush=True)


def on_host(host: str, command: list[str], stdin: bytes | None = None, timeout: float = 900) -> str:
    """COMMAND's stdout on a lab host; a failure raises RuntimeError with its stderr."""
    completed = subprocess.run(
        ["ssh", "-F", str(SSH_CONFIG), host, shlex.join(command)],
        input=stdin, capture_output=True, timeout=timeout, check=False,
    )  # fmt: skip
    if completed.returncode != 0:
        raise RuntimeError(f"on {host}: {shlex.join(command)}: {completed.stderr.decode(errors='replace')[-2000:]}")
    return completed.stdout.decode()


def timed(action: Callable[[], Any]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def hosts_up(hosts: int) -> None:
    subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-m", "simhosts", "up", "--hosts", str(hosts)], cwd=REPO, check=True)


class BenchStack(Stack):
    """The dev stack's configuration on the simulator's current hosts, in a project copy of its own."""

    def __init__(self, work: Path) -> None:
        cli = PulumiCli(project_dir=project_copy(work, (STACK,)), state_dir=work / "state")
        cli.run("stack", "init", STACK)
        super().__init__(cli, STACK)
        lab = yaml.safe_load(LAB_CONFIG.read_text(encoding="utf-8"))
        # The dev stack's batch size fits 2 nodes; its script workload needs the number.
        stack_file = cli.project_dir / f"Pulumi.{STACK}.yaml"
        deepspeed = dict(yaml.safe_load(stack_file.read_text(encoding="utf-8"))["config"]["dslab:training"]["deepspeed"])
        world_size = sum(int(host.get("slots", 1)) for host in lab["dslab:hosts"])
        deepspeed["train_batch_size"] = (
            int(deepspeed["train_micro_batch_size_per_gpu"]) * int(deepspeed["gradient_accumulation_steps"]) * world_size
        )
        self.merge_config({"hosts": lab["dslab:hosts"], "training": {"launch": False, "deepspeed": deepspeed}})
        self.config_path = cli.project_dir / f"Pulumi.{STACK}.yaml"

    def up(self) -> str:
        return self.pulumi("up", "--yes", "--skip-preview")

    def destroy(self) -> None:
        self.pulumi("destroy", "--yes", "--skip-preview")

    def outputs_of(self, key: str) -> Any:
        return self.outputs()[key]

    def config(self) -> Any:
        return load_stack_file(self.config_path)


@contextmanager
def bench_stack() -> Iterator[BenchStack]:
    work = Path(tempfile.mkdtemp(prefix="dslab-bench-"))
    stack = BenchStack(work)
    try:
        yield stack
    finally:
        stack.cli.run("destroy", "--yes", "--stack", STACK, check=False)
        shutil.rmtree(work, ignore_errors=True)


class Floor:
    """floor-up.sh and floor-down.sh for the stack's configuration."""

    def __init__(self, stack: BenchStack, work: Path) -> None:
        config = stack.config()
        image = config.image
        entries = context_entries(image, stack.cli.project_dir)
        arguments = build_args(image)
        tag = image_tag(image, entries)
        self.tag = f"{tag}-floor"
        self.context = work / "context.tar"
        # GNU, not Python's default PAX: the legacy builder reads a PAX header (written for the
        # files' sub-second mtimes) on stdin as a Dockerfile, not as a context.
        with tarfile.open(self.context, "w", format=tarfile.GNU_FORMAT) as tar:
            tar.add(context_dir(entries, tag), arcname=".")
        self.build_flags = [f"--build-arg={key}={value}" for key, value in sorted(arguments.items())]
        plan = config.address_plan()
        self.network = [config.network.name, config.network.subnet, plan.ip_range, plan.gateway]
        self.args_dir = work / "run-args"
        self.args_dir.mkdir(exist_ok=True)
        for host in config.hosts:
            args = docker_run_args(container_spec(config, host, self.tag, owner="bench-floor", plan=plan))
            (self.args_dir / f"{host.name}.args").write_bytes(b"".join(arg.encode() + b"\0" for arg in args))
        self.hosts = [f"{host.name}={host.address}" for host in config.hosts_manager_first]
        self.names = [host.name for host in config.hosts_manager_first]
        # The simulator hosts' interfaces are 1500: the driver option pulumi derives for them.
        self.mtu = str(driver_mtu_option(config.network.mtu) if config.network.mtu else 1500)

    def up(self) -> None:
        subprocess.run(
            ["bash", str(FLOOR_UP), str(SSH_CONFIG), str(self.context), self.tag, *self.network, self.mtu,
             str(self.args_dir), *self.hosts],
            check=True, env={"PATH": "/usr/bin:/bin", "BUILD_FLAGS": " ".join(self.build_flags)},
        )  # fmt: skip

    def down(self) -> None:
        subprocess.run(["bash", str(FLOOR_DOWN), str(SSH_CONFIG), self.tag, self.network[0], *self.names], check=True)

    def keep_build_cache(self) -> None:
        """The floor's own anchor (keep_build_cache): the tool builds with the engine's BuildKit,
        the floor with the classic builder (the hosts' CLI has no buildx), and neither finds
        its layers in the other's cache."""
        keep_anchor(self.names[0], FLOOR_CACHE_ANCHOR, "the floor's image", self.up, lambda: self.tag, self.down)


CACHE_ANCHOR = "dslab-bench/build-cache:anchor"
FLOOR_CACHE_ANCHOR = "dslab-bench/build-cache:floor-anchor"


def manager_tag(stack: BenchStack) -> str:
    """The tag `pulumi up` gives the image for this stack."""
    image = stack.config().image
    return image_tag(image, context_entries(image, stack.cli.project_dir))


def keep_build_cache(stack: BenchStack) -> None:
    """Build the image once and tag it on the manager under a name neither destroy removes.

    The simulator engines have the classic builder: its layer cache is the image's own parent chain,
    which goes with the image on `pulumi destroy`. With the anchor the manager's later builds,
    the tool's and the floor's alike, are cache hits, so a cold up times the orchestration,
    not ~4 minutes of apt and pip on 2 cores. The anchor stays for later parts and runs."""
    manager = stack.config().hosts_manager_first[0].name
    keep_anchor(manager, CACHE_ANCHOR, "the image", stack.up, lambda: manager_tag(stack), stack.destroy)


def keep_anchor(
    manager: str, anchor: str, what: str, build: Callable[[], object], tag: Callable[[], str], remove: Callable[[], object]
) -> None:
    """Unless MANAGER holds ANCHOR: BUILD, tag the image it made (TAG) as ANCHOR, REMOVE."""
    try:
        on_host(manager, ["docker", "image", "inspect", anchor])
        return
    except RuntimeError:
        pass  # no anchor yet
    log(f"building {what} once for the manager's build cache")
    build()
    on_host(manager, ["docker", "tag", tag(), anchor])
    remove()


# The CLI's line for a finished image copy: "... command:local:Command lab-image-server2-ship created (81.2s)".
SHIP_CREATED = re.compile(r"Command \S+-ship created \((\d+(?:\.\d+)?)s\)")


def longest_ship(output: str) -> float:
    """The slowest worker's image copy in an `up`'s output: the copies run side by side, right
    after the manager's build and before the containers, so this much of the `up` is shipping."""
    return max((float(seconds) for seconds in SHIP_CREATED.findall(output)), default=0.0)


def cold_up_against_floor(hosts: int, runs: int, warm_up: bool) -> dict[str, Any]:
    """Median cold `pulumi up` and floor-up.sh on `hosts` hosts, on bare hosts but with the
    manager's build cache warm (keep_build_cache); one more discarded round first when `warm_up`."""
    hosts_up(hosts)
    with bench_stack() as stack:
        floor = Floor(stack, stack.cli.state_dir.parent)
        keep_build_cache(stack)
        floor.keep_build_cache()
        if warm_up:
            log(f"{hosts} hosts: warm-up round")
            stack.up()
            stack.destroy()
            floor.up()
            floor.down()
        tool: list[float] = []
        ship: list[float] = []
        script: list[float] = []
        for run in range(runs):
            started = time.monotonic()
            output = stack.up()
            tool.append(time.monotonic() - started)
            ship.append(longest_ship(output))
            log(f"{hosts} hosts, run {run + 1}/{runs}: pulumi up {tool[-1]:.1f} s, of which shipping {ship[-1]:.1f} s")
            stack.destroy()
            script.append(timed(floor.up))
            floor.down()
            log(f"{hosts} hosts, run {run + 1}/{runs}: floor {script[-1]:.1f} s")
    without_ship = [total - shipping for total, shipping in zip(tool, ship)]
    return {"hosts": hosts, "pulumi_up_s": median(tool), "floor_s": median(script), "runs": runs,
            "ship_s": median(ship), "pulumi_up_without_ship_s": median(without_ship),
            "pulumi_up_all_s": tool, "floor_all_s": script, "ship_all_s": ship}  # fmt: skip


def distribution(hosts: int, runs: int, cold_builds: bool) -> dict[str, Any]:
    """Cold up with `image.distribution: build-once` (the manager builds from its warm cache
    and ships to every worker) against `every-host` (every host builds): with every host's
    build cache warm (a redeploy) and, when `cold_builds`, once with the workers' caches
    empty (new hosts: each worker builds from nothing, all at once on the simulator's 2 cores)."""
    hosts_up(hosts)
    result: dict[str, Any] = {"hosts": hosts}
    with bench_stack() as stack:
        keep_build_cache(stack)
        workers = [host.name for host in stack.config().hosts_manager_first[1:]]

        def median_of_cold_ups(label: str) -> dict[str, Any]:
            times = []
            for run in range(runs):
                times.append(timed(stack.up))
                stack.destroy()
                log(f"{hosts} hosts, {label} {run + 1}/{runs}: {times[-1]:.1f} s")
            return {"median_s": median(times), "all_s": times}

        stack.merge_config({"image": {"distribution": "build-once"}})
        result["build-once"] = median_of_cold_ups("build-once")
        stack.merge_config({"image": {"distribution": "every-host"}})
        if cold_builds:
            result["every-host-new-hosts"] = {"median_s": round(timed(stack.up), 3)}
            log(f"{hosts} hosts, every-host on new hosts: {result['every-host-new-hosts']['median_s']:.1f} s")
        else:
            stack.up()
        for worker in workers:
            on_host(worker, ["docker", "tag", manager_tag(stack), CACHE_ANCHOR])
        stack.destroy()
        try:
            result["every-host"] = median_of_cold_ups("every-host, caches warm")
        finally:
            # Later cold ups must find workers without the image's layers, as new hosts are.
            for worker in workers:
                on_host(worker, ["docker", "image", "rm", CACHE_ANCHOR])
    return result


@contextmanager
def empty_program() -> Iterator[Callable[[], object]]:
    """The engine's floor: yields `pulumi preview` of a program that declares nothing."""
    work = Path(tempfile.mkdtemp(prefix="dslab-bench-empty-"))
    try:
        project = work / "project"
        project.mkdir()
        (project / "Pulumi.yaml").write_text("name: dslab-empty\nruntime:\n  name: python\n", encoding="utf-8")
        (project / "__main__.py").write_text('"""Declares nothing."""\n', encoding="utf-8")
        cli = PulumiCli(project_dir=project, state_dir=work / "state")
        cli.run("stack", "init", "empty")
        cli.run("up", "--yes", "--stack", "empty")
        yield lambda: cli.run("preview", "--stack", "empty")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def empty_program_preview(runs: int) -> float:
    with empty_program() as preview:
        return median([timed(preview) for _ in range(runs)])


def steady_state(runs: int, noop_runs: int) -> dict[str, Any]:
    """No-op preview and up on the unchanged 2-host stack, each beside the empty program's
    preview (alternating, so drift on a noisy machine hits both alike), and a
    training-argument change."""
    hosts_up(2)
    # Python keeps a program's bytecode itself after its first run, unless bytecode writing is
    # off (this machine sets PYTHONDONTWRITEBYTECODE): measure what a user's later runs read.
    compileall.compile_dir(REPO / "components", quiet=1)
    with bench_stack() as stack, empty_program() as floor_preview:
        stack.merge_config({"training": {"launch": True, "wait": True}})
        stack.up()
        floor: list[float] = []
        preview: list[float] = []
        unrefreshed: list[float] = []
        noop_up: list[float] = []
        for _ in range(noop_runs):
            floor.append(timed(floor_preview))
            preview.append(timed(lambda: stack.pulumi("preview", "--expect-no-changes")))
            # What the project's `refresh: always` costs: the same preview told not to refresh.
            unrefreshed.append(timed(lambda: stack.pulumi("preview", "--refresh=false", "--expect-no-changes")))
            noop_up.append(timed(lambda: stack.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes")))
        # Background mode: `up` returns once the new run has started.
        restart = []
        for run in range(runs):
            stack.merge_config({"training": {"wait": False, "workload": {
                "kind": "script", "entrypoint": "/opt/dslab/train_tiny.py", "args": ["--steps", str(30 + run)]}}})  # fmt: skip
            restart.append(timed(stack.up))
            log(f"argument change {run + 1}/{runs}: new run started after {restart[-1]:.1f} s")
    return {
        "empty_preview_s": median(floor),
        "empty_preview_all_s": floor,
        "noop_preview_s": median(preview),
        "noop_preview_without_refresh_s": median(unrefreshed),
        "noop_up_s": median(noop_up),
        "argument_change_to_start_s": median(restart),
        "noop_preview_all_s": preview,
        "noop_preview_without_refresh_all_s": unrefreshed,
        "noop_up_all_s": noop_up,
        "argument_change_all_s": restart,
    }
