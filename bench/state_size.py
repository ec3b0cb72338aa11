"""The stack's state after each of N LLaMA-Factory runs with their loss curve, for this checkout's
program or an earlier commit's, on a simulated 2-host lab: what each run adds to the state.

    python -m bench.state_size [--runs 5] [--code COMMIT] [--lab 3]

Prints, per run, the size of `pulumi stack export` and of the backend's files (its history
copies included). The lab's hosts are made if needed; the stack is destroyed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path


def backend_bytes(state_dir: Path) -> int:
    return sum(path.stat().st_size for path in state_dir.rglob("*") if path.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--code", help="the commit whose program runs (default: this checkout's)")
    parser.add_argument("--lab", type=int, default=3)
    args = parser.parse_args()
    os.environ["DSLAB_LAB"] = str(args.lab)  # before the lab's helpers read it

    from harness.pulumi_cli import PulumiCli, ensure_toolchain
    from harness.stack_project import Stack, project_copy, use_code
    from tests.support.sim_hosts import hosts_up, on_host
    from tests.support.tiny_llamafactory import DATASETS, INPUTS, MODEL, TINY_LORA_SFT

    ensure_toolchain()
    hosts_up(2)
    work = Path(tempfile.mkdtemp(prefix="dslab-state-size-"))
    project = project_copy(work, ("state",))
    if args.code:
        use_code(project, args.code)
    cli = PulumiCli(project_dir=project, state_dir=work / "state")
    cli.run("stack", "init", "state")
    stack = Stack(cli, "state")
    try:
        stack.merge_config({"image": {"llamafactory": "0.9.4"}, "training": {"launch": False}})
        stack.pulumi("up", "--yes")
        image = str(dict(stack.outputs()["image_ids"])["server1"])  # type: ignore[call-overload]
        for host in ("server1", "server2"):
            on_host(
                host, "docker", "run", "--rm", "--entrypoint", "python3", "--volume", f"{INPUTS}:{INPUTS}",
                image, "/opt/dslab/make_tiny_llama.py", "--model-dir", MODEL, "--dataset-dir", DATASETS,
            )  # fmt: skip
        for run in range(1, args.runs + 1):
            workload = {**TINY_LORA_SFT, "args": {**TINY_LORA_SFT["args"], "max_steps": 5 + run, "plot_loss": True}}
            stack.merge_config(
                {"training": {"launch": True, "workload": workload, "deepspeed": {"zero_stage": 2, "precision": "fp32"}}}
            )
            stack.pulumi("up", "--yes")
            exported = cli.run("stack", "export", "--stack", "state").stdout
            curve = Path(str(stack.outputs().get("training_loss_plot") or ""))
            print(json.dumps({
                "code": args.code or "this checkout", "run": run, "state_bytes": len(exported),
                "backend_bytes": backend_bytes(work / "state"),
                "loss_curve_bytes": curve.stat().st_size if curve.is_file() else None,
            }), flush=True)  # fmt: skip
    finally:
        cli.run("destroy", "--yes", "--stack", "state", check=False)
        for host in ("server1", "server2"):
            on_host(host, "rm", "-rf", INPUTS, check=False)


if __name__ == "__main__":
    main()
