"""Whether a step done on a host itself (its swarm membership, an image copy, its results
directory) is still done, judged from what the hosts' probe read on the host now
(components.hosts.probe), and the generation its Command runs with.

Missing evidence means "not done": a reinstalled or wiped machine answers with nothing, and
every step of it runs again. The host keeps only the generation a step last ran with (its mark,
assets/host/lib/step-mark.sh), never whether the work is there: that is read every time.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi

from components.hosts.probe import HostFacts

SWARM_PORT = 2377


@dataclass(frozen=True)
class Verdict:
    """A step's work as found on its host."""

    done: bool
    missing: str = ""
    """What is not there, when not done."""


DONE = Verdict(True)


def next_generation(mark: int | None, verdict: Verdict, fresh: int) -> int:
    """The generation the step's Command runs with: the one it last ran with while its work is
    there; the next one when not, which runs the Command again in place, once; a fresh one when
    the host kept no mark (wiped, or never done), which no earlier run can have used."""
    if mark is None:
        return fresh
    return mark if verdict.done else mark + 1


def image_verdict(facts: HostFacts, host: str, tag: str) -> Verdict:
    """An image copy is done while the host holds its tag."""
    if tag in facts.images.get(host, {}):
        return DONE
    return Verdict(False, f"image {tag} is not on the host")


def results_verdict(facts: HostFacts, host: str, results_dir: str) -> Verdict:
    """The results directory is done while it is there and writable."""
    state = facts.results.get(host, "absent")
    return DONE if state == "writable" else Verdict(False, f"{results_dir} is {state}")


def host_timeout_verdict(facts: HostFacts, host: str, seconds: int) -> Verdict:
    """The engine's bound is done while the host keeps the stack's `operator.host_timeout`."""
    kept = facts.host_timeouts.get(host)
    if kept == seconds:
        return DONE
    return Verdict(False, f"it keeps {kept} s" if kept is not None else "it keeps no bound")


def run_report_verdict(facts: HostFacts, host: str) -> Verdict:
    """The training step's report is done while what it last reported on HOST (the manager) is
    the last run's state as the run wrote it: a background run that ended since is reported
    again (the step's update starts and stops nothing)."""
    run = facts.last_runs.get(host)
    current = (run.name, run.state) if run is not None else ("-", "none")
    reported = facts.reported.get(host)
    if reported is None or reported == current:
        return DONE
    return Verdict(False, f"the training run {current[0]} is {current[1]} since it was last reported {reported[1]}")


def swarm_verdict(facts: HostFacts, host: str, manager: str, manager_address: str) -> Verdict:
    """The manager is done while its engine manages a swarm; a worker while it is a worker whose
    managers include the manager host's node at MANAGER_ADDRESS (its address) and, where the
    manager answered, the manager lists it among its nodes."""
    node = facts.swarm_nodes.get(host)
    if node is None:
        return Verdict(False, "its engine is in no swarm")
    if host in facts.problems:
        return DONE  # it did not answer, and the manager lists its node: as it stands
    if host == manager:
        return DONE if node.manager else Verdict(False, "its engine is no swarm manager")
    if node.manager:
        return Verdict(False, "its engine manages a swarm of its own")
    leader = facts.swarm_nodes.get(manager)
    if leader is None or not leader.manager:
        # A manager that answered with no swarm has none any more; one that did not answer
        # leaves the worker's own view.
        if manager not in facts.problems:
            return Verdict(False, f"the manager {manager} has no swarm for it to be in")
        in_place = any(address == f"{manager_address}:{SWARM_PORT}" for _, address in node.managers)
    else:
        in_place = (leader.node_id, f"{manager_address}:{SWARM_PORT}") in node.managers and (
            not leader.members or node.node_id in {node_id for node_id, _ in leader.members}
        )
    return DONE if in_place else Verdict(False, f"it is not in the swarm of {manager} ({manager_address})")


class HostSteps:
    """The generations of the steps done on the hosts, each judged once, a step found undone
    said once in the log."""

    def __init__(self, facts: HostFacts) -> None:
        self.facts = facts

    def generation(self, host: str, step: str, verdict: Verdict) -> int:
        """The generation STEP's Command on HOST runs with; STEP names its mark on the host."""
        mark = self.facts.host_marks.get((host, step))
        if host not in self.facts.problems and not verdict.done:
            pulumi.log.info(f"{host}: {step} is not done ({verdict.missing}); up does it again")
        return next_generation(mark, verdict, self.facts.fresh_generation)

    def swarm_node(self, host: str, verdict: Verdict) -> str | None:
        """The node id HOST has in the swarm, known before anything runs, when it is in it as
        it should be (the verdict); None when its swarm step has yet to (re)make it."""
        node = self.facts.swarm_nodes.get(host)
        return node.node_id if node is not None and verdict.done else None
