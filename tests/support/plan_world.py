"""A lab's servers as the program sees them, for property tests of the plan (no host touched).

What is modelled: each server (a `Machine`, by its address) and what it would answer the hosts'
probe (components.hosts.probe, assets/host/host-facts.sh through assets/operator/ask-hosts.sh):
its interface MTU, the container of the stack it holds (the host it was made for, its overlay
address, its swarm node), the addresses in use on the overlay (and the server each is on), its
swarm membership, the images it holds, its results directory, its claim, the generations the
steps done on it last ran with (their marks) and the marks inside its container (keys, trust
files, run files, the reach check). A `LabModel` holds a stack's configuration (validated by
components.config, as `pulumi up` would), previews the program against the servers' answers
under the recording mock engine, and applies a preview as `up` would: the servers then hold what
the run recorded. A `Plan` is one preview beside the last applied run, as `pulumi preview` reads
it: a resource whose inputs changed is planned for an update or a replacement.
"""

from __future__ import annotations

import asyncio
import copy
import ipaddress
import re
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any
from unittest import mock

import pulumi
import yaml
from pulumi.output import Unknown

from components.config import Host, LabConfig, LabConfigError, load_lab_config, strip_namespace
from components.hosts import probe
from components.hosts.probe import SSH_ANSWER_S, SwarmNode
from components.steps.deepspeed_launch import RUN_FILES_STEP, RUN_REPORT_STEP
from components.steps.ssh_mesh import KEYS_STEP, REACH_STEP, TRUST_STEP
from components.steps.swarm import SWARM_STEP
from components.steps.host_timeout import HOST_TIMEOUT_STEP
from components.steps.results_store import RESULTS_STEP
from components.steps.training_image import IMAGE_STEP, copy_step_name
from harness.pulumi_cli import REPO
from tests.support.credentials import unit_credentials
from tests.support.recording_mocks import DOCKER_CONTAINER, Recorded, RecordingMocks, step_generation

OWNER = "organization/dslab/dev"
"""The stack every server is claimed for."""
SWARM_PORT = 2377

Resources = Mapping[str, Recorded]


@dataclass(frozen=True)
class HeldContainer:
    """The stack's training container on a server, as `docker inspect` shows it."""

    host: str
    """Its dslab.host label: the host name it was made for."""
    address: str
    """Its static overlay address."""


@dataclass(frozen=True)
class Machine:
    """One server: what is on it now."""

    address: str
    mtu: int
    """The MTU of the interface holding its address."""
    container: HeldContainer | None = None
    swarm: SwarmNode | None = None
    claimed: bool = False
    images: frozenset[str] = frozenset()
    """The image tags its engine holds."""
    results: bool = False
    """Whether its results directory is there (and writable)."""
    host_timeout: int | None = None
    """The engine's bound it keeps (components.steps.host_timeout), when it does."""
    network_driver_mtu: int | None = None
    """The overlay's dslab.driver-mtu label, as a server with a container on it sees it."""
    host_steps: Mapping[str, int] = field(default_factory=dict)
    """Step -> the generation it last ran with, as its mark on the server says (~/.dslab/steps):
    swarm, the image copy (by its tag), results, and on the manager the run's report."""
    container_steps: Mapping[str, int] = field(default_factory=dict)
    """Step -> the generation its mark inside the container says (/opt/dslab/steps)."""

    def wiped(self) -> Machine:
        """Reinstalled: no container, no image, no swarm, no claim, no results, no marks."""
        return Machine(self.address, self.mtu)


