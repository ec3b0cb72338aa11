"""A lab's L2 segment: a user-defined bridge on the machine's engine, with outbound NAT."""

from __future__ import annotations

import json

from simhosts.plan import LABEL, SimLab
from simhosts.proc import docker, ok, run


class NetworkConflict(RuntimeError):
    """A network of the lab's name exists with other settings."""


def ensure_network(lab: SimLab) -> None:
    """Create the lab's bridge (lab 0: ``dslab-lab``, 10.0.18.0/24, gateway .254) unless it exists as wanted."""
    if _exists(lab):
        _check_existing(lab)
        return
    docker(
        "network", "create", "--driver", "bridge",
        "--subnet", str(lab.subnet), "--gateway", str(lab.gateway),
        # A fixed interface name makes the bridge easy to find (and to check it is gone).
        "--opt", f"com.docker.network.bridge.name={lab.bridge_interface}",
        "--label", f"{LABEL}={lab.label_value}",
        lab.network_name,
    )


def remove_network(lab: SimLab) -> None:
    """Remove the lab's bridge; docker removes its NAT and isolation rules with it."""
    if _exists(lab):
        docker("network", "rm", lab.network_name)


def _exists(lab: SimLab) -> bool:
    return bool(docker("network", "ls", "--quiet", "--filter", f"name=^{lab.network_name}$"))


def _check_existing(lab: SimLab) -> None:
    info = json.loads(docker("network", "inspect", lab.network_name))[0]
    configs = info.get("IPAM", {}).get("Config") or [{}]
    subnet, gateway = configs[0].get("Subnet"), configs[0].get("Gateway")
    if subnet != str(lab.subnet) or gateway != str(lab.gateway):
        raise NetworkConflict(
            f"network {lab.network_name} exists with subnet {subnet} gateway {gateway}, expected "
            f"{lab.subnet} gateway {lab.gateway}; run `python -m simhosts --lab {lab.id} down` "
            f"(or `docker network rm {lab.network_name}`)"
        )


def _route_rules(lab: SimLab, bastion: str) -> list[list[str]]:
    """This machine's OUTPUT rules, in order, that leave the bastion the operator's only way in:
    new connections to the lab's subnet are refused unless to the bastion (replies to what the
    hosts start stay allowed)."""
    mark = ["-m", "comment", "--comment", f"dslab-lab-{lab.id}-behind-bastion"]
    return [
        ["-d", f"{bastion}/32", *mark, "-j", "ACCEPT"],
        ["-d", str(lab.subnet), "-m", "conntrack", "--ctstate", "NEW", *mark, "-j", "REJECT"],
    ]


def only_through_bastion(lab: SimLab, bastion: str) -> None:
    """Drops the operator's direct routes to the lab's servers (idempotent): a test cannot pass
    by going around the bastion."""
    rules = _route_rules(lab, bastion)
    if all(ok(["iptables", "-w", "-C", "OUTPUT", *rule]) for rule in rules):
        return
    direct_routes_back(lab, bastion)
    for position, rule in enumerate(rules, start=1):
        run(["iptables", "-w", "-I", "OUTPUT", str(position), *rule])


def direct_routes_back(lab: SimLab, bastion: str) -> None:
    """Undoes :func:`only_through_bastion` exactly."""
    for rule in _route_rules(lab, bastion):
        while ok(["iptables", "-w", "-D", "OUTPUT", *rule]):
            pass
