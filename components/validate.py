"""Check a stack file without touching any host: ``python -m components.validate Pulumi.dev.yaml``.

Prints a summary and exits 0 when the configuration is valid; prints every problem and
exits 1 when it is not (2 for a usage error). No network, no Pulumi engine; secrets stay
encrypted.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from components.config import (
    LabConfig,
    LabConfigError,
    LlamaFactoryWorkload,
    ScriptWorkload,
    load_stack_file,
)
from components.render.hostfile import order_manager_first


def warnings(config: LabConfig) -> list[str]:
    """Things that are valid but likely not what was meant."""
    found: list[str] = []
    ds = config.training.deepspeed
    if isinstance(config.training.workload, ScriptWorkload):
        autos = [
            name
            for name in (
                "train_batch_size",
                "train_micro_batch_size_per_gpu",
                "gradient_accumulation_steps",
                "gradient_clipping",
                "precision",
            )
            if getattr(ds, name) == "auto"
        ]
        if autos:
            found.append(
                f"training.deepspeed: {', '.join(autos)} {'is' if len(autos) == 1 else 'are'} "
                '"auto", which only the Hugging Face Trainer integration fills in; a script '
                "calling deepspeed.initialize itself needs numbers"
            )
    if config.image.variant == "gpu" and all(
        host.gpus == "none" for host in config.hosts
    ):
        found.append('image.variant is gpu but every host has gpus: "none"')
    if config.image.variant == "cpu" and any(
        host.gpus != "none" for host in config.hosts
    ):
        found.append("image.variant is cpu but some hosts request GPUs")
    return found


def summary(config: LabConfig) -> str:
    """A few lines describing what ``pulumi up`` would build."""
    plan = config.address_plan()  # as a new stack gets it; a running one keeps its hosts' addresses
    network = config.network
    lines = [
        f"hosts ({len(config.hosts)}), manager first:",
    ]
    for host in order_manager_first(config.hosts):
        lines.append(
            f"  {host.name:<12} {host.role:<7} {host.ssh_user}@{host.address}:{host.ssh_port}"
            f"  container {config.node_address(host.name, plan):<15} gpus {_gpus(host.gpus)}"
            f"  slots {host.slots}"
        )
    lines += [
        f"world size: {config.world_size}",
        (
            f"network: {network.mode} {network.name} subnet {plan.subnet} gateway {plan.gateway} "
            f"ip_range {plan.ip_range}" + (f" encrypted ({network.ipsec} IPsec)" if network.encrypted else "")
            if network.mode == "overlay"
            else "network: host (no swarm, no overlay)"
        ),
        f"image: {config.image.variant} {config.image.tag} from {config.image.base_image} "
        f"({config.image.distribution})",
        f"container: {config.container.name} shm {config.container.shm_size} "
        f"restart {config.container.restart} sshd port {config.container_ssh_port}",
        f"training: {_workload(config)}; ZeRO stage {config.training.deepspeed.zero_stage}, "
        f"precision {config.training.deepspeed.precision}; "
        + ("launch" if config.training.launch else "no launch")
        + (", wait" if config.training.wait else ", background"),
    ]
    return "\n".join(lines)


def _gpus(gpus: object) -> str:
    return ",".join(gpus) if isinstance(gpus, tuple) else str(gpus)


def _workload(config: LabConfig) -> str:
    workload = config.training.workload
    if isinstance(workload, LlamaFactoryWorkload):
        model = workload.args.get("model_name_or_path", "?")
        return f"llamafactory {workload.args.get('stage', '?')} of {model}"
    return f"script {workload.entrypoint} {' '.join(workload.args)}".rstrip()


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Validate one stack file; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m components.validate", description=__doc__.splitlines()[0]
    )
    parser.add_argument("stack_file", help="a stack file, e.g. Pulumi.dev.yaml")
    args = parser.parse_args(argv)
    try:
        config = load_stack_file(args.stack_file)
    except LabConfigError as error:
        print(f"{args.stack_file}: {error}", file=out)
        return 1
    print(f"{args.stack_file}: valid", file=out)
    print(summary(config), file=out)
    for warning in warnings(config):
        print(f"warning: {warning}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
