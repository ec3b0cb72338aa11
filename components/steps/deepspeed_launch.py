"""DeepSpeedLaunch: the run's files in every container, then the run: the preflight and
`deepspeed --hostfile` in the manager container."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_command as command

from components.hosts.host_script import bash_stdin_call, host_script, script_text
from components.hosts.remote_host import RemoteHost
from components.hosts.step_result import step_result
from components.naming import component_type
from components.render.file_bundle import PlacedFile, bundle
from components.render.preflight_call import PreflightCall, busbw_gbps
from components.render.run_files import DEEPSPEED_ENV_PATH, RUN_DIR

RUN_FILES_STEP = "run-files"
RUN_REPORT_STEP = "run-report"
"""The training step's report, as the hosts' probe names its mark (assets/host/deepspeed-launch.sh)."""


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
    mesh: list[pulumi.Resource]
    """The SSH mesh's steps: the run waits for them."""
    container_ids: dict[str, pulumi.Input[str]]
    """Host name -> its container's id: a new container runs the step's create again (which
    resumes an unfinished run, or reports a finished one)."""
    file_generations: dict[str, int]
    """Host name -> the generation the run files' Command runs with (components.hosts.probe)."""
    report_generation: int
    """The generation the run's Command reports with: the next one when the run's status changed
    since it was last reported (components.hosts.host_steps.run_report_verdict)."""
    identity: str
    """What the run is (components.render.run_identity), kept in its directory."""
    run_suffix: str
    """`<stack tag>-<identity key>`: the end of the run's name (components.render.results)."""
    record: str
    """The run's directory in the containers, with the run's name as a token."""
    preflight: PreflightCall | None
    """The checks right before a new run; None without."""
    results_dir: str
    """Where every run gets its own directory on each host (components.render.results)."""
    resume: str
    """`auto`: an unfinished run of the same identity goes on from its checkpoint, a finished
    one is not trained again; `never`: every new run starts over."""


def launch_spec(identity: str, preflight: Sequence[str], argv: Sequence[str]) -> str:
    """What follows deepspeed-launch.sh on stdin, one line each: the identity, then preflight.sh's
    arguments and the deepspeed command, each counted (so the command line stays short)."""
    words = [*preflight, *argv]
    bad = next((word for word in words if "\n" in word), None)
    if bad is not None or "\n" in identity:
        raise ValueError(f"a training argument holds a newline: {bad!r}")
    lines = [identity, str(len(preflight)), *preflight, str(len(argv)), *argv]
    return "".join(f"{line}\n" for line in lines)


def run_summary(run: str, finished_line: str) -> str:
    """The run's last `dslab: finished` line, after the run's name."""
    return f"run {run}: {finished_line}" if run and finished_line else finished_line


def resumed_step(value: Any) -> int | None:
    """The step a run went on from, or None for one that started at the beginning."""
    return int(value) if value is not None else None


def launch_result(stdout: str) -> dict[str, Any]:
    """deepspeed-launch.sh's result: the run's status, name, log, summary, preflight."""
    return step_result(stdout, "deepspeed-launch.sh")


class DeepSpeedLaunch(pulumi.ComponentResource):
    """Creates, per node, a Command that places the run's files in its container (hostfile,
    ds_config.json, and in the manager's container .deepspeed_env; the hosts' probe checks them
    on every preview and up, and a file changed inside a container is placed again, in place),
    then a Command on the manager for the run (assets/host/deepspeed-launch.sh).

    Its triggers are what the run is (its identity key) and the containers: only they make a new
    run (create): the preflight, then deepspeed, or the earlier run of the same identity resumed,
    or reported when it finished. Anything else (how the run is watched, a timeout, the
    preflight's figures, a port, a script's text, the run's status found changed by the probe)
    runs `update`, which reports the run and starts and stops nothing; in wait mode it follows a
    run still going to its end. The run writes its own status into its directory. In wait mode
    `pulumi up` shows the log's progress and fails, with the log's last lines, when training fails.

    Outputs:
        status: running, succeeded, failed or stopped, as the run wrote it (read again on each up).
        log_path: the log inside the manager container.
        summary: the run's last `dslab: finished ...` line, when it printed one, after its name.
        run_name: the run's directory under results_dir on every host (`<UTC time>-<stack>-<key>`).
        resumed_from: the step the run went on from (training.resume: auto), or None.
        busbw_gbps: the preflight's all-reduce bus bandwidth (Gbit/s); None without preflight, and
            its value None for one rank.
    """

    status: pulumi.Output[str]
    log_path: pulumi.Output[str]
    summary: pulumi.Output[str]
    run_name: pulumi.Output[str]
    resumed_from: pulumi.Output[int | None]
    busbw_gbps: pulumi.Output[float | None] | None

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
        # A new container in the lab (one made again, or a host added) runs the create again.
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
        preflight = args.preflight
        launch_args = [
            args.container_name, args.workdir, RUN_DIR, mode, str(args.stall_timeout), args.results_dir, args.record,
            args.run_suffix, args.resume, str(preflight.bound_s if preflight else 0),
        ]  # fmt: skip
        spec = launch_spec(args.identity, preflight.args if preflight else (), args.argv)
        # What makes a new run: what the run is, and the containers it runs in (the old run died
        # with its container). A changed .deepspeed_env is placed again for the next run.
        identity_digest = hashlib.sha256(args.identity.encode()).hexdigest()
        triggers: list[pulumi.Input[Any]] = [*containers, identity_digest]
        launch = command.remote.Command(
            f"{name}-run",
            connection=args.manager.command,
            create=bash_stdin_call("run", *launch_args, generation=args.report_generation),
            update=bash_stdin_call("report", *launch_args, generation=args.report_generation),
            delete=bash_stdin_call("stop", *launch_args),
            # The run's spec follows the script: what is in it changes no command line.
            stdin=script_text("host/deepspeed-launch.sh", args.manager) + spec,
            triggers=triggers,
            logging=command.remote.Logging.STDERR,
            add_previous_output_in_env=False,
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=placed,
                # A run still going stops before the next one starts.
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
        self.busbw_gbps = result.apply(lambda values: busbw_gbps(values.get("preflight"))) if preflight else None
        self.register_outputs(
            {
                "status": self.status,
                "log_path": self.log_path,
                "summary": self.summary,
                "run_name": self.run_name,
                "resumed_from": self.resumed_from,
                "busbw_gbps": self.busbw_gbps,
            }
        )