def probe_answer(config: LabConfig, machines: Mapping[str, Machine], silent: Collection[str] = ()) -> str:
    """What ask-hosts.sh prints for CONFIG's hosts on these servers; a SILENT host's ssh gave no
    reply in time (`HOST silent SECONDS`)."""
    want_mtu = config.network.mode == "overlay" and config.network.mtu is None
    on_overlay = sorted((m.container.address, m.address) for m in machines.values() if m.container is not None)
    lines: list[str] = []
    for host in config.hosts:
        name = host.name
        if name in silent:
            lines.append(f"{name} silent {config.operator.host_timeout + SSH_ANSWER_S}")
            continue
        machine = machines[host.address]
        if want_mtu:
            lines.append(f"{name} mtu {machine.mtu}")
        if machine.container is not None:
            lines.append(f"{name} held {machine.container.host} {machine.container.address}")
            # The overlay's gossip: a server with a container on it sees every endpoint.
            lines += [f"{name} in-use {address} {on}" for address, on in on_overlay]
            if machine.network_driver_mtu is not None:
                lines.append(f"{name} network-mtu {machine.network_driver_mtu}")
        if machine.swarm is not None:
            node = machine.swarm
            lines.append(f"{name} swarm-node {node.node_id} {'manager' if node.manager else 'worker'}")
            lines += [f"{name} swarm-manager {node_id} {address}" for node_id, address in node.managers]
            lines += [f"{name} swarm-member {node_id} {address}" for node_id, address in node.members]
        lines += [f"{name} image {tag} sha256:{tag.rpartition(':')[2]}" for tag in sorted(machine.images)]
        lines.append(f"{name} results {'writable' if machine.results else 'absent'}")
        if machine.host_timeout is not None:
            lines.append(f"{name} host-timeout {machine.host_timeout}")
        if machine.claimed:
            lines.append(f"{name} claimed-by {OWNER}")
        lines += [f"{name} host-step {step} {generation}" for step, generation in sorted(machine.host_steps.items())]
        if machine.container is not None:
            lines += [f"{name} step {step} {gen}" for step, gen in sorted(machine.container_steps.items())]
    return "".join(f"{line}\n" for line in lines)


CLOCK_START_US = 1_800_000_000_000_000
"""The probe's clock at the first run (µs since the epoch): the fresh generation it gives a step
whose host kept no mark."""
CLOCK_TICK_US = 1_000_000
"""How far the clock moves from one `up` to the next: more than the generations one `up` adds to
a mark (one), so a fresh generation is one no earlier run used."""


def run_program(config: LabConfig, answers: str, ups: int = 0, preview: bool = True) -> Resources:
    """`pulumi preview` (PREVIEW) or `pulumi up` (not PREVIEW) of the Lab for CONFIG, the hosts
    answering ANSWERS, after UPS runs were applied: every resource registered, with its inputs
    (the program runs to its end before this returns). A program that stops raises its
    pulumi.RunError (`up` stops at a host that does not answer, before registering anything).

    The program is a function of the two and of the probe's clock, for the fresh generation it
    gives a step whose host kept no mark: the clock is the model's (CLOCK_START_US, a tick per
    `up`), so the preview and the `up` of one step read the same time. A run is kept and handed
    out again for the same four, so that sequences of edits share their beginnings. It runs in
    a thread of its own: the SDK records the call stack of every resource it registers, and
    pytest's and Hypothesis's frames under it would double the time of a run."""
    key = (config.model_dump_json(), answers, ups, preview)
    if key not in _RUNS:
        if len(_RUNS) >= _KEPT_RUNS:
            _RUNS.pop(next(iter(_RUNS)))
        clock = CLOCK_START_US + ups * CLOCK_TICK_US
        _RUNS[key] = MappingProxyType(_PROGRAM_THREAD.submit(_run_program, config, answers, clock, preview).result())
    return _RUNS[key]


_RUNS: dict[tuple[str, str, int, bool], Resources] = {}
_KEPT_RUNS = 256


def _new_event_loop() -> None:
    asyncio.set_event_loop(asyncio.new_event_loop())


_PROGRAM_THREAD = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pulumi-program", initializer=_new_event_loop)


@dataclass(frozen=True)
class _Clock:
    """The probe's `time` module, as far as it reads it: the time of the run, in µs."""

    microseconds: int

    def time_ns(self) -> int:
        return self.microseconds * 1000


def _run_program(config: LabConfig, answers: str, clock_us: int, preview: bool) -> dict[str, Recorded]:
    from components.lab import Lab

    mocks = RecordingMocks(answers=answers)
    pulumi.runtime.set_mocks(mocks, project="dslab", stack="dev", preview=preview)

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        lab = Lab("lab", config, project_dir=Path(REPO), owner=OWNER, credentials=unit_credentials(config))
        assert lab.launch is not None, "the modelled stacks train"
        return pulumi.Output.all(lab.container_ips, lab.launch.resource.urn)

    with mock.patch.object(probe, "time", _Clock(clock_us)):
        program()
    return dict(mocks.resources)


