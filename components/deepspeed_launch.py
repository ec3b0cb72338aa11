"""DeepSpeedLaunch: the run's files in the manager container, then `deepspeed --hostfile`."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

import pulumi

from components.config import PreflightConfig
from components.container_files import PlacedFile, container_files
from components.connection import RemoteHost
from components.naming import component_type
from components.preflight import Preflight, PreflightArgs
from components.remote_script import RemoteScript, script_call
from components.run_files import DEEPSPEED_ENV_PATH, RUN_DIR



@dataclass(frozen=True)
class DeepSpeedLaunchArgs:
    manager: RemoteHost
    nodes: tuple[RemoteHost, ...]
    """Every node: each rank reads ds_config.json itself, at the launcher's path."""
    container_name: str
    workdir: str
    argv: list[str]
    """The deepspeed command line (components.launch_argv)."""
    hostfile: str
    ds_config: str
    dataset_info: str | None
    """LLaMA-Factory's dataset_info.json (components.dataset_info), placed beside ds_config.json."""
    deepspeed_env: pulumi.Input[str]
    """.deepspeed_env text; it names the overlay interface, known once the container runs."""
    wait: bool
    stall_timeout: int
    """Seconds of a silent log after which the run is stopped; 0 never."""
    loss_plot: str | None
    """The loss curve the run draws in the manager container (components.loss_plot), if any."""
    mesh: list[pulumi.CustomResource]
    """A new SSH mesh (replaced containers) runs training again."""
    preflight: PreflightConfig
    preflight_argv: list[str]
    """The deepspeed command of the preflight's all-reduce (components.launch_argv)."""


class DeepSpeedLaunch(pulumi.ComponentResource):
    """Creates, per node, the ContainerFiles of the run (hostfile, ds_config.json, and in the
    manager's container .deepspeed_env), then the Preflight and a RemoteScript on the manager
    that runs deepspeed: it re-runs when the training inputs or the containers change, and
    only then (files put back after a change inside a container do not re-run it). In wait
    mode `pulumi up` streams the log and fails when training fails.

    Outputs:
        status: `succeeded`, or `running` in background mode.
        log_path: the log inside the manager container.
        summary: the run's last `dslab: finished ...` line, when it printed one.
        busbw_gbps: the preflight's all-reduce bus bandwidth (Gbit/s); None without preflight.
        loss_plot_png: the loss curve PNG, base64-encoded ("" when the run drew none or runs on).
    """

    status: pulumi.Output[str]
    log_path: pulumi.Output[str]
    summary: pulumi.Output[str]
    busbw_gbps: pulumi.Output[float] | None
    loss_plot_png: pulumi.Output[str]

    def __init__(self, name: str, args: DeepSpeedLaunchArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("DeepSpeedLaunch"), name, None, opts)
        mode = "wait" if args.wait else "background"
        in_run_dir = RUN_DIR.lstrip("/")
        common = {
            f"{in_run_dir}/hostfile": PlacedFile(args.hostfile),
            f"{in_run_dir}/ds_config.json": PlacedFile(args.ds_config),
        }
        if args.dataset_info is not None:
            common[f"{in_run_dir}/dataset_info.json"] = PlacedFile(args.dataset_info)
        # Only the manager's launcher reads .deepspeed_env; it hands it on to the ranks.
        on_manager = {DEEPSPEED_ENV_PATH.lstrip("/"): PlacedFile(args.deepspeed_env)}
        placed = [
            container_files(
                f"{name}-{node.name}-files",
                label=f"{node.name}: run files",
                connection=node.connection,
                container_name=args.container_name,
                dest="/",
                files=common | (on_manager if node.name == args.manager.name else {}),
                triggers=[trust.id for trust in args.mesh],
                opts=pulumi.ResourceOptions(parent=self, depends_on=args.mesh),
            )
            for node in args.nodes
        ]
        # The preflight re-runs with training: the same files, the same argv.
        before_run: list[pulumi.CustomResource] = list(placed)
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
                    triggers=[*(file.id for file in placed), shlex.join(args.argv)],
                    after=list(placed),
                ),
                pulumi.ResourceOptions(parent=self),
            )
            before_run.append(self.preflight.resource)
        # A RemoteScript, not a Command: a Command's error repeats the run's whole log, and a
        # new key file would make a Command train again (components.remote_script).
        launch = RemoteScript(
            f"{name}-run",
            label=f"{args.manager.name}: deepspeed",
            connection=args.manager.connection,
            create=script_call(
                "host/deepspeed-launch.sh",
                args.container_name,
                args.workdir,
                RUN_DIR,
                mode,
                str(args.stall_timeout),
                args.loss_plot or "-",
                "--",
                *args.argv,
            ),
            delete=script_call("host/deepspeed-stop.sh", args.container_name),
            # New files or a new mesh (replaced containers) run training again.
            triggers=[resource.id for resource in before_run],
            opts=pulumi.ResourceOptions(parent=self, depends_on=before_run),
        )
        self.resource = launch
        self.status = launch.result.apply(lambda result: str(result.get("status", "")))
        self.log_path = launch.result.apply(lambda result: str(result.get("log", "")))
        self.summary = launch.result.apply(lambda result: str(result.get("summary", "")))
        self.loss_plot_png = launch.result.apply(lambda result: str(result.get("loss_plot_png", "")))
        self.busbw_gbps = self.preflight.busbw_gbps if self.preflight is not None else None
        self.register_outputs(
            {
                "status": self.status,
                "log_path": self.log_path,
                "summary": self.summary,
                "busbw_gbps": self.busbw_gbps,
                "loss_plot_png": self.loss_plot_png,
            }
        )
