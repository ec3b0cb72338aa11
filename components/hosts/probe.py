"""What the program reads from the hosts before it plans, on every preview and up: each
host's interface MTU (the overlay's MTU follows the smallest), the overlay address its
container holds (the address plan keeps it: a host's place in the list is not its identity,
components.config.address_plan), the addresses in use on the overlay, what the steps done on the
host itself made (its swarm membership, the images it holds, its results directory: read from
the host, never from a mark; components.hosts.host_steps judges them), and whether what the
steps keep inside the containers (keys, trusted keys, run files, the reach check) is still as
they left it (assets/host/lib/step-mark.sh): a step found changed gets its next generation,
which runs its Command again in place. Also the last training run's status as the run wrote it,
and a manifest of the workload's inputs on every host (components.hosts.input_manifest).

A probe, not a resource: `command.local.run` is an invoke, run by every `pulumi preview` and
`pulumi up` before anything is planned, so what it reads is known to the preview (a host
added to the list changes no other host's resources, even in the preview). It asks every
host at once over ssh (strict host keys, the operator's key; assets/operator/ask-hosts.sh)
and reads only.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_command as command

from components.config import Host, LabConfig
from components.config.jump_host import JumpRoute
from components.hosts.engines import docker_ssh_opts, jump_option, private_key_file, ssh_destination
from components.paths import ASSETS_DIR
from components.hosts.unreachable import cannot_reach, host_key_changed

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
    managers: tuple[tuple[str, str], ...] = ()
    """The managers it knows: (node id, `address:2377`)."""
    members: tuple[tuple[str, str], ...] = ()
    """On a manager, every node of its swarm: (node id, the node's address)."""


@dataclass(frozen=True)
class LastRun:
    """The last training run started on a host (its results directory's last-run), as its run
    wrote its status."""

    name: str
    status: str
    """running, succeeded, failed, stopped; none when it wrote none."""
    alive: bool = False
    """run-deepspeed.sh is in the stack's container there."""

    @property
    def state(self) -> str:
        """The status; a run that says running, or nothing yet (starting), is `running` while
        run-deepspeed.sh is there and `stopped` when gone (its container stopped or made anew).
        The same rule as deepspeed-launch.sh's run_state: the step's report is compared with it."""
        if self.status in ("running", "none"):
            return "running" if self.alive else "stopped"
        return self.status


@dataclass(frozen=True)
class InputFile:
    """One file of the workload's inputs on a host."""

    input: int
    """Which of the workload's input directories (components.render.workload_inputs.input_roots)."""
    path: str
    """Relative to it."""
    size: int
    sha256: str
    """Of the whole file up to 1 MiB; of its size and three sampled blocks beyond (host-facts.sh)."""


@dataclass(frozen=True)
class HostFacts:
    """What the hosts said."""

    addresses: dict[str, str]
    """Host name -> the overlay address its container holds (as it said, or, for a host that
    could not be asked, as the overlay's gossip on the others says)."""
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
    images: dict[str, dict[str, str]] = field(default_factory=dict)
    """Host name -> the images asked about that it holds: tag -> image id."""
    results: dict[str, str] = field(default_factory=dict)
    """Host name -> its results directory: writable, absent or read-only."""
    host_marks: dict[tuple[str, str], int] = field(default_factory=dict)
    """(host name, step) -> the generation a step done on the host itself last ran with."""
    host_timeouts: dict[str, int] = field(default_factory=dict)
    """Host name -> the engine's bound it keeps (components.steps.host_timeout), when it does."""
    renamed: dict[str, str] = field(default_factory=dict)
    """Host name -> the name the stack knew its machine by: the machine holds the container the
    stack made for a host no longer in the list (a host renamed, same machine and address)."""
    fresh_generation: int = 0
    """A generation no earlier run has used: for a step done on a host that kept no mark of it."""
    network_driver_mtu: int | None = None
    """The overlay's driver MTU as it stands (its dslab.driver-mtu label), where a host sees it."""
    last_runs: dict[str, LastRun] = field(default_factory=dict)
    """Host name -> the last training run started there (the manager's)."""
    results_mounts: dict[str, str] = field(default_factory=dict)
    """Host name -> the host directory its container mounts for the runs' results (the
    results directory it was made with)."""
    reported: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Host name -> (run name, state) the training step last reported there."""
    inputs: dict[str, tuple[InputFile, ...]] = field(default_factory=dict)
    """Host name -> the files of the workload's inputs it holds, in order."""
    inputs_absent: dict[str, frozenset[int]] = field(default_factory=dict)
    """Host name -> the workload's inputs it does not hold at all (the input check names them)."""

    def generation(self, host: str, step: str) -> int:
        """The generation the step's Command on `host` runs with (components.hosts.host_script)."""
        mark = self.steps.get((host, step))
        return mark.generation if mark is not None else 0


def jump_host_problem(route: JumpRoute, kind: str, rest: str, known_hosts_path: str) -> str:
    """Why ROUTE's jump host could not be logged in to, as ask-hosts.sh said."""
    jump = route.jump
    where = f"the jump host {jump.address}:{jump.port} ({route.setting})"
    if kind == "host-key-changed":
        return host_key_changed(f"the jump host ({route.setting})", jump.address, jump.port, known_hosts_path)
    if kind == "silent":
        return f"{where} does not answer over SSH (no reply in {rest} s)"
    return f"{cannot_reach(where, known_hosts_path)}: {rest}"


def held_by_another(owner: str, what: str) -> str:
    return f"this host is already used by stack '{owner}' ({what}); destroy that stack first, or list this host in only one of them"


def parse_answers(
    output: str,
    hosts: Sequence[Host],
    known_hosts_path: str,
    want_mtu: bool,
    owner: str = "",
    fresh_generation: int = 0,
    routes: Mapping[str, JumpRoute] | None = None,
) -> HostFacts:
    """ask-hosts.sh's lines (`HOST held LABEL ADDRESS`, `HOST in-use ADDRESS HOST_ADDRESS`,
    `HOST mtu N`, `HOST mtu-unknown WHY`, `HOST swarm-node|swarm-manager|swarm-member ...`,
    `HOST image TAG ID`, `HOST results STATE`, `HOST host-step STEP N`, `HOST step STEP N [WHAT]`,
    `HOST results-mount DIR`, `HOST run NAME STATUS`, `HOST run-alive`, `HOST run-reported NAME STATE`, `HOST input I SIZE SHA256 PATH`,
    `HOST input-absent I`,
    `HOST claimed-by|used-by OWNER`, `HOST host-key-changed`, `HOST unreachable|silent|failed ...`;
    for a host behind a jump host (ROUTES: host name -> its route): `@jump=USER@ADDRESS:PORT
    host-key-changed|unreachable|silent ...` then `HOST behind-jump`, or `HOST
    unreachable-behind-jump MESSAGE`) as HostFacts: a host another stack than OWNER holds
    is a problem, and every problem names the hop that failed."""
    destination = {host.name: f"{host.name} ({host.address}:{host.ssh_port})" for host in hosts}
    by_name = {host.name: host for host in hosts}
    addresses: dict[str, str] = {}
    in_use: set[str] = set()
    mtus: dict[str, int] = {}
    problems: dict[str, str] = {}
    steps: dict[tuple[str, str], StepMark] = {}
    swarm_nodes: dict[str, SwarmNode] = {}
    managers: dict[str, list[tuple[str, str]]] = {}
    members: dict[str, list[tuple[str, str]]] = {}
    images: dict[str, dict[str, str]] = {}
    results: dict[str, str] = {}
    host_marks: dict[tuple[str, str], int] = {}
    host_timeouts: dict[str, int] = {}
    hosted_on: dict[str, str] = {}
    network_driver_mtu: int | None = None
    renamed: dict[str, str] = {}
    last_runs: dict[str, LastRun] = {}
    results_mounts: dict[str, str] = {}
    reported: dict[str, tuple[str, str]] = {}
    inputs: dict[str, list[InputFile]] = {}
    inputs_absent: dict[str, set[int]] = {}
    routes = routes or {}
    jump_answers: dict[str, tuple[str, str]] = {}
    for line in output.splitlines():
        host, kind, rest = (line.split(" ", 2) + ["", ""])[:3]
        where = destination.get(host, host)
        route = routes.get(host)
        if host.startswith("@jump="):
            jump_answers[host.removeprefix("@jump=")] = (kind, rest)
        elif kind == "behind-jump" and route is not None:
            said = jump_answers.get(route.jump.destination, ("unreachable", "no answer"))
            problems[host] = f"not asked: {jump_host_problem(route, *said, known_hosts_path)}"
        elif kind == "unreachable-behind-jump" and route is not None:
            problems[host] = (
                f"cannot reach {where} over SSH through the jump host {route.jump.address}:{route.jump.port}: {rest}"
            )
        elif kind == "held":
            label, _, address = rest.partition(" ")
            if label == host:
                addresses[host] = address
            elif label not in by_name and host in by_name:
                renamed[host], addresses[host] = label, address
            else:
                in_use.add(address)
        elif kind == "in-use":
            address, _, host_address = rest.partition(" ")
            in_use.add(address)
            if host_address:
                hosted_on[address] = host_address
        elif kind == "mtu" and rest.isdigit():
            mtus[host] = int(rest)
        elif kind == "network-mtu" and rest.isdigit():
            network_driver_mtu = int(rest)
        elif kind == "step":
            step, generation, differs = (rest.split(" ", 2) + ["", ""])[:3]
            if generation.isdigit():
                steps[(host, step)] = StepMark(int(generation), differs.strip())
        elif kind == "swarm-node":
            node_id, _, role = rest.partition(" ")
            swarm_nodes[host] = SwarmNode(node_id, role == "manager")
        elif kind in ("swarm-manager", "swarm-member"):
            node_id, _, address = rest.partition(" ")
            (managers if kind == "swarm-manager" else members).setdefault(host, []).append((node_id, address))
        elif kind == "image":
            tag, _, image_id = rest.partition(" ")
            images.setdefault(host, {})[tag] = image_id
        elif kind == "results":
            results[host] = rest
        elif kind == "host-step":
            step, _, generation = rest.partition(" ")
            if generation.isdigit():
                host_marks[(host, step)] = int(generation)
        elif kind == "host-timeout" and rest.isdigit():
            host_timeouts[host] = int(rest)
        elif kind == "results-mount":
            results_mounts[host] = rest
        elif kind == "run":
            name, _, status = rest.partition(" ")
            last_runs[host] = LastRun(name, status)
        elif kind == "run-alive" and host in last_runs:
            last_runs[host] = LastRun(last_runs[host].name, last_runs[host].status, alive=True)
        elif kind == "run-reported":
            name, _, state = rest.partition(" ")
            reported[host] = (name, state)
        elif kind == "input":
            index, size, sha256, path = (rest.split(" ", 3) + ["", "", "", ""])[:4]
            if index.isdigit() and size.isdigit():
                inputs.setdefault(host, []).append(InputFile(int(index), path, int(size), sha256))
        elif kind == "input-absent" and rest.isdigit():
            inputs_absent.setdefault(host, set()).add(int(rest))
        elif kind == "claimed-by" and owner and rest != owner:
            problems[host] = held_by_another(rest, "docker volume dslab-claim")
        elif kind == "used-by" and owner and host not in problems:
            problems[host] = held_by_another(rest, "a container labelled dslab.owner")
        elif kind == "mtu-unknown":
            problems[host] = rest
        elif kind == "unreachable":
            problems[host] = f"{cannot_reach(where, known_hosts_path)}: {rest}"
        elif kind == "host-key-changed" and host in by_name:
            entry = by_name[host]
            problems[host] = host_key_changed(host, entry.address, entry.ssh_port, known_hosts_path)
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
    swarm_nodes = {
        host: SwarmNode(node.node_id, node.manager, tuple(managers.get(host, ())), tuple(members.get(host, ())))
        for host, node in swarm_nodes.items()
    }
    # A host that could not be asked keeps what the others see of it: its container's address
    # on the overlay, its node in the manager's swarm.
    for silent in (entry for entry in hosts if entry.name in problems):
        held = [address for address, on in hosted_on.items() if on == silent.address]
        if len(held) == 1 and held[0] not in addresses.values():
            addresses[silent.name] = held[0]
        known = [
            SwarmNode(node_id, False)
            for node in swarm_nodes.values()
            for node_id, address in node.members
            if address == silent.address
        ]
        if len(known) == 1:
            swarm_nodes[silent.name] = known[0]
    return HostFacts(
        addresses=addresses,
        in_use=frozenset(in_use - set(addresses.values())),
        mtus=mtus,
        problems=problems,
        steps=steps,
        swarm_nodes=swarm_nodes,
        images=images,
        results=results,
        host_marks=host_marks,
        host_timeouts=host_timeouts,
        fresh_generation=fresh_generation,
        network_driver_mtu=network_driver_mtu,
        renamed=renamed,
        last_runs=last_runs,
        results_mounts=results_mounts,
        reported=reported,
        inputs={host: tuple(files) for host, files in inputs.items()},
        inputs_absent={host: frozenset(absent) for host, absent in inputs_absent.items()},
    )


def ask_command(
    config: LabConfig, owner: str, want_mtu: bool, images: Sequence[str], results_dir: str, inputs: Sequence[str] = ()
) -> str:
    """ask-hosts.sh's command line: every host of the stack, the IMAGES (tags), RESULTS_DIR and
    the workload's INPUTS to look for, the operator's ssh options."""
    operator = config.operator
    options = docker_ssh_opts(private_key_file(operator), operator.known_hosts_path)
    hosts: list[str] = []
    for host in config.hosts:
        route = host.jump_route(operator.jump_host)
        if route is not None:
            hosts += [f"@jump={route.jump.destination}", jump_option(options, route)]
        hosts.append(f"{host.name}={ssh_destination(host)}")
    return shlex.join(
        [
            "bash", str(ASK_SCRIPT), str(HOST_SCRIPT), owner, config.network.name, "yes" if want_mtu else "no",
            str(operator.host_timeout), str(operator.host_timeout + SSH_ANSWER_S), ",".join(images), results_dir,
            "\n".join(inputs), *hosts, "--", *options,
        ]
    )  # fmt: skip


def read_host_facts(
    config: LabConfig, owner: str, project_dir: str, images: Sequence[str], results_dir: str, inputs: Sequence[str] = ()
) -> HostFacts:
    """Asks every host. A host that cannot be asked, or cannot tell its MTU, fails `pulumi up`
    naming it before anything changes; a preview warns and plans what could not be read as it
    stands. What differs inside a container is said, with what `up` does about it."""
    # On the hosts' own network there is no overlay: no MTU to follow.
    want_mtu = config.network.mode == "overlay" and config.network.mtu is None
    # Its lines are read here, not shown: a problem is reported once, by name, below.
    result = command.local.run(
        command=ask_command(config, owner, want_mtu, images, results_dir, inputs),
        dir=project_dir,
        logging=command.local.Logging.NONE,
    )
    facts = parse_answers(
        result.stdout,
        config.hosts,
        config.operator.known_hosts_path,
        want_mtu,
        owner,
        fresh_generation=time.time_ns() // 1000,
        routes={
            host.name: route
            for host in config.hosts
            if (route := host.jump_route(config.operator.jump_host)) is not None
        },
    )
    for host, old in sorted(facts.renamed.items()):
        pulumi.log.info(
            f"{host}: its machine holds the container made for {old}, no longer listed: {old} renamed {host}; up takes over what {old} had"
        )
    for (host, step), mark in sorted(facts.steps.items()):
        if mark.differs:
            pulumi.log.info(f"{host}: {step} is not as up left it ({mark.differs}); up makes it again in place")
    if facts.problems:
        report = "\n".join(f"{host}: {why}" for host, why in sorted(facts.problems.items()))
        if not pulumi.runtime.is_dry_run():
            raise pulumi.RunError(f"{report}\n(asking every host before planning; nothing was changed)")
        pulumi.warn(
            f"{report}\n(this preview plans {', '.join(sorted(facts.problems))} without what could not be "
            "read: its container where the other hosts see it, with the other hosts' MTU; its steps as "
            "if to be done again)"
        )
    return facts