# --- reading a run's recorded resources ---


def container_name(config: LabConfig, host: str) -> str:
    return f"{host}-{config.container.name}"


def containers(config: LabConfig, resources: Resources) -> dict[str, Recorded]:
    """Host name -> its training container (the IPsec containers are not training containers)."""
    found = {host.name: resources.get(container_name(config, host.name)) for host in config.hosts}
    return {host: recorded for host, recorded in found.items() if recorded is not None and recorded.type == DOCKER_CONTAINER}


def overlay_address(container: Recorded) -> str:
    return str(container.inputs["networksAdvanced"][0]["ipv4Address"])


def labels(container: Recorded) -> dict[str, str]:
    return {label["label"]: label["value"] for label in container.inputs.get("labels") or []}


def swarm_step_name(config: LabConfig, host: str) -> str:
    return f"lab-swarm-{host}-{'init' if host == config.manager.name else 'join'}"


def ship_step_name(host: str) -> str:
    return f"lab-image-{host}-ship"


RUN_NAME = "lab-training-run"
"""The training run's Command, on the manager."""


def claim_name(host: str) -> str:
    """HOST's claim: a docker volume (components.steps.host_claims), no Command."""
    return f"lab-claim-{host}"


def host_step_names(config: LabConfig, host: str, tag: str) -> dict[str, str]:
    """Step (as its mark on HOST names it) -> the Command that does it on HOST: its swarm
    membership, its copy of the image tagged TAG (the manager builds it: no copy), its results
    directory, the engine's bound it keeps, and on the manager the run's report."""
    names = {
        SWARM_STEP: swarm_step_name(config, host),
        RESULTS_STEP: f"lab-results-{host}",
        HOST_TIMEOUT_STEP: f"lab-host-timeout-{host}",
    }
    if host == config.manager.name:
        names[RUN_REPORT_STEP] = RUN_NAME
    else:
        names[copy_step_name(IMAGE_STEP, tag)] = ship_step_name(host)
    return names


def container_step_names(config: LabConfig, host: str) -> dict[str, str]:
    """Step (as the probe names it) -> the Command that keeps it inside HOST's container."""
    names = {
        KEYS_STEP: f"lab-mesh-{host}-keys",
        TRUST_STEP: f"lab-mesh-{host}-trust",
        RUN_FILES_STEP: f"lab-training-{host}-files",
    }
    if host == config.manager.name:
        names[REACH_STEP] = "lab-mesh-reach"
    return names


def image_tag(resources: Resources) -> str:
    """The training image's tag, as its build on the manager names it."""
    return str(next(r.inputs["name"] for name, r in resources.items() if name.startswith("lab-image-") and name.endswith("-build")))


def generation_of(resources: Resources, name: str) -> int | None:
    recorded = resources.get(name)
    return step_generation(recorded) if recorded is not None else None


def machines_after_up(config: LabConfig, resources: Resources, machines: Mapping[str, Machine]) -> dict[str, Machine]:
    """The servers once `up` has applied a run of CONFIG that recorded RESOURCES: each host's
    server holds what the run made (its marks with the generations the steps ran with); a
    server no host of CONFIG names is left with nothing of the stack."""
    by_address = {host.address: host for host in config.hosts}
    manager = f"{config.manager.address}:{SWARM_PORT}"
    made = containers(config, resources)
    nodes = {labels(made[host.name])["dslab.swarm-node"]: host.address for host in config.hosts}
    manager_node = labels(made[config.manager.name])["dslab.swarm-node"]
    network = resources.get(config.network.name)
    driver_mtu = int(labels(network)["dslab.driver-mtu"]) if network is not None else None
    after: dict[str, Machine] = {}
    for address, machine in machines.items():
        host = by_address.get(address)
        if host is None:
            after[address] = machine.wiped()
            continue
        container = made[host.name]
        node_id = labels(container)["dslab.swarm-node"]
        tag = image_tag(resources)
        # The run's report: what the run's step last reported (the run as it is: nothing ends
        # between two ups here).
        host_steps = {
            step: generation_of(resources, name) for step, name in host_step_names(config, host.name, tag).items()
        }
        container_steps = {
            step: generation_of(resources, name) for step, name in container_step_names(config, host.name).items()
        }
        is_manager = host.name == config.manager.name
        after[address] = Machine(
            address=address,
            mtu=machine.mtu,
            container=HeldContainer(host=labels(container)["dslab.host"], address=overlay_address(container)),
            swarm=SwarmNode(
                node_id=node_id,
                manager=is_manager,
                managers=((manager_node, manager),),
                members=tuple(nodes.items()) if is_manager else (),
            ),
            claimed=True,
            images=frozenset({tag}),
            results=True,
            host_timeout=config.operator.host_timeout,
            network_driver_mtu=driver_mtu,
            host_steps={step: gen for step, gen in host_steps.items() if gen is not None},
            container_steps={step: gen for step, gen in container_steps.items() if gen is not None},
        )
    return after


