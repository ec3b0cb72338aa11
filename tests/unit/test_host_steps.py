"""The verdicts on the steps done on a host itself (components.hosts.host_steps), from what the
probe read (components.hosts.probe.parse_answers): each fact present, absent, or unreadable (the
host did not answer), and the generation the step's Command runs with from each."""

from __future__ import annotations

import pytest

from components.config import Host
from components.hosts.host_steps import (
    Verdict,
    host_timeout_verdict,
    image_verdict,
    next_generation,
    results_verdict,
    swarm_verdict,
)
from components.hosts.probe import HostFacts, parse_answers

FRESH = 1765000000000000
HOSTS = [Host(name="server1", address="10.0.18.1"), Host(name="server2", address="10.0.18.2")]
MANAGER_SWARM = (
    "server1 swarm-node m1 manager\n"
    "server1 swarm-manager m1 10.0.18.1:2377\n"
    "server1 swarm-member m1 10.0.18.1\n"
    "server1 swarm-member w2 10.0.18.2\n"
)
WORKER_SWARM = "server2 swarm-node w2 worker\nserver2 swarm-manager m1 10.0.18.1:2377\n"


def facts(answers: str) -> HostFacts:
    return parse_answers(answers, HOSTS, "known_hosts", want_mtu=False, fresh_generation=FRESH)


def worker_verdict(answers: str) -> Verdict:
    return swarm_verdict(facts(answers), "server2", "server1", "10.0.18.1")


# --- the generation -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mark", "done", "generation"),
    [
        (4, True, 4),  # as it left it: nothing to run
        (4, False, 5),  # its work gone: runs again in place, once
        (None, True, FRESH),  # no mark (never done here, or wiped): runs, whatever it finds
        (None, False, FRESH),
    ],
)
def test_a_step_keeps_its_generation_only_while_its_mark_and_its_work_are_both_there(
    mark: int | None, done: bool, generation: int
) -> None:
    assert next_generation(mark, Verdict(done), FRESH) == generation


def test_the_host_keeps_each_steps_generation_under_its_own_name() -> None:
    read = facts("server2 host-step swarm 7\nserver2 host-step image-0abc 3\nserver2 host-step results x\n")
    assert read.host_marks == {("server2", "swarm"): 7, ("server2", "image-0abc"): 3}, (
        "a mark that is no number is none"
    )


# --- the image ---------------------------------------------------------------------------------


def test_an_image_copy_is_done_while_the_host_holds_its_tag() -> None:
    read = facts("server2 image dslab/train:abc sha256:0abc\n")
    assert image_verdict(read, "server2", "dslab/train:abc").done
    assert image_verdict(read, "server2", "dslab/train:new") == Verdict(
        False, "image dslab/train:new is not on the host"
    )
    assert not image_verdict(read, "server1", "dslab/train:abc").done, "absent from the answer: not done"


# --- the engine's bound ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "verdict"),
    [
        ("server2 host-timeout 60\n", Verdict(True)),
        ("server2 host-timeout 90\n", Verdict(False, "it keeps 90 s")),  # edited by hand, or another setting
        ("server2 host-timeout x\n", Verdict(False, "it keeps no bound")),  # no number: none
        ("", Verdict(False, "it keeps no bound")),  # wiped, or never done: missing evidence is not done
    ],
)
def test_the_engines_bound_is_done_only_while_the_host_keeps_the_stacks(answers: str, verdict: Verdict) -> None:
    assert host_timeout_verdict(facts(answers), "server2", 60) == verdict


# --- the results directory ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "done"), [("writable", True), ("read-only", False), ("absent", False), (None, False)]
)
def test_the_results_directory_is_done_only_while_it_is_there_and_writable(state: str | None, done: bool) -> None:
    read = facts(f"server1 results {state}\n" if state else "")
    verdict = results_verdict(read, "server1", "/var/lib/dslab/runs")
    assert verdict.done is done
    if not done:
        assert verdict.missing == f"/var/lib/dslab/runs is {state or 'absent'}"


# --- the swarm ---------------------------------------------------------------------------------


def test_the_manager_is_done_while_its_engine_manages_a_swarm() -> None:
    assert swarm_verdict(facts(MANAGER_SWARM), "server1", "server1", "10.0.18.1").done
    assert swarm_verdict(facts(""), "server1", "server1", "10.0.18.1") == Verdict(False, "its engine is in no swarm")
    as_worker = swarm_verdict(facts("server1 swarm-node m1 worker\n"), "server1", "server1", "10.0.18.1")
    assert as_worker == Verdict(False, "its engine is no swarm manager")


def test_a_worker_is_done_while_it_is_in_the_managers_swarm_and_listed_by_it() -> None:
    assert worker_verdict(MANAGER_SWARM + WORKER_SWARM).done


def test_a_worker_whose_manager_was_made_anew_at_the_same_address_is_not_done() -> None:
    # The manager's machine reinstalled: a new swarm, a new manager node, the same address.
    remade = MANAGER_SWARM.replace("m1", "m2")
    assert worker_verdict(remade + WORKER_SWARM) == Verdict(False, "it is not in the swarm of server1 (10.0.18.1)")


def test_a_worker_the_manager_no_longer_lists_is_not_done() -> None:
    forgotten = MANAGER_SWARM.replace("server1 swarm-member w2 10.0.18.2\n", "")
    assert not worker_verdict(forgotten + WORKER_SWARM).done


def test_a_worker_whose_manager_has_no_swarm_is_not_done() -> None:
    assert worker_verdict(WORKER_SWARM) == Verdict(False, "the manager server1 has no swarm for it to be in")


def test_a_worker_outside_any_swarm_or_managing_its_own_is_not_done() -> None:
    assert worker_verdict(MANAGER_SWARM) == Verdict(False, "its engine is in no swarm")
    own = "server2 swarm-node w2 manager\n"
    assert worker_verdict(MANAGER_SWARM + own) == Verdict(False, "its engine manages a swarm of its own")


def test_a_worker_whose_manager_did_not_answer_is_judged_by_what_it_knows_itself() -> None:
    silent = "server1 silent 90\n"
    assert worker_verdict(silent + WORKER_SWARM).done
    elsewhere = WORKER_SWARM.replace("10.0.18.1:2377", "10.0.99.1:2377")
    assert not worker_verdict(silent + elsewhere).done


def test_a_host_that_did_not_answer_keeps_the_node_and_the_address_the_others_see() -> None:
    read = facts(
        MANAGER_SWARM + "server1 in-use 10.0.3.128 10.0.18.1\nserver1 in-use 10.0.3.129 10.0.18.2\nserver2 silent 90\n"
    )
    assert read.addresses == {"server2": "10.0.3.129"}
    assert swarm_verdict(read, "server2", "server1", "10.0.18.1").done
    assert read.swarm_nodes["server2"].node_id == "w2"
    unknown = facts("server1 swarm-node m1 manager\nserver2 silent 90\n")
    assert "server2" not in unknown.swarm_nodes and not unknown.addresses, "nobody saw it: nothing is assumed"
