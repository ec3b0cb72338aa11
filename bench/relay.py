"""Cold image distribution on links limited like a real lab's: `build-once` (the manager's
`docker save` streamed through this machine to every worker at once, as `pulumi up` runs the
copies, assets/operator/image-ship.sh) against `relay` (host to host, each loading while it
forwards, assets/operator/image-relay.sh), at each lab size, beside one host-to-host copy of
the same image at the same rate (the relay to a single host: the physical limit).

    python -m bench.relay [--hosts 2,4,8] [--link 100mbit] [--operator-link 50mbit] [--mb 100] [--runs 1] [--lab 3]

The image is made for the bench on server1: one layer of MB megabytes of random bytes, so no
host holds any of it before a run and every byte travels. Before each run every other host
loses it. Prints a table and writes the figures to bench/results.json (`relay`); `--link none`
measures on unlimited links.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench import report

HERE = Path(__file__).resolve().parent
TAG = "dslab/bench-relay:1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", default="2,4,8")
    parser.add_argument("--link", default="100mbit")
    parser.add_argument("--operator-link", default="50mbit")
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--lab", type=int, default=3)
    args = parser.parse_args()
    os.environ["DSLAB_LAB"] = str(args.lab)  # before the lab's helpers read it

    from simhosts import lifecycle
    from simhosts.links import LinkRates
    from simhosts.plan import SimLab

    lab = SimLab(args.lab)
    rates = LinkRates(
        host=None if args.link == "none" else args.link,
        operator=None if args.operator_link == "none" else args.operator_link,
    )
    rows = []
    try:
        for count in (int(hosts) for hosts in args.hosts.split(",")):
            hosts = lifecycle.up(lab, count, lambda message: None, rates=rates)
            lab_hosts = Lab(lab, [host.address for host in hosts])
            lab_hosts.make_image(args.mb)
            row: dict[str, Any] = {"hosts": count, "link": rates.host, "operator_link": rates.operator, "mb": args.mb}
            for mode in ("copy", "relay", "build-once"):
                if mode == "copy" and count != 2:
                    continue
                times = []
                for _ in range(args.runs):
                    lab_hosts.forget_image()
                    times.append(lab_hosts.distribute(mode))
                row[f"{mode}_s"] = statistics.median(times)
                row[f"{mode}_all_s"] = times
                print(f"{count} hosts, {rates.describe()}: {mode} {row[f'{mode}_s']:.1f} s", flush=True)
            rows.append(row)
    finally:
        lifecycle.up(lab, 2, lambda message: None)
    copy = next((row["copy_s"] for row in rows if "copy_s" in row), None)
    print(f"\n{'hosts':>5} {'build-once':>11} {'relay':>7}  relay/copy  build-once/copy   ({rates.describe()}, {args.mb} MB)")

    def ratio(seconds: float) -> str:
        return f"{seconds / copy:.2f}" if copy else "-"

    for row in rows:
        print(f"{row['hosts']:>5} {row['build-once_s']:>10.1f}s {row['relay_s']:>6.1f}s  {ratio(row['relay_s']):>10}  "
              f"{ratio(row['build-once_s']):>15}")  # fmt: skip
    results_path = HERE / "results.json"
    results = json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    key = "relay" if rates != LinkRates() else "relay_unlimited"
    results[key] = {"copy_s": copy, "rows": rows, "measured": time.strftime("%Y-%m-%d")}
    results_path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    report.chart(results, HERE / "results.png")


class Lab:
    """The lab's hosts as the bench reaches them: with the lab's operator key and known_hosts."""

    def __init__(self, lab: Any, addresses: list[str]) -> None:
        from components.hosts.engines import docker_ssh_opts
        from harness.pulumi_cli import REPO

        self.repo = REPO
        state = lab.state_dir(REPO)
        self.known_hosts = str(state / "known_hosts")
        self.options = docker_ssh_opts(str(state / "operator_ed25519"), self.known_hosts)
        self.destinations = [f"root@{address}:22" for address in addresses]

    def on(self, index: int, command: str) -> str:
        destination = self.destinations[index]
        return subprocess.run(
            ["ssh", *self.options, "-p", "22", destination.rsplit(":", 1)[0], command],
            capture_output=True, text=True, check=True, timeout=1800,
        ).stdout  # fmt: skip

    def make_image(self, megabytes: int) -> None:
        """TAG on server1: one layer of random bytes (no other host holds any of it)."""
        self.on(
            0,
            f"set -e; docker image inspect {TAG} >/dev/null 2>&1 && exit 0; dir=$(mktemp -d); "
            f"head -c {megabytes}M /dev/urandom >$dir/blob; printf 'FROM scratch\\nCOPY blob /blob\\n' >$dir/Dockerfile; "
            f"docker build --quiet --tag {TAG} $dir >/dev/null; rm -rf $dir",
        )
        self.image_id = self.on(0, f"docker image inspect {TAG} --format '{{{{.Id}}}}'").strip()

    def forget_image(self) -> None:
        for index in range(1, len(self.destinations)):
            self.on(index, f"docker image rm {TAG} >/dev/null 2>&1 || true")

    def distribute(self, mode: str) -> float:
        from components.hosts.host_script import script_text

        started = time.monotonic()
        if mode == "build-once":
            # As `pulumi up` runs the copies: one per worker, all at once.
            def ship(index: int) -> None:
                subprocess.run(
                    ["env", "DSLAB_GEN=1", "bash", str(self.repo / "assets/operator/image-ship.sh"), "ship", TAG,
                     "bench-image", self.image_id, self.destinations[0], self.destinations[index], "--", *self.options],
                    input=script_text("host/image-mark.sh"), capture_output=True, text=True, check=True, timeout=3600,
                )  # fmt: skip

            with ThreadPoolExecutor(max_workers=len(self.destinations)) as pool:
                list(pool.map(ship, range(1, len(self.destinations))))
        else:
            hosts = self.destinations if mode == "relay" else self.destinations[:2]
            subprocess.run(
                ["bash", str(self.repo / "assets/operator/image-relay.sh"), TAG, self.image_id, self.known_hosts,
                 *[word for destination in hosts for word in ("--", destination, *self.options)]],
                input=script_text("host/image-relay-hop.sh"), capture_output=True, text=True, check=True, timeout=3600,
            )  # fmt: skip
        return time.monotonic() - started


if __name__ == "__main__":
    main()