def differences_but_unknowns(preview: Any, up: Any, path: str = "") -> list[str]:
    """Where the inputs a preview registered (PREVIEW) and those `up` registered (UP) differ, a
    value the preview did not know (a pulumi.output.Unknown) matching anything: one line a
    difference, `PATH: the preview's value != up's`."""
    if isinstance(preview, Unknown):
        return []
    if isinstance(preview, Mapping) and isinstance(up, Mapping):
        found: list[str] = []
        for key in sorted(preview.keys() | up.keys(), key=str):
            if key not in up and isinstance(preview[key], Unknown):
                continue  # unknown in the preview; None in up, which leaves it out
            found += differences_but_unknowns(preview.get(key, ABSENT), up.get(key, ABSENT), f"{path}.{key}")
        return found
    if isinstance(preview, list) and isinstance(up, list) and len(preview) == len(up):
        pairs = enumerate(zip(preview, up, strict=True))
        return [line for index, (p, u) in pairs for line in differences_but_unknowns(p, u, f"{path}[{index}]")]
    return [] if preview == up else [f"{path}: {str(preview)[:80]} != {str(up)[:80]}"]


ABSENT = "(absent)"


# --- the configuration's rules, as docs/configuration.md states them ---

MTU_RANGE = range(576, 9001)
MIN_HOST_TIMEOUT_S = 5
SIZE = re.compile(r"^([0-9]+)([bkmg]?)$", re.IGNORECASE)
MIB = {"": 1 / 2**20, "b": 1 / 2**20, "k": 1 / 2**10, "m": 1, "g": 2**10}


def broken_rules(values: Mapping[str, Any]) -> list[str]:
    """The keys of VALUES (a stack's configuration, its namespace stripped) that break a rule an
    edit of the property tests can break, in order ([] when none): unique host names and
    addresses, none inside network.subnet; a pinned container address inside network.subnet,
    neither its network, broadcast nor gateway (first) address, outside network.ip_range (the
    subnet's lower half by default) and no other host's pin (the later one is wrong);
    network.mtu 576..9000; container.shm_size a whole number with a unit, at least 1M;
    operator.host_timeout at least 5; training.stall_timeout and preflight.reach_timeout 0 or
    more, preflight.min_busbw_gbps too; train_batch_size micro batch x accumulation x the hosts'
    slots.

    A model of the rules written from what they say, not from components.config: the property
    tests hold the program's refusals against it, both ways."""
    broken: list[str] = []
    hosts = list(values["hosts"])
    for attribute in ("name", "address"):
        seen: set[str] = set()
        for index, host in enumerate(hosts):
            if host[attribute] in seen:
                broken.append(f"hosts[{index}].{attribute}")
            seen.add(host[attribute])
    network = values.get("network", {})
    subnet = ipaddress.IPv4Network(network.get("subnet", "10.0.3.0/24"))
    dynamic = ipaddress.IPv4Network(network["ip_range"]) if network.get("ip_range") else next(subnet.subnets(1))
    if any(ipaddress.IPv4Address(host["address"]) in subnet for host in hosts):
        broken.append("network.subnet")
    reserved = {subnet.network_address, subnet.broadcast_address, subnet.network_address + 1}
    pins: set[str] = set()
    for index, host in enumerate(hosts):
        pin = host.get("container_address")
        if pin is None:
            continue
        address = ipaddress.IPv4Address(pin)
        if address not in subnet or address in reserved or address in dynamic or pin in pins:
            broken.append(f"hosts[{index}].container_address")
        pins.add(pin)
    if network.get("mtu") is not None and network["mtu"] not in MTU_RANGE:
        broken.append("network.mtu")
    size = SIZE.match(str(values.get("container", {}).get("shm_size", "40G")))
    if size is None or int(size.group(1)) * MIB[size.group(2).lower()] < 1:
        broken.append("container.shm_size")
    if values.get("operator", {}).get("host_timeout", 60) < MIN_HOST_TIMEOUT_S:
        broken.append("operator.host_timeout")
    training = values.get("training", {})
    preflight = training.get("preflight", {})
    for key, value in (
        ("training.stall_timeout", training.get("stall_timeout", 0)),
        ("training.preflight.min_busbw_gbps", preflight.get("min_busbw_gbps", 0)),
        ("training.preflight.reach_timeout", preflight.get("reach_timeout", 0)),
    ):
        if value < 0:
            broken.append(key)
    deepspeed = training["deepspeed"]
    world = sum(int(host.get("slots", 1)) for host in hosts)
    expected = deepspeed["train_micro_batch_size_per_gpu"] * deepspeed["gradient_accumulation_steps"] * world
    if deepspeed["train_batch_size"] != expected:
        broken.append("training.deepspeed.train_batch_size")
    return broken


