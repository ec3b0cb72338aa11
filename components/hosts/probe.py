"""What the program reads from the hosts before it plans, on every preview and up: each
host's interface MTU (the overlay's MTU follows the smallest), the overlay address its
container holds (the address plan keeps it: a host's place in the list is not its identity,
components.config.address_plan), the addresses in use on the overlay, and whether what the steps
keep inside the containers (keys, trusted keys, run files, the reach check) is still as they
left it (assets/host/lib/step-mark.sh): a step found changed gets its next generation, which
runs its Command again in place.

A probe, not a resource: `command.local.run` is an invoke, run by every `pulumi preview` and
`pulumi up` before anything is planned, so what it reads is known to the preview (a host
added to the list changes no other host's resources, even in the preview). It asks every
host at once over ssh (strict host keys, the operator's key; assets/operator/ask-hosts.sh)
and reads only.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_command as command

from components.config import Host, LabConfig
from components.hosts.engines import docker_ssh_opts, private_key_file, ssh_destination
from components.paths import ASSETS_DIR
from components.hosts.unreachable import cannot_reach

ASK_SCRIPT = ASSETS_DIR / "operator" / "ask-hosts.sh"
HOST_SCRIPT = ASSETS_DIR / "host" / "host-facts.sh"
SSH_ANSWER_S = 30
"""Beyond the engine's own bound (`operator.host_timeout`), what ssh may take: its login
(ConnectTimeout 10 s) and a network gone silent (keep-alives, 20 s). A host that does not answer
within both is named, not waited on."""


@dataclass(frozen=True)
class StepMark:
    """A kept step as the probe found it inside a container."""

    generation: int
    """The generation the step's Command is to run with: the one it left while its work is
    intact, the next one when not."""
    differs: str = ""
    """What is no longer as the step left it ("" when intact)."""


@dataclass(frozen=True)
class SwarmNode:
    """The swarm node a host's engine is, as the probe found it."""

    node_id: str
    manager: bool
    managers: tuple[str, ...]
    """The managers it knows, `address:2377`."""


@dataclass(frozen=True)
class HostFacts:
    """What the hosts said."""

    addresses: dict[str, str]
    """Host name -> the overlay address its container holds."""
    in_use: frozenset[str]
    """Addresses other containers on the overlay hold (those of hosts that left the list keep
    theirs until `up` removes them, at its end): given to nobody in this run."""
    mtus: dict[str, int]
    """Host name -> the MTU of the interface that holds its address (when asked for)."""
    problems: dict[str, str]
    """Host name -> why it could not be asked, or what it could not tell."""
    steps: dict[tuple[str, str], StepMark] = field(default_factory=dict)
    """(host name, step) -> its mark; a step not found (not made yet) has generation 0."""
    swarm_nodes: dict[str, SwarmNode] = field(default_factory=dict)
    """Host name -> the swarm node its engine is, when in a swarm."""

    def generation(self, host: str, step: str) -> int:
        """The generation the step's Command on `host` runs with (components.hosts.host_script)."""
        mark = self.steps.get((host, step))
        return mark.generation if mark is not None else 0

    def node_in_swarm(self, host: str, manager_address: str, *, manager: bool, step: str) -> str | None:
        """The node id `host` has in the swarm of MANAGER_ADDRESS (`address:2377`), known before
        anything runs, when the host is in it as it should be and its step found nothing
        changed; None when its swarm step has yet to (re)make it."""
        node = self.swarm_nodes.get(host)
        mark = self.steps.get((host, step))
        if node is None or (mark is not None and mark.differs):
            return None
        in_place = node.manager if manager else (not node.manager and manager_address in node.managers)
        return node.node_id if in_place else None


def held_by_another(owner: str, what: str) -> str:
    return f"this host is already used by stack '{owner}' ({what}); destroy that stack first, or list this host in only one of them"


