"""``python -m simhosts [--lab ID] up [--hosts N] [--bastion] [--link RATE] [--operator-link RATE] | down | clean | status | leases | images | fault KIND HOST``.

Every command that changes a lab first makes sure this clone holds it (simhosts.leases): ``up``
takes it (kept until ``down`` here, or for the test harness's process that started it), ``down``
gives it back, and a lab another holder has is refused, naming the holder."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence

import os

from simhosts import faults, leases, lifecycle
from simhosts.links import LinkRates
from simhosts.paths import REPO_ROOT
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
    commands.add_parser("leases", help="show who holds each lab of this machine (simhosts.leases)")
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
            lease = leases.take(lab, str(REPO_ROOT), "make demo / hosts-up", _lease_pid(), _log)
            rates = LinkRates(host=args.link, operator=args.operator_link)
            lifecycle.up(lab, args.hosts, _log, bastion=args.bastion, rates=rates)
            _log(f"done in {time.monotonic() - started:.1f} s; lab {lab.id} held by {lease.said()}")
        elif args.command == "down":
            _ensure_held(lab)
            lifecycle.down(lab, _log)
            if leases.release(lab, str(REPO_ROOT), pid=None):
                _log(f"lab {lab.id} given back")
        elif args.command == "clean":
            _ensure_held(lab)
            cleaned = lifecycle.clean(lab, _log)
            _log(f"lab {lab.id}: {len(cleaned)} servers cleaned in {time.monotonic() - started:.1f} s")
        elif args.command == "status":
            _print_status(lab)
        elif args.command == "leases":
            _print_leases()
        elif args.command == "images":
            lifecycle.machine_parts(_log)
            _log(f"images ready in {time.monotonic() - started:.1f} s")
        else:
            _ensure_held(lab)
            FAULTS[args.kind](lab, args.host)
            _log(f"{args.kind} {args.host}: done")
    except (CommandError, ValueError, RuntimeError, TimeoutError) as error:
        _log(f"error: {error}")
        return 1
    return 0


def _lease_pid() -> int | None:
    """The process whose lease covers this command's lab (the test harness's), if any."""
    value = os.environ.get(leases.LEASE_PID_ENV, "").strip()
    return int(value) if value.isdigit() else None


def _ensure_held(lab: SimLab) -> None:
    """Refuses a lab that another holder has in force; one that nobody holds is this clone's to
    change (a lab left up unleased by an earlier test run, or made before leases)."""
    lease = leases.holder_of(lab)
    if leases.in_force(lease) and not leases.covers(lease, str(REPO_ROOT), _lease_pid()):
        assert lease is not None
        raise leases.LabTaken(lab, lease)


def _print_leases() -> None:
    held = leases.leases()
    if not held:
        print("no lab is held")
    for lab_id, lease in sorted(held.items()):
        state = "" if leases.in_force(lease) else "  (stale: its process is gone)"
        print(f"lab {lab_id}: {lease.said()}{state}")


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