def pins_held_elsewhere(values: Mapping[str, Any], machines: Mapping[str, Machine]) -> list[str]:
    """The pins (`hosts[I].container_address`) the address plan refuses against what the
    servers hold: an address a container on another server holds now, which one run would
    have to take from it and give to the pinned host's, in no order."""
    return [
        f"hosts[{index}].container_address"
        for index, host in enumerate(values["hosts"])
        if host.get("container_address") is not None
        and any(
            machine.container is not None and machine.container.address == host["container_address"]
            for address, machine in machines.items()
            if address != host["address"]
        )
    ]


# --- the stack and its servers ---


def dev_values(hosts: int) -> dict[str, Any]:
    """Pulumi.dev.yaml's configuration (namespace stripped) with HOSTS hosts, server1 the
    manager, and the batch size that fits them."""
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, _ = strip_namespace(document["config"])
    template = values["hosts"][1]
    values["hosts"] = [values["hosts"][0]] + [
        {**template, "name": f"server{index}", "address": f"10.0.18.{index}"} for index in range(2, hosts + 1)
    ]
    values["training"]["deepspeed"]["train_batch_size"] = batch_size_for(values)
    return values


def batch_size_for(values: Mapping[str, Any]) -> int:
    """micro batch x accumulation x world size, for the configuration VALUES (one slot a host)."""
    deepspeed = values["training"]["deepspeed"]
    return int(deepspeed["train_micro_batch_size_per_gpu"]) * int(deepspeed["gradient_accumulation_steps"]) * len(
        values["hosts"]
    )


@dataclass(frozen=True)
class Plan:
    """One preview beside the run `up` applied last."""

    before: LabConfig
    """The configuration of the run applied last."""
    after: LabConfig
    """The configuration previewed."""
    previous: Resources
    """What the run applied last recorded (empty for a new stack)."""
    resources: Resources
    """What this preview recorded."""
    silent: frozenset[str] = frozenset()
    """Hosts that did not answer the probe."""
    wiped: frozenset[str] = frozenset()
    """Hosts whose server was reinstalled since the run applied last."""
    image_gone: frozenset[str] = frozenset()
    """Hosts whose shipped image was removed since the run applied last."""
    up: Resources | None = None
    """What `pulumi up` of the same configuration against the same answers registered (the
    program run as `up` runs it); None when it stopped first."""
    up_stopped: str = ""
    """Why that `up` stopped before registering anything (a host that did not answer)."""

    @property
    def nothing_changed(self) -> bool:
        """Same configuration, servers as the last run left them, every host answering."""
        return self.before == self.after and not (self.silent or self.wiped or self.image_gone)


