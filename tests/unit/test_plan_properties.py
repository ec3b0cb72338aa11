"""Sequences of edits and of what the hosts answer, each followed by a preview of the plan
(Hypothesis, stateful, against the recording mock engine; no host touched).

What is modelled (tests/support/plan_world.py): a stack made from Pulumi.dev.yaml with two to four
hosts, and its servers, each answering the hosts' probe as assets/host/host-facts.sh would: its
MTU, the container of the stack it holds (its host, its overlay address, its swarm node), the
addresses in use on the overlay, its claim and the marks the steps left. A step is one edit a user
makes (a host added, a worker removed, the list reordered, a host renamed at the same address, a
container address pinned, the overlay's MTU, a training argument, the shm size, a timeout, how
the run is watched: each validated by components.config, which may refuse it), or one thing that
happens to a server (it is reinstalled, it does not answer, its shipped image is removed). An
edit is refused exactly where a model of the rules written apart from the program's
(plan_world.broken_rules, pins_held_elsewhere) says it breaks one, naming that key. After each
step the program runs as `pulumi preview` would and as `pulumi up` would; the preview's resources
are read against the last run `up` applied, as the preview reads them: changed inputs are an
update or a replacement, changed triggers run a Command anew. A preview without a host's answer
is never applied (`up` stops at that host); every other one is, and the servers then hold what
the `up` run recorded.

The invariants are what a user relies on (docs/day-two.md, "Changing the host list"), checked
after every step: addresses unique and each host's own; a container changed only by its own settings; the
training run started again only when what it is changes; an undone step on a host done again,
every step of a reinstalled host done again; a preview without a host's answer replacing
nothing of that host's; `up` doing what the preview showed. The sequences Hypothesis once
found breaking one are each a test of their own below; the machine checks the rest. The profile
(tests/unit/conftest.py, env HYPOTHESIS_PROFILE) bounds the sequences; one sequence of every step
in a fixed order runs too, whatever the fast profile happens to draw.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Collection
from typing import Any

import pulumi
import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from pulumi.output import Unknown

from components.config import LabConfig, LabConfigError
from components.config.address_plan import static_candidates
from components.steps.training_image import IMAGE_STEP
from tests.support.plan_world import (
    RUN_NAME,
    LabModel,
    Plan,
    batch_size_for,
    broken_rules,
    claim_name,
    containers,
    differences_but_unknowns,
    generation_of,
    host_step_names,
    image_tag,
    overlay_address,
    pins_held_elsewhere,
    ship_step_name,
    swarm_step_name,
)

RUN = RUN_NAME
CONFIG_ERROR_LINE = re.compile(r"^dslab:[a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*: \S[^\n]*$")
"""One problem: the key's path, then what is wrong with its value."""


# --- the invariants: each takes a preview beside the run applied before it ---


def pinned(config: LabConfig, host: str) -> str | None:
    return next(h.container_address for h in config.hosts if h.name == host)


