"""DeepSpeedLaunch: the run's files in the manager container, then `deepspeed --hostfile`."""

from __future__ import annotations

import hashlib
import shlex
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_command as command

from components.config import PreflightConfig
from components.hosts.remote_host import RemoteHost
from components.render.file_bundle import PlacedFile, bundle
from components.hosts.host_script import bash_stdin_call, host_script, script_text
from components.hosts.step_result import step_result
from components.naming import component_type
from components.steps.preflight import Preflight, PreflightArgs
from components.render.results import run_key
from components.render.run_files import DEEPSPEED_ENV_PATH, RUN_DIR

RUN_FILES_STEP = "run-files"


@dataclass(frozen=True)
class DeepSpeedLaunchArgs:
    manager: RemoteHost
    nodes: tuple[RemoteHost, ...]
    """Every node: each rank reads ds_config.json itself, at the launcher's path."""
    container_name: str
    workdir: str
    argv: list[str]
    """The deepspeed command line (components.render.launch_argv)."""
    hostfile: str
    ds_config: str
    dataset_info: str | None
    """LLaMA-Factory's dataset_info.json (components.render.dataset_info), placed beside ds_config.json."""
    deepspeed_env: pulumi.Input[str]
    """.deepspeed_env text; it names the overlay interface, known once the container runs."""
    wait: bool
    stall_timeout: int
    """Seconds of a silent log after which the run is stopped; 0 never."""
    loss_plot: str | None
    """The loss curve the run draws in the manager container (components.render.loss_plot), if any."""
    mesh: list[pulumi.Resource]
    """The SSH mesh's steps: the run waits for them."""
    container_ids: dict[str, pulumi.Input[str]]
    """Host name -> its container's id: a new container runs training again."""
    file_generations: dict[str, int]
    """Host name -> the generation the run files' Command runs with (components.hosts.probe)."""
    preflight: PreflightConfig
    preflight_argv: list[str]
    """The deepspeed command of the preflight's all-reduce (components.render.launch_argv)."""
    results_dir: str
    """Where every run gets its own directory on each host (components.render.results)."""
    resume: str
    """`auto`: an unfinished run of the same inputs goes on from its checkpoint; `never`."""


def run_summary(run: str, finished_line: str) -> str:
    """The run's last `dslab: finished` line, after the run's name."""
    return f"run {run}: {finished_line}" if run and finished_line else finished_line


def resumed_step(value: Any) -> int | None:
    """The step a run went on from, or None for one that started at the beginning."""
    return int(value) if value is not None else None


def launch_result(stdout: str) -> dict[str, Any]:
    """deepspeed-launch.sh's result: the run's status, name, log, summary and loss curve."""
    return step_result(stdout, "deepspeed-launch.sh")


