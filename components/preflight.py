"""Preflight: the cluster measured from the manager container right before each training run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi

from components.config import PreflightConfig
from components.connection import RemoteHost
from components.naming import component_type
from components.remote_script import RemoteScript, script_call


@dataclass(frozen=True)
class PreflightArgs:
    manager: RemoteHost
    container_name: str
    workdir: str
    run_dir: str
    """Holds the hostfile on every node (placed before) and the all-reduce's log."""
    argv: list[str]
    """The deepspeed command running allreduce_bench.py (components.launch_argv)."""
    settings: PreflightConfig
    triggers: list[pulumi.Input[Any]]
    """What runs training again runs the preflight again: the run's files and its argv."""
    after: list[pulumi.Resource]


class Preflight(pulumi.ComponentResource):
    """Creates a RemoteScript on the manager that runs `host/cluster-preflight.sh`: every node
    answers ssh (waiting up to `reach_timeout`), every node sees the same hostfile and
    addresses, then a short all-reduce across all nodes. `pulumi up` stops there, naming the
    node or the figure, when a check fails or the bus bandwidth is below the minimum.

    Outputs:
        busbw_gbps: the all-reduce's bus bandwidth at the largest message, Gbit/s.
        allreduce: allreduce_bench.py's result (backend, world size, every size's figures).
    """

    busbw_gbps: pulumi.Output[float]
    allreduce: pulumi.Output[dict[str, Any]]

    def __init__(self, name: str, args: PreflightArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__(component_type("Preflight"), name, None, opts)
        settings = args.settings
        self.resource = RemoteScript(
            f"{name}-check",
            label=f"{args.manager.name}: preflight",
            connection=args.manager.connection,
            create=script_call(
                "host/cluster-preflight.sh",
                args.container_name,
                args.workdir,
                args.run_dir,
                str(settings.reach_timeout),
                str(settings.run_timeout),
                f"{settings.min_busbw_gbps:g}",
                "--",
                *args.argv,
            ),
            triggers=args.triggers,
            opts=pulumi.ResourceOptions(parent=self, depends_on=args.after),
        )
        self.busbw_gbps = self.resource.result.apply(lambda result: float(result.get("busbw_gbps", 0.0)))
        self.allreduce = self.resource.result.apply(lambda result: dict(result.get("allreduce", {})))
        self.register_outputs({"busbw_gbps": self.busbw_gbps, "allreduce": self.allreduce})