def both_runs(plan: Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """Host -> its container, in the run applied last and in this preview."""
    return containers(plan.before, plan.previous), containers(plan.after, plan.resources)


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def check_nothing_changed_plans_nothing(plan: Plan) -> None:
    """0. The same configuration on servers as `up` left them: the next preview changes nothing."""
    if not plan.nothing_changed or not plan.previous:
        return
    assert plan.resources.keys() == plan.previous.keys(), (
        "an unchanged stack would add or remove resources: "
        f"{sorted(plan.resources.keys() ^ plan.previous.keys())}"
    )
    changed = [name for name in plan.resources if plan.resources[name].inputs != plan.previous[name].inputs]
    assert not changed, f"an unchanged stack would update or replace {changed}"


def check_container_addresses_are_unique(plan: Plan) -> None:
    """1a. No two containers share an overlay address."""
    addresses = {host: overlay_address(container) for host, container in containers(plan.after, plan.resources).items()}
    assert len(set(addresses.values())) == len(addresses), f"two containers would share an address: {addresses}"


def check_addresses_stay_with_their_hosts(plan: Plan, exempt: Collection[str] = ()) -> None:
    """1b. A host's container keeps its address unless that host's own pin changed."""
    before, after = both_runs(plan)
    for host in sorted((before.keys() & after.keys()) - set(exempt)):
        if pinned(plan.before, host) != pinned(plan.after, host):
            continue
        old, new = overlay_address(before[host]), overlay_address(after[host])
        assert old == new, f"{host}'s container would move from {old} to {new} though its own pin did not change"


def own_settings(config: LabConfig, host: str) -> tuple[Any, ...]:
    """What a host's container is made of: its host entry, the container, network and image
    settings (the swarm and the image it runs follow from them)."""
    entry = next(h for h in config.hosts if h.name == host)
    return entry, config.container, config.network, config.image


def check_containers_change_only_with_their_own_settings(plan: Plan, exempt: Collection[str] = ()) -> None:
    """2. A container's inputs change only when something of its own changed: never for a
    training argument, a timeout, another host added, removed or moved in the list."""
    before, after = both_runs(plan)
    for host in sorted((before.keys() & after.keys()) - set(exempt)):
        fields = changed_fields(before[host].inputs, after[host].inputs)
        if fields:
            assert own_settings(plan.before, host) != own_settings(plan.after, host), (
                f"{host}'s container would be updated or replaced ({', '.join(fields)}) though nothing of its own changed"
            )


def run_identity(config: LabConfig, resources: Any) -> tuple[Any, ...]:
    """What a training run is: its training settings but how it is watched (the timeouts, the
    preflight, wait, resume, where its results go), its hosts and ranks in the hostfile's order,
    its containers."""
    watched = {"stall_timeout", "preflight", "wait", "resume", "results_dir", "results_on_destroy", "master_port"}
    return (
        config.training.model_dump(exclude=watched),
        [(host.name, host.slots) for host in config.hosts_manager_first],
        {host: container.inputs for host, container in containers(config, resources).items()},
        config.container,
        config.network,
    )


def check_training_runs_again_only_when_what_it_is_changes(plan: Plan) -> None:
    """3. The run gets new triggers only when what it is changes; a timeout or another setting
    does not (nothing else stops a run: the preflight is part of a new run). A new training
    argument does start it again."""
    if not plan.previous:
        return
    assert not any("preflight" in name for name in plan.resources), "no preflight step of its own, which could stop a run"
    if run_identity(plan.before, plan.previous) == run_identity(plan.after, plan.resources):
        old, new = plan.previous[RUN].inputs["triggers"], plan.resources[RUN].inputs["triggers"]
        assert new == old, (
            "training would be stopped and started again though the run is the same: its triggers "
            f"{[t for t in old if t not in new]} would become {[t for t in new if t not in old]}"
        )
    if plan.before.training.workload != plan.after.training.workload:
        assert plan.resources[RUN].inputs["triggers"] != plan.previous[RUN].inputs["triggers"], (
            "a new training argument would not start training again"
        )


def check_undone_host_steps_are_planned_again(plan: Plan) -> None:
    """4b. A host's step the probe finds undone (its shipped image removed) runs again."""
    for host in sorted(plan.image_gone & {h.name for h in plan.after.hosts}):
        name = ship_step_name(host)
        assert plan.resources[name].inputs["create"] != plan.previous[name].inputs["create"], (
            f"{host}'s image is gone and the preview would not ship it again"
        )


def check_a_wiped_hosts_steps_are_planned_again(plan: Plan) -> None:
    """4. A reinstalled host's steps, whose work and marks went with it, all run again (a new
    generation): its swarm membership, its copy of the image, its results directory, the
    engine's bound it keeps, on the manager the run's report; and its claim, a volume the
    refresh finds gone, is still planned for it."""
    for host in sorted(plan.wiped & {h.name for h in plan.after.hosts}):
        for step, name in host_step_names(plan.after, host, image_tag(plan.resources)).items():
            before, after = generation_of(plan.previous, name), generation_of(plan.resources, name)
            assert before is not None and after is not None, f"{host}'s {step} step ({name}) is not a kept step in both runs"
            assert after != before, (
                f"{host} was reinstalled: its {step} is gone, and the preview would not run {name} again "
                f"(generation {before} kept)"
            )
        assert claim_name(host) in plan.resources, f"{host} was reinstalled, and the preview plans no claim of it"


def check_the_preview_is_what_up_does(plan: Plan) -> None:
    """6. `pulumi up` of the same configuration against the same answers registers what the
    preview showed: the same resources with the same inputs, where the preview knew them; or,
    where a host did not answer, it stops before registering anything, naming the host."""
    if plan.silent:
        assert plan.up is None, f"{sorted(plan.silent)} did not answer, and up would go ahead"
        for host in sorted(plan.silent):
            assert f"{host}: {host} (" in plan.up_stopped, f"up stopped without naming {host}: {plan.up_stopped}"
        assert plan.up_stopped.endswith("nothing was changed)"), f"up's stop says what it did: {plan.up_stopped}"
        return
    assert plan.up is not None, f"the preview planned a run, and up would stop: {plan.up_stopped}"
    assert plan.resources.keys() == plan.up.keys(), (
        f"up would register other resources than the preview showed: {sorted(plan.resources.keys() ^ plan.up.keys())}"
    )
    for name in plan.resources:
        shown, done = plan.resources[name], plan.up[name]
        assert shown.type == done.type, f"{name} is a {shown.type} in the preview and a {done.type} in up"
        differences = differences_but_unknowns(shown.inputs, done.inputs)
        assert not differences, f"up would give {name} other inputs than the preview showed: {differences}"


def check_a_silent_host_keeps_its_container(plan: Plan) -> None:
    """5. A preview without a host's answer plans no change to that host's container, nor to
    the overlay it is on (a new network replaces every container on it)."""
    before, after = both_runs(plan)
    for host in sorted(plan.silent & before.keys() & after.keys()):
        fields = changed_fields(before[host].inputs, after[host].inputs)
        assert not fields, f"{host} did not answer, and the preview would replace its container ({', '.join(fields)})"
    if plan.silent and plan.before.network == plan.after.network:
        network = plan.after.network.name
        fields = changed_fields(plan.previous[network].inputs, plan.resources[network].inputs)
        assert not fields, f"{sorted(plan.silent)} did not answer, and the preview would replace the overlay ({', '.join(fields)})"


# --- the edits ---


def set_path(values: dict[str, Any], path: str, value: Any) -> None:
    *parents, key = path.split(".")
    for parent in parents:
        values = values.setdefault(parent, {})
    values[key] = value


def rename(old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(values: dict[str, Any]) -> None:
        next(h for h in values["hosts"] if h["name"] == old)["name"] = new

    return change


def pin(host: str, address: str | None) -> Callable[[dict[str, Any]], None]:
    """HOST's container_address set to ADDRESS (None: removed)."""

    def change(values: dict[str, Any]) -> None:
        entry = next(h for h in values["hosts"] if h["name"] == host)
        if address is None:
            entry.pop("container_address", None)
        else:
            entry["container_address"] = address

    return change


def refused_key(problem: str) -> str:
    """The key a one-line refusal names (`dslab:KEY: what is wrong`)."""
    return problem.split(": ", 1)[0].removeprefix("dslab:")


def assert_refused_in_one_line(error: LabConfigError) -> None:
    assert len(error.problems) == 1, f"one edit, one problem: {error.problems}"
    assert CONFIG_ERROR_LINE.match(error.problems[0]), f"a config error is one line naming its key: {error.problems[0]!r}"


MTUS = st.sampled_from([1400, 1500, 9000])
SECONDS = st.sampled_from([600, 30, 0, 1, -1])
"""Timeouts: 1 is too short for operator.host_timeout (at least 5), -1 for any."""
REFUSED_PINS = ("10.0.3.1", "10.0.3.5", "10.0.4.9")
"""The gateway, an address inside ip_range, one outside the subnet: validation refuses each."""


class LabEdits(RuleBasedStateMachine):
    """A dev stack edited, its servers wiped, silent or robbed of their image, one step at a
    time, each step previewed (and applied unless a host was silent)."""

    model: LabModel
    plan: Plan
    next_index: int

    @initialize(hosts=st.integers(min_value=2, max_value=4), mtus=st.lists(MTUS, min_size=4, max_size=4))
    def a_new_stack_is_brought_up(self, hosts: int, mtus: list[int]) -> None:
        self.model = LabModel.new(hosts, {f"10.0.18.{index + 1}": mtu for index, mtu in enumerate(mtus)})
        self.next_index = hosts + 1
        self.run()

    def run(self, silent: Collection[str] = ()) -> None:
        self.plan = self.model.preview(silent)
        if not silent:
            self.model.up(self.plan)

    def edit(self, change: Callable[[dict[str, Any]], None]) -> None:
        """CHANGE previewed and applied; or refused by validation, as `pulumi preview` would
        refuse it before the program plans anything (nothing runs then); or refused by the
        address plan, against what the hosts hold (the user then takes the edit back). Either
        refusal only where the rules (plan_world.broken_rules, pins_held_elsewhere) say the
        edit breaks one, for that key; and every edit that breaks one is refused."""
        before, values = self.model.config, self.model.values
        proposed = copy.deepcopy(values)
        change(proposed)
        broken = broken_rules(proposed)
        error = self.model.edit(change)
        if error is not None:
            assert_refused_in_one_line(error)
            assert self.model.config is before, "a refused edit leaves the configuration as it was"
            refused = [refused_key(problem) for problem in error.problems]
            assert broken, f"an edit that breaks no rule is refused: {error.problems}"
            assert refused == broken, f"an edit that breaks {broken} is refused for {refused}: {error.problems}"
            return
        assert not broken, f"an edit that breaks {broken} is taken"
        held = pins_held_elsewhere(proposed, self.model.machines)
        try:
            self.run()
        except pulumi.RunError as refused:
            assert CONFIG_ERROR_LINE.match(str(refused)), f"a plan refused is one line naming its key: {refused}"
            assert held, f"a plan no pin of which another container holds is refused: {refused}"
            assert refused_key(str(refused)) in held, f"a plan with pins held elsewhere ({held}) is refused for another key: {refused}"
            self.model.values, self.model.config = values, before
            return
        assert not held, f"pins on addresses other containers hold ({held}) are taken"

    def names(self) -> list[str]:
        return [host.name for host in self.model.config.hosts]

    # --- edits ---

    @precondition(lambda self: len(self.model.config.hosts) < 4)
    @rule(position=st.integers(min_value=0, max_value=4), mtu=MTUS, batch_forgotten=st.booleans())
    def add_a_host(self, position: int, mtu: int, batch_forgotten: bool) -> None:
        index, self.next_index = self.next_index, self.next_index + 1
        address = f"10.0.18.{index}"
        self.model.add_server(address, mtu)

        def change(values: dict[str, Any]) -> None:
            host = {"name": f"server{index}", "address": address, "role": "worker", "ssh_user": "root", "gpus": "none"}
            values["hosts"].insert(position, host)
            if not batch_forgotten:  # else validation refuses the batch size
                values["training"]["deepspeed"]["train_batch_size"] = batch_size_for(values)

        self.edit(change)

    @precondition(lambda self: len(self.model.config.hosts) > 2)
    @rule(which=st.integers(min_value=0, max_value=3), batch_forgotten=st.booleans())
    def remove_a_worker(self, which: int, batch_forgotten: bool) -> None:
        workers = [host.name for host in self.model.config.workers]
        gone = workers[which % len(workers)]

        def change(values: dict[str, Any]) -> None:
            values["hosts"] = [host for host in values["hosts"] if host["name"] != gone]
            if not batch_forgotten:  # else validation refuses the batch size
                values["training"]["deepspeed"]["train_batch_size"] = batch_size_for(values)

        self.edit(change)

    @rule(order=st.permutations(range(4)))
    def reorder_the_hosts(self, order: list[int]) -> None:
        count = len(self.model.config.hosts)
        self.edit(lambda values: values.update(hosts=[values["hosts"][index] for index in order if index < count]))

    @rule(which=st.integers(min_value=0, max_value=3))
    def rename_a_host_at_the_same_address(self, which: int) -> None:
        old = self.names()[which % len(self.names())]
        new, self.next_index = f"server{self.next_index}", self.next_index + 1
        self.edit(rename(old, new))

    @rule(which=st.integers(min_value=0, max_value=3), choice=st.integers(min_value=0, max_value=11))
    def pin_a_container_address(self, which: int, choice: int) -> None:
        host = self.names()[which % len(self.names())]
        network = self.model.config.network
        candidates = static_candidates(network.subnet, network.effective_ip_range, network.gateway)
        # Those another host's container holds among them: refused by the address plan.
        choices = [None, *REFUSED_PINS, *(str(a) for _, a in zip(range(8), candidates))]
        self.edit(pin(host, choices[choice % len(choices)]))

    @rule(mtu=st.sampled_from([None, 1280, 1400, 1450, 8950, 100]))
    def set_the_network_mtu(self, mtu: int | None) -> None:
        self.edit(lambda values: values["network"].update(mtu=mtu) if mtu else values["network"].pop("mtu", None))

    @rule(steps=st.sampled_from([10, 20, 30]), lr=st.sampled_from([None, "0.001"]))
    def change_a_training_argument(self, steps: int, lr: str | None) -> None:
        args = ["--steps", str(steps), *(["--lr", lr] if lr else [])]
        self.edit(lambda values: set_path(values, "training.workload.args", args))

    @rule(size=st.sampled_from(["2G", "512M", "1G", "1.5X"]))
    def change_the_shm_size(self, size: str) -> None:
        self.edit(lambda values: set_path(values, "container.shm_size", size))

    @rule(seconds=SECONDS)
    def change_the_host_timeout(self, seconds: int) -> None:
        self.edit(lambda values: set_path(values, "operator.host_timeout", seconds))

    @rule(seconds=SECONDS)
    def change_the_stall_timeout(self, seconds: int) -> None:
        self.edit(lambda values: set_path(values, "training.stall_timeout", seconds))

    @rule(wait=st.booleans(), resume=st.sampled_from(["auto", "never"]), min_busbw=st.sampled_from([0.0, 0.5, 5.0]))
    def change_how_the_run_is_watched(self, wait: bool, resume: str, min_busbw: float) -> None:
        def change(values: dict[str, Any]) -> None:
            set_path(values, "training.wait", wait)
            set_path(values, "training.resume", resume)
            set_path(values, "training.preflight.min_busbw_gbps", min_busbw)

        self.edit(change)

    @rule(seconds=SECONDS)
    def change_the_reach_timeout(self, seconds: int) -> None:
        self.edit(lambda values: set_path(values, "training.preflight.reach_timeout", seconds))

    @rule()
    def preview_again_with_nothing_changed(self) -> None:
        self.run()

    # --- what happens to the servers ---

    @rule(which=st.integers(min_value=0, max_value=3))
    def a_host_is_reinstalled(self, which: int) -> None:
        self.model.wipe(self.names()[which % len(self.names())])
        self.run()

    @precondition(lambda self: not self.plan.silent)  # one preview without an answer at a time: it changes nothing
    @rule(which=st.integers(min_value=0, max_value=3))
    def a_host_does_not_answer(self, which: int) -> None:
        self.run(silent=[self.names()[which % len(self.names())]])

    def shipped(self) -> list[str]:
        """Hosts holding a shipped copy of the image (not the one it was built on)."""
        machines = self.model.machines
        return [
            h.name
            for h in self.model.config.hosts
            if any(step.startswith(f"{IMAGE_STEP}-") for step in machines[h.address].host_steps) and machines[h.address].images
        ]

    @precondition(lambda self: self.shipped())
    @rule(which=st.integers(min_value=0, max_value=3))
    def a_shipped_image_is_removed(self, which: int) -> None:
        self.model.remove_image(self.shipped()[which % len(self.shipped())])
        self.run()

    # --- what holds after every step ---

    @invariant()
    def an_unchanged_stack_plans_nothing(self) -> None:
        check_nothing_changed_plans_nothing(self.plan)

    @invariant()
    def container_addresses_are_unique(self) -> None:
        check_container_addresses_are_unique(self.plan)

    def without_evidence(self) -> frozenset[str]:
        """Hosts whose server was reinstalled: their container is made anew, at the lowest free
        address (tested apart: test_a_reinstalled_host_gets_its_own_address_back)."""
        return self.plan.wiped

    def made_anew(self) -> frozenset[str]:
        """Hosts whose container is made anew: the reinstalled ones, and every host when the
        manager was (a new swarm, a new overlay)."""
        if self.plan.after.manager.name in self.plan.wiped:
            return frozenset(host.name for host in self.plan.after.hosts)
        return self.plan.wiped

    @invariant()
    def a_hosts_address_changes_only_with_its_own_pin(self) -> None:
        check_addresses_stay_with_their_hosts(self.plan, exempt=self.without_evidence())

    @invariant()
    def a_container_changes_only_with_its_own_settings(self) -> None:
        check_containers_change_only_with_their_own_settings(self.plan, exempt=self.made_anew())

    @invariant()
    def a_wiped_hosts_steps_are_done_again(self) -> None:
        check_a_wiped_hosts_steps_are_planned_again(self.plan)

    @invariant()
    def a_silent_host_keeps_its_container(self) -> None:
        check_a_silent_host_keeps_its_container(self.plan)

    @invariant()
    def training_runs_again_only_when_what_it_is_changes(self) -> None:
        check_training_runs_again_only_when_what_it_is_changes(self.plan)

    @invariant()
    def a_step_found_undone_is_planned_again(self) -> None:
        check_undone_host_steps_are_planned_again(self.plan)

    @invariant()
    def up_does_what_the_preview_showed(self) -> None:
        check_the_preview_is_what_up_does(self.plan)

    def check_what_holds(self) -> None:
        """Every invariant above, as Hypothesis checks them after each step."""
        self.an_unchanged_stack_plans_nothing()
        self.container_addresses_are_unique()
        self.a_hosts_address_changes_only_with_its_own_pin()
        self.a_container_changes_only_with_its_own_settings()
        self.training_runs_again_only_when_what_it_is_changes()
        self.a_step_found_undone_is_planned_again()
        self.a_wiped_hosts_steps_are_done_again()
        self.a_silent_host_keeps_its_container()
        self.up_does_what_the_preview_showed()


TestEditsAndAnswersKeepWhatTheUserReliesOn = LabEdits.TestCase

ONE_OF_EACH: list[tuple[str, dict[str, Any]]] = [
    ("a_new_stack_is_brought_up", {"hosts": 3, "mtus": [1500, 9000, 1400, 1500]}),
    ("change_a_training_argument", {"steps": 30, "lr": "0.001"}),
    ("change_the_host_timeout", {"seconds": 600}),
    ("change_the_stall_timeout", {"seconds": 600}),
    ("change_the_reach_timeout", {"seconds": 30}),
    ("change_how_the_run_is_watched", {"wait": False, "resume": "never", "min_busbw": 5.0}),
    ("change_the_shm_size", {"size": "2G"}),
    ("change_the_shm_size", {"size": "1.5X"}),  # refused
    ("set_the_network_mtu", {"mtu": 1400}),
    ("reorder_the_hosts", {"order": [2, 0, 1, 3]}),
    ("add_a_host", {"position": 0, "mtu": 1500, "batch_forgotten": True}),  # refused
    ("add_a_host", {"position": 0, "mtu": 1500, "batch_forgotten": False}),
    ("remove_a_worker", {"which": 1, "batch_forgotten": False}),
    ("rename_a_host_at_the_same_address", {"which": 2}),
    ("pin_a_container_address", {"which": 1, "choice": 11}),  # 10.0.3.135, which nobody holds
    ("a_shipped_image_is_removed", {"which": 0}),
    ("a_host_is_reinstalled", {"which": 1}),
    ("a_host_does_not_answer", {"which": 0}),
    ("preview_again_with_nothing_changed", {}),
]
"""Every rule at least once, with values validation takes (and two it refuses)."""


def test_one_of_each_edit_and_answer_in_turn_keeps_what_the_user_relies_on() -> None:
    # Whatever the fast profile's few examples draw, every edit and answer is seen in the fast tier.
    machine = LabEdits()
    for step, arguments in ONE_OF_EACH:
        getattr(machine, step)(**arguments)
        machine.check_what_holds()
    config = machine.model.config
    assert config.container.shm_size == "2G" and config.network.mtu == 1400, "each valid edit was taken"
    assert [host.name for host in config.hosts] == ["server5", "server1", "server6"], "and each host edit"
    assert config.hosts[1].container_address is not None, "the pin too"


# --- sequences Hypothesis found breaking an invariant once, each the shortest ---


def edited(model: LabModel, change: Callable[[dict[str, Any]], None]) -> None:
    """CHANGE, taken by validation (a refusal fails the test: the sequence no longer runs)."""
    error = model.edit(change)
    if error is not None:
        pytest.fail(f"the sequence's edit is refused: {error}")


def applied(model: LabModel, change: Callable[[dict[str, Any]], None]) -> None:
    """CHANGE taken by validation, previewed and applied."""
    edited(model, change)
    model.up(model.preview())


def test_a_reinstalled_hosts_steps_are_all_done_again() -> None:
    model = LabModel.running(hosts=2)
    model.wipe("server2")
    check_a_wiped_hosts_steps_are_planned_again(model.preview())


def test_a_reinstalled_manager_makes_every_worker_join_its_new_swarm() -> None:
    model = LabModel.running(hosts=3)
    model.wipe("server1")
    plan = model.preview()
    check_a_wiped_hosts_steps_are_planned_again(plan)
    for worker in ("server2", "server3"):
        join = swarm_step_name(plan.after, worker)
        assert plan.resources[join].inputs["create"] != plan.previous[join].inputs["create"], f"{worker} joins again"


def test_a_preview_without_a_hosts_answer_replaces_nothing_of_that_host() -> None:
    model = LabModel.running(hosts=2)
    plan = model.preview(silent=["server2"])
    check_a_silent_host_keeps_its_container(plan)
    check_the_preview_is_what_up_does(plan)


def test_up_may_fill_in_what_the_preview_did_not_know_but_not_change_what_it_showed() -> None:
    shown = {"create": Unknown(), "labels": [{"label": "node", "value": Unknown()}], "name": "x", "env": Unknown()}
    done = {"create": "bash -s", "labels": [{"label": "node", "value": "n1"}], "name": "x"}
    assert differences_but_unknowns(shown, done) == [], "unknowns match anything up gives, or nothing"
    assert differences_but_unknowns({**shown, "name": "y"}, done) == [".name: y != x"], "a known value is kept"
    assert differences_but_unknowns(shown, {**done, "mounts": []}) == [".mounts: (absent) != []"], "nothing added"
    labels = [{"label": "node", "value": "n2"}]
    assert differences_but_unknowns({**done, "labels": labels}, done) == [".labels[0].value: n2 != n1"]


def test_pinning_the_address_another_host_holds_is_refused_naming_both_hosts() -> None:
    model = LabModel.running(hosts=2)
    server2 = model.machines["10.0.18.2"].container
    if server2 is None:
        pytest.fail("server2 holds no container after its first up")
    edited(model, pin("server1", server2.address))
    with pytest.raises(pulumi.RunError) as refused:
        model.preview()
    assert str(refused.value) == (
        f"dslab:hosts[0].container_address: {server2.address} is held now by the container of host 'server2'; "
        f"pin 'server2' to another address (or leave 'server1' unpinned) and run pulumi up, then pin 'server1' to "
        f"{server2.address}"
    )


def test_a_reinstalled_host_gets_its_own_address_back() -> None:
    model = LabModel.running(hosts=2)
    # A new name for the same server: the renamed host keeps the address its container holds.
    applied(model, rename("server1", "server3"))
    model.wipe("server3")
    plan = model.preview()
    check_addresses_stay_with_their_hosts(plan)
    check_containers_change_only_with_their_own_settings(plan)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("training.stall_timeout", 0),
        ("training.wait", False),
        ("training.resume", "never"),
        ("training.results_on_destroy", "remove"),
        ("training.preflight.min_busbw_gbps", 5.0),
        ("training.preflight.reach_timeout", 90),
        ("operator.host_timeout", 45),
    ],
)
def test_how_a_run_is_watched_starts_no_new_training_run(path: str, value: Any) -> None:
    model = LabModel.running(hosts=2)
    edited(model, lambda values: set_path(values, path, value))
    plan = model.preview()
    check_training_runs_again_only_when_what_it_is_changes(plan)
    assert plan.resources[RUN].inputs["triggers"] == plan.previous[RUN].inputs["triggers"], f"{path} makes a new run"
