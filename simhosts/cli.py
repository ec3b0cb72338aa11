"""``python -m simhosts [--lab ID] up [--hosts N] [--bastion] [--link RATE] [--operator-link RATE] | down | clean | status | images | fault KIND HOST``."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

from simhosts import faults, lifecycle
from simhosts.links import LinkRates
from simhosts.plan import LAB_ENV, MAX_HOSTS, MAX_LABS, SimLab, lab_from_env
from simhosts.proc import CommandError

FAULTS: dict[str, Callable[[SimLab, str], None]] = {
    "engine-stop": faults.stop_engine,
    "engine-start": faults.start_engine,
    "engine-hang": faults.hang_engine,
    "engine-resume": faults.resume_engine,
    "network-cut": faults.cut_network,
    "network-restore": faults.restore_network,
    "host-stop": faults.stop_host,
    "host-start": faults.start_host,
    "host-reinstall": lambda lab, name: lifecycle.reinstall_host(lab, name, _log),
    "host-rekey": faults.rekey_host,
    "sshd-stop": faults.stop_sshd,
    "sshd-start": faults.start_sshd,
}


def _log(message: str) -> None:
    print(f"simhosts: {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    """The command line of the simulator."""
    parser = argparse.ArgumentParser(prog="python -m simhosts", description="The host simulator: simulated servers on this machine.")
    parser.add_argument(
        "--lab", type=int, default=None,
        help=f"which lab, 0..{MAX_LABS - 1} (default ${LAB_ENV}, else 0): labs run side by side, each with its own subnet, names and files",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start the simulator (idempotent)")
    up.add_argument("--hosts", type=int, default=2, help=f"number of hosts, 1..{MAX_HOSTS} (default 2)")
    up.add_argument(
        "--bastion", action="store_true",
        help="put the hosts behind a jump host (sshd only, at .20): this machine reaches them through it alone",
    )
    up.add_argument("--link", metavar="RATE", help="limit every host's link both ways, e.g. 100mbit (default: unlimited)")
    up.add_argument(
        "--operator-link", metavar="RATE", help="limit this machine's link to the lab both ways, e.g. 50mbit (default: unlimited)"
    )
    commands.add_parser("down", help="remove everything the simulator made (keeps the image cache)")
    commands.add_parser(
        "clean",
        help="remove what stacks left on the servers (containers, volumes, networks, swarm, results, marks, dslab/* names); keep images and build cache",
    )
    commands.add_parser("status", help="show each host, its address, engine, sshd, network and swarm state")
    commands.add_parser(
        "images",
        help="start this machine's engine and build the simulator's images, what every lab's up needs first (idempotent; no lab is touched)",
    )
    fault = commands.add_parser("fault", help="inject or undo a fault on one host")
    fault.add_argument("kind", choices=sorted(FAULTS))
    fault.add_argument("host", help="host name, e.g. server2, or bastion")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the simulator's command line; return the exit status."""
    args = build_parser().parse_args(argv)
    started = time.monotonic()
    try:
        lab = lab_from_env() if args.lab is None else SimLab(args.lab)
        if args.command == "up":
            rates = LinkRates(host=args.link, operator=args.operator_link)
            lifecycle.up(lab, args.hosts, _log, bastion=args.bastion, rates=rates)
            _log(f"done in {time.monotonic() - started:.1f} s")
        elif args.command == "down":
            lifecycle.down(lab, _log)
        elif args.command == "clean":
            cleaned = lifecycle.clean(lab, _log)
            _log(f"lab {lab.id}: {len(cleaned)} servers cleaned in {time.monotonic() - started:.1f} s")
        elif args.command == "status":
            _print_status(lab)
        elif args.command == "images":
            lifecycle.machine_parts(_log)
            _log(f"images ready in {time.monotonic() - started:.1f} s")
        else:
            FAULTS[args.kind](lab, args.host)
            _log(f"{args.kind} {args.host}: done")
    except (CommandError, ValueError, RuntimeError, TimeoutError) as error:
        _log(f"error: {error}")
        return 1
    return 0


def _print_status(lab: SimLab) -> None:
    report = lifecycle.status(lab)
    if not report:
        print("no simulated hosts")
        return
    row = "{:<8} {:<11} {:<9} {:<7} {:<5} {:<10} {:<17} {}"
    print(row.format("HOST", "ADDRESS", "STATE", "ENGINE", "SSHD", "NETWORK", "LINK/OPERATOR", "SWARM"))
    for host in report:
        print(
            row.format(
                host.name, host.address, host.container,
                "up" if host.engine else "down", "up" if host.sshd else "down", host.network, host.link, host.swarm,
            )
        )