class LabModel:
    """A stack's configuration and its servers; `preview` runs the program, `up` applies."""

    def __init__(self, values: dict[str, Any], mtus: Mapping[str, int]) -> None:
        self.values = values
        self.config = load_lab_config(values)
        self.machines = {host.address: Machine(host.address, mtus[host.address]) for host in self.config.hosts}
        self.applied_config = self.config
        self.applied: Resources = {}
        self._wiped: set[str] = set()
        self._image_gone: set[str] = set()
        self._ups = 0

    @classmethod
    def new(cls, hosts: int = 2, mtus: Mapping[str, int] | None = None) -> LabModel:
        """A new dev stack of HOSTS hosts, nothing on its servers yet (MTUS: address -> the
        server's interface MTU, 1500 when not given)."""
        values = dev_values(hosts)
        mtus = mtus or {}
        return cls(values, {host["address"]: mtus.get(host["address"], 1500) for host in values["hosts"]})

    @classmethod
    def running(cls, hosts: int = 2, mtus: Mapping[str, int] | None = None) -> LabModel:
        """A new dev stack of HOSTS hosts after its first `up`."""
        model = cls.new(hosts, mtus)
        model.up(model.preview())
        return model

    # --- edits of the stack configuration ---

    def edit(self, change: Callable[[dict[str, Any]], None]) -> LabConfigError | None:
        """CHANGE applied to a copy of the configuration, validated as `pulumi up` does: taken
        when valid; refused (the error returned, the configuration kept) when not."""
        values = copy.deepcopy(self.values)
        change(values)
        try:
            config = load_lab_config(values)
        except LabConfigError as error:
            return error
        self.values, self.config = values, config
        return None

    def add_server(self, address: str, mtu: int) -> None:
        self.machines.setdefault(address, Machine(address, mtu))

    def host(self, name: str) -> Host:
        return next(host for host in self.config.hosts if host.name == name)

    # --- what happens to the servers behind the stack's back ---

    def wipe(self, name: str) -> None:
        """HOST's server reinstalled: its container, image, swarm membership, claim and marks gone."""
        address = self.host(name).address
        self.machines[address] = self.machines[address].wiped()
        self._wiped.add(name)

    def remove_image(self, name: str) -> None:
        """The shipped image removed from HOST's server (`docker image rm`)."""
        address = self.host(name).address
        self.machines[address] = replace(self.machines[address], images=frozenset())
        self._image_gone.add(name)

    # --- runs ---

    def preview(self, silent: Collection[str] = ()) -> Plan:
        """The program against what the servers answer now (SILENT hosts not answering), run
        as `pulumi preview` runs it and as `pulumi up` does: the plan holds both. A preview
        the program refuses raises its pulumi.RunError, once `up` was seen to refuse it alike."""
        answers = probe_answer(self.config, self.machines, silent)
        try:
            resources = run_program(self.config, answers, self._ups)
        except pulumi.RunError as refused:
            self._up_refuses_too(answers, str(refused))
            raise
        try:
            up, stopped = run_program(self.config, answers, self._ups, preview=False), ""
        except pulumi.RunError as error:
            up, stopped = None, str(error)
        return Plan(
            before=self.applied_config,
            after=self.config,
            previous=self.applied,
            resources=resources,
            silent=frozenset(silent),
            wiped=frozenset(self._wiped),
            image_gone=frozenset(self._image_gone),
            up=up,
            up_stopped=stopped,
        )

    def _up_refuses_too(self, answers: str, refused: str) -> None:
        try:
            run_program(self.config, answers, self._ups, preview=False)
        except pulumi.RunError as error:
            assert str(error) == refused, f"the preview refused the stack with {refused!r}, and up with {str(error)!r}"
            return
        raise AssertionError(f"the preview refused the stack ({refused}), and up would go ahead")

    def up(self, plan: Plan) -> None:
        """Applies PLAN as its `up` ran: the servers hold what that run recorded, which the next
        preview is read against. (`up` refuses a host that does not answer: a plan with a
        silent host is never applied.)"""
        assert not plan.silent, "up stops at a host that does not answer, before anything changes"
        assert plan.up is not None, f"up stopped though every host answered: {plan.up_stopped}"
        self.machines = machines_after_up(plan.after, plan.up, self.machines)
        self.applied_config, self.applied = plan.after, plan.up
        self._ups += 1
        self._wiped.clear()
        self._image_gone.clear()