def parse_answers(
    output: str, hosts: Sequence[Host], known_hosts_path: str, want_mtu: bool, owner: str = ""
) -> HostFacts:
    """ask-hosts.sh's lines (`HOST held LABEL ADDRESS`, `HOST in-use ADDRESS`, `HOST mtu N`,
    `HOST mtu-unknown WHY`, `HOST step STEP N [WHAT]`, `HOST claimed-by|used-by OWNER`,
    `HOST unreachable|silent|failed ...`) as HostFacts: a host another stack than OWNER holds is
    a problem."""
    destination = {host.name: f"{host.name} ({host.address}:{host.ssh_port})" for host in hosts}
    addresses: dict[str, str] = {}
    in_use: set[str] = set()
    mtus: dict[str, int] = {}
    problems: dict[str, str] = {}
    steps: dict[tuple[str, str], StepMark] = {}
    swarm_nodes: dict[str, SwarmNode] = {}
    for line in output.splitlines():
        host, kind, rest = (line.split(" ", 2) + ["", ""])[:3]
        where = destination.get(host, host)
        if kind == "held":
            label, _, address = rest.partition(" ")
            if label == host:
                addresses[host] = address
            else:
                in_use.add(address)
        elif kind == "in-use":
            in_use.add(rest)
        elif kind == "mtu" and rest.isdigit():
            mtus[host] = int(rest)
        elif kind == "step":
            step, generation, differs = (rest.split(" ", 2) + ["", ""])[:3]
            if generation.isdigit():
                steps[(host, step)] = StepMark(int(generation), differs.strip())
        elif kind == "swarm-node":
            node_id, role, *managers = rest.split()
            swarm_nodes[host] = SwarmNode(node_id, role == "manager", tuple(managers))
        elif kind == "claimed-by" and owner and rest != owner:
            problems[host] = held_by_another(rest, "docker volume dslab-claim")
        elif kind == "used-by" and owner and host not in problems:
            problems[host] = held_by_another(rest, "a container labelled dslab.owner")
        elif kind == "mtu-unknown":
            problems[host] = rest
        elif kind == "unreachable":
            problems[host] = f"{cannot_reach(where, known_hosts_path)}: {rest}"
        elif kind == "silent":
            problems[host] = f"{where} does not answer over SSH (no reply in {rest} s)"
        elif kind == "engine-silent":
            problems[host] = f"the Docker engine does not answer (no reply in {rest} s)"
        elif kind == "failed":
            problems[host] = f"reading {where} failed: {rest}"
    if want_mtu:
        for name in (host.name for host in hosts):
            if name not in mtus and name not in problems:
                problems[name] = "did not tell its interface MTU"
    return HostFacts(
        addresses=addresses,
        in_use=frozenset(in_use - set(addresses.values())),
        mtus=mtus,
        problems=problems,
        steps=steps,
        swarm_nodes=swarm_nodes,
    )


def ask_command(config: LabConfig, owner: str, want_mtu: bool) -> str:
    """ask-hosts.sh's command line: every host of the stack, the operator's ssh options."""
    operator = config.operator
    hosts = [f"{host.name}={ssh_destination(host)}" for host in config.hosts]
    options = docker_ssh_opts(private_key_file(operator), operator.known_hosts_path)
    return shlex.join(
        [
            "bash", str(ASK_SCRIPT), str(HOST_SCRIPT), owner, config.network.name, "yes" if want_mtu else "no",
            str(operator.host_timeout), str(operator.host_timeout + SSH_ANSWER_S), *hosts, "--", *options,
        ]
    )  # fmt: skip


def read_host_facts(config: LabConfig, owner: str, project_dir: str) -> HostFacts:
    """Asks every host. A host that cannot be asked, or cannot tell its MTU, fails `pulumi up`
    naming it before anything changes; a preview warns and plans without what that host would
    have said. What differs inside a container is said, with what `up` does about it."""
    # On the hosts' own network there is no overlay: no MTU to follow.
    want_mtu = config.network.mode == "overlay" and config.network.mtu is None
    # Its lines are read here, not shown: a problem is reported once, by name, below.
    result = command.local.run(
        command=ask_command(config, owner, want_mtu), dir=project_dir, logging=command.local.Logging.NONE
    )
    facts = parse_answers(result.stdout, config.hosts, config.operator.known_hosts_path, want_mtu, owner)
    for (host, step), mark in sorted(facts.steps.items()):
        if mark.differs:
            pulumi.log.info(f"{host}: {step} is not as up left it ({mark.differs}); up makes it again in place")
    if facts.problems:
        report = "\n".join(f"{host}: {why}" for host, why in sorted(facts.problems.items()))
        if not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(f"{report}\n(asking every host before planning; nothing was changed)")
        pulumi.warn(
            f"{report}\n(this preview plans {', '.join(sorted(facts.problems))} without what could not be "
            "read: as if no container were there, with the other hosts' MTU)"
        )
    return facts
