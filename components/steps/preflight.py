"""Preflight: the cluster measured from the manager container right before each training run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.config import PreflightConfig
from components.hosts.host_script import host_script
from components.hosts.step_result import step_result
from components.hosts.remote_host import RemoteHost
from components.naming import component_type


@dataclass(frozen=True)
class PreflightArgs:
    manager: RemoteHost
    container_name: str
    workdir: str
    run_dir: str
    """Holds the hostfile on every node (placed before) and the all-reduce's log."""
    argv: list[str]
    """The deepspeed command running allreduce_bench.py (components.render.launch_argv)."""
    settings: PreflightConfig
    triggers: list[pulumi.Input[Any]]
    """What runs training again runs the preflight again: the run's files and its argv."""
    after: list[pulumi.Resource]


def preflight_result(stdout: str) -> dict[str, Any]:
    """preflight-check.sh's result: the bus bandwidth measured (none for one rank) and the all-reduce's figures."""
    return step_result(stdout, "preflight-check.sh")


class Preflight(pulumi.ComponentResource):
    """Creates a Command on the manager that runs the image's `preflight.sh` in the manager's
    container (host/preflight-check.sh): every node answers ssh (waiting up to `reach_timeout`), every node sees the
    same hostfile and addresses, then a short all-reduce across all nodes. `pulumi up` stops
    there, naming the node or the figure, when a check fails or the bus bandwidth is below
    the minimum. It runs again with training (the same triggers), never on its own.

    Outputs:
        busbw_gbps: the all-reduce's bus bandwidth at the largest message, Gbit/s; None for one
            rank, which has no link to measure.
        allreduce: allreduce_bench.py's result (backend, world size, every size's figures).
    """

    busbw_gbps: pulumi.Output[float | None]
    allreduce: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: PreflightArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("Preflight"), name, None, opts)
        settings = args.settings
        # What the checks may take, by their own bounds (0: the all-reduce has none).
        checks_s = settings.reach_timeout + settings.run_timeout if settings.run_timeout else 0
        self.resource = host_script(
            f"{name}-check",
            args.manager,
            "host/preflight-check.sh",
            [
                *(args.container_name, str(checks_s), "--"),
                *("--workdir", args.workdir, "--hostfile", f"{args.run_dir}/hostfile"),
                *("--log", f"{args.run_dir}/preflight.log"),
                *("--reach-timeout", str(settings.reach_timeout), "--run-timeout", str(settings.run_timeout)),
                *("--min-busbw", f"{settings.min_busbw_gbps:g}", "--", *args.argv),
            ],
            triggers=args.triggers,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        result = self.resource.stdout.apply(preflight_result)
        self.busbw_gbps = result.apply(
            lambda values: None if values.get("busbw_gbps") is None else float(values["busbw_gbps"])
        )
        self.allreduce = result.apply(lambda values: dict(values.get("allreduce") or {}))
        self.register_outputs({"busbw_gbps": self.busbw_gbps, "allreduce": self.allreduce})
