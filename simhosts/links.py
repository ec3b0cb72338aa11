"""Link rates of a lab (``up --link RATE --operator-link RATE``): every simulated host's link to
the lab's switch, and this machine's (the operator's), limited like a real lab's with the
kernel's token bucket (``tc`` ``tbf``); without them, the bridge moves bytes at memory speed and a
copy's time is CPU time.

A host's link is limited both ways: what it receives, on the bridge's end of its veth; what it
sends, on its own end (eth0, inside its network namespace). The operator's link is this machine's
end of the bridge: what it sends into the lab is shaped there, for all hosts together. What it
receives is shaped where each host sends it (a class of the host's eth0 for the bridge's
address): this kernel has neither ifb nor the police action to shape a bridge's ingress, so two
hosts sending to the operator at once get its rate each. Host-to-host traffic crosses the bridge
without touching the operator's link, as it crosses a real switch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from simhosts.plan import HostSpec, SimLab
from simhosts.proc import docker, run

RATE = re.compile(r"^[1-9][0-9]*(?:kbit|mbit|gbit)$")
BURST = "64kb"
"""The bucket's depth: a few frames' worth, so a limited link never bursts far above its rate."""
LATENCY = "400ms"
"""How long a packet may wait in the bucket before it is dropped (tcp backs off)."""
QUANTUM = "60000"
"""Bytes an htb class sends per turn: what tc advises for these rates (its default is too big)."""


@dataclass(frozen=True)
class LinkRates:
    """The rates asked for, as tc writes them (``100mbit``); None: not limited."""

    host: str | None = None
    operator: str | None = None

    def __post_init__(self) -> None:
        for flag, rate in (("--link", self.host), ("--operator-link", self.operator)):
            if rate is not None and not RATE.match(rate):
                raise ValueError(f"{flag} {rate!r} is not a rate; expected a number and kbit, mbit or gbit, e.g. 100mbit")

    def describe(self) -> str:
        """The rates in words, e.g. ``hosts 100mbit, operator 50mbit``."""
        return f"hosts {self.host or 'unlimited'}, operator {self.operator or 'unlimited'}"


def apply_link_rates(lab: SimLab, hosts: Sequence[HostSpec], rates: LinkRates) -> None:
    """Every host's link and the operator's at RATES (idempotent: an unlimited one has its limit removed)."""
    operator = str(lab.gateway)
    for host in hosts:
        pid = docker("inspect", "--format", "{{.State.Pid}}", host.container)
        _shape_sending(["nsenter", "--target", pid, "--net", "tc"], rates, operator)
        _shape(["tc"], _bridge_end(host), rates.host)
    _shape(["tc"], lab.bridge_interface, rates.operator)


def link_rates(lab: SimLab, host: HostSpec) -> LinkRates:
    """The rates in force now on HOST's link and the operator's (what ``status`` shows)."""
    return LinkRates(host=_rate_on(["tc"], _bridge_end(host)), operator=_rate_on(["tc"], lab.bridge_interface))


def _bridge_end(host: HostSpec) -> str:
    """The bridge's end of HOST's veth: the interface whose index its eth0 names as its peer."""
    peer = docker("exec", host.container, "cat", "/sys/class/net/eth0/iflink")
    for line in run(["ip", "-o", "link", "show"]).stdout.splitlines():
        index, _, rest = line.partition(": ")
        if index == peer:
            return rest.split(":", 1)[0].split("@", 1)[0]
    raise RuntimeError(f"{host.name}: no interface on this machine is the peer ({peer}) of its eth0")


def _shape(tc: list[str], device: str, rate: str | None) -> None:
    if rate is None:
        run([*tc, "qdisc", "del", "dev", device, "root"], check=False)
        return
    run([*tc, "qdisc", "replace", "dev", device, "root", "tbf", "rate", rate, "burst", BURST, "latency", LATENCY])


def _shape_sending(tc: list[str], rates: LinkRates, operator: str) -> None:
    """What a host sends (its eth0): at the host's rate, and what it sends to OPERATOR (this
    machine's address on the bridge) at most at the operator's."""
    run([*tc, "qdisc", "del", "dev", "eth0", "root"], check=False)
    if rates == LinkRates():
        return
    if rates.operator is None:
        _shape(tc, "eth0", rates.host)
        return
    host = rates.host or "10gbit"
    classes = [("1:", "1:1", host), ("1:1", "1:10", host), ("1:1", "1:20", _slower(host, rates.operator))]
    run([*tc, "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "10"])
    for parent, classid, rate in classes:
        run([*tc, "class", "add", "dev", "eth0", "parent", parent, "classid", classid, "htb",
             "rate", rate, "ceil", rate, "quantum", QUANTUM])  # fmt: skip
    run([*tc, "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
         "match", "ip", "dst", f"{operator}/32", "flowid", "1:20"])  # fmt: skip


def _slower(first: str, second: str) -> str:
    return min(first, second, key=_bits_per_second)


def _bits_per_second(rate: str) -> int:
    number, unit = re.fullmatch(r"([0-9]+)(kbit|mbit|gbit)", rate).groups()  # type: ignore[union-attr]
    return int(number) * {"kbit": 10**3, "mbit": 10**6, "gbit": 10**9}[unit]


def _rate_on(tc: list[str], device: str) -> str | None:
    shown = run([*tc, "qdisc", "show", "dev", device, "root"], check=False).stdout
    found = re.search(r"\btbf\b.*?\brate (\S+)", shown)
    return found.group(1).lower() if found else None