class DeepSpeedLaunch(pulumi.ComponentResource):
    """Creates, per node, a Command that places the run's files in its container (hostfile,
    ds_config.json, and in the manager's container .deepspeed_env; the hosts' probe checks them
    on every preview and up, and a file changed inside a container is placed again, in place),
    then the Preflight and a Command on the manager that runs deepspeed: it re-runs when the
    training inputs or the containers change, and only then (files put back after a change
    inside a container do not re-run it). In wait mode `pulumi up` shows the log's progress
    and fails, with the log's last lines, when training fails.

    Outputs:
        status: `succeeded`, or `running` in background mode.
        log_path: the log inside the manager container.
        summary: the run's last `dslab: finished ...` line, when it printed one, after its name.
        run_name: the run's directory under results_dir on every host (`<UTC time>-<inputs key>`).
        resumed_from: the step the run went on from (training.resume: auto), or None.
        busbw_gbps: the preflight's all-reduce bus bandwidth (Gbit/s); None without preflight, and
            its value None for one rank.
        loss_plot_png: the loss curve PNG, base64-encoded ("" when the run drew none or runs on).
    """

    status: pulumi.Output[str]
    log_path: pulumi.Output[str]
    summary: pulumi.Output[str]
    run_name: pulumi.Output[str]
    resumed_from: pulumi.Output[int | None]
    busbw_gbps: pulumi.Output[float | None] | None
    loss_plot_png: pulumi.Output[str]

    def __init__(self, name: str, args: DeepSpeedLaunchArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("DeepSpeedLaunch"), name, None, opts)
        mode = "wait" if args.wait else "background"
        common = {
            f"{RUN_DIR}/hostfile": PlacedFile(args.hostfile),
            f"{RUN_DIR}/ds_config.json": PlacedFile(args.ds_config),
        }
        if args.dataset_info is not None:
            common[f"{RUN_DIR}/dataset_info.json"] = PlacedFile(args.dataset_info)
        # Only the manager's launcher reads .deepspeed_env; it hands it on to the ranks.
        on_manager = {DEEPSPEED_ENV_PATH: PlacedFile(args.deepspeed_env)}
        # A new container in the lab (one made again, or a host added) starts the run anew.
        containers = [args.container_ids[host] for host in sorted(args.container_ids)]
        bundles = {
            node.name: bundle(common | (on_manager if node.name == args.manager.name else {})) for node in args.nodes
        }
        placed = [
            host_script(
                f"{name}-{node.name}-files",
                node,
                "host/container-place-files.sh",
                [args.container_name, RUN_FILES_STEP],
                data=bundles[node.name],
                generation=args.file_generations.get(node.name, 0),
                triggers=containers,
                opts=pulumi.ResourceOptions(parent=self, depends_on=args.mesh),
            )
            for node in args.nodes
        ]
        # What the run is: new files, a new command line or a new container runs it again (files
        # put back after a change inside a container are the same files: no new run).
        placed_inputs: list[pulumi.Input[str]] = [
            *containers,
            *(bundles[host].apply(lambda text: hashlib.sha256(text.encode()).hexdigest()) for host in sorted(bundles)),
        ]
        # The preflight re-runs with training: the same files, the same argv.
        run_inputs = [*placed_inputs, shlex.join(args.argv)]
        before_run: list[pulumi.Resource] = list(placed)
        self.preflight = None
        if args.preflight.enabled:
            self.preflight = Preflight(
                f"{name}-preflight",
                PreflightArgs(
                    manager=args.manager,
                    container_name=args.container_name,
                    workdir=args.workdir,
                    run_dir=RUN_DIR,
                    argv=args.preflight_argv,
                    settings=args.preflight,
                    triggers=run_inputs,
                    after=list(placed),
                ),
                pulumi.ResourceOptions(parent=self),
            )
            before_run.append(self.preflight.resource)
        # Names the run's inputs in its directory's name: a changed run never writes into an
        # earlier one's.
        key = run_key(shlex.join(args.argv), args.ds_config, args.dataset_info or "", args.hostfile)
        launch_args = [
            args.container_name, args.workdir, RUN_DIR, mode, str(args.stall_timeout), args.loss_plot or "-",
            args.results_dir, key, args.resume, "--", *args.argv,
        ]  # fmt: skip
        run_call = bash_stdin_call("run", *launch_args)
        triggers: list[pulumi.Input[Any]] = [*placed_inputs, run_call]
        if self.preflight is not None:
            triggers.append(self.preflight.resource.id)
        # Only a trigger runs training again (a new Command); any other change (a new key file
        # in the connection, a new version of the script) runs `update`, which reports what the
        # last run left without running anything. The log stays in the container: the step
        # shows its progress and, when it fails, its last lines.
        launch = command.remote.Command(
            f"{name}-run",
            connection=args.manager.command,
            create=run_call,
            update=bash_stdin_call("report", *launch_args),
            delete=bash_stdin_call("stop", *launch_args),
            stdin=script_text("host/deepspeed-launch.sh", args.manager),
            triggers=triggers,
            logging=command.remote.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=before_run,
                # A run still going (background mode) stops before the next one starts.
                delete_before_replace=True,
            ),
        )
        self.resource = launch
        result = launch.stdout.apply(launch_result)
        self.status = result.apply(lambda values: str(values.get("status", "")))
        self.log_path = result.apply(lambda values: str(values.get("log", "")))
        self.run_name = result.apply(lambda values: str(values.get("run", "")))
        self.resumed_from = result.apply(lambda values: resumed_step(values.get("resumed_from")))
        self.summary = result.apply(lambda values: run_summary(str(values.get("run", "")), str(values.get("summary", ""))))
        self.loss_plot_png = result.apply(lambda values: str(values.get("loss_plot_png", "")))
        self.busbw_gbps = self.preflight.busbw_gbps if self.preflight is not None else None
        self.register_outputs(
            {
                "status": self.status,
                "log_path": self.log_path,
                "summary": self.summary,
                "run_name": self.run_name,
                "resumed_from": self.resumed_from,
                "busbw_gbps": self.busbw_gbps,
                "loss_plot_png": self.loss_plot_png,
            }
        )
