"""Which results directory the containers mount (components.hosts.results_mount), from what the
probe read (components.hosts.probe.parse_answers): training.results_dir, except while the run of
these inputs is still going in the directory the containers mount now."""

from __future__ import annotations

import re

import pytest

from components.config import Host
from components.hosts.probe import parse_answers
from components.hosts.results_mount import ResultsMount, results_mount
from components.paths import ASSETS_DIR
from components.render.results import RESULTS_MOUNT

HOSTS = [Host(name="server1", address="10.0.18.1"), Host(name="server2", address="10.0.18.2")]
SUFFIX = "0a1b2c3d-0123456789ab"
RUN = f"20261206T120000.000Z-{SUFFIX}"


def mount_for(answers: str, configured: str = "/srv/new") -> ResultsMount:
    facts = parse_answers(answers, HOSTS, "known_hosts", want_mtu=False)
    return results_mount(facts, "server1", configured, SUFFIX)


def test_a_run_going_in_the_mounted_directory_keeps_it_until_it_ends() -> None:
    going = f"server1 results-mount /srv/old dir\nserver1 run {RUN} running\nserver1 run-alive\n"
    assert mount_for(going) == ResultsMount("/srv/old dir", kept_for=RUN), "a path with a space, whole"
    ended = f"server1 results-mount /srv/old dir\nserver1 run {RUN} succeeded\n"
    assert mount_for(ended) == ResultsMount("/srv/new")


@pytest.mark.parametrize(
    "answers",
    [
        # the run says running, but run-deepspeed.sh is gone (its container stopped)
        f"server1 results-mount /srv/old\nserver1 run {RUN} running\n",
        # a run of other inputs: the new run stops it anyway
        "server1 results-mount /srv/old\nserver1 run 20261206T120000.000Z-0a1b2c3d-ffffffffffff running\nserver1 run-alive\n",
        # the containers already mount the configured directory
        f"server1 results-mount /srv/new\nserver1 run {RUN} running\nserver1 run-alive\n",
        # no container (a wiped manager), or a manager that did not answer
        "",
        # a worker's mount says nothing of the manager's run
        f"server2 results-mount /srv/old\nserver1 run {RUN} running\nserver1 run-alive\n",
    ],
)
def test_otherwise_the_configured_directory(answers: str) -> None:
    assert mount_for(answers) == ResultsMount("/srv/new")


def test_the_probe_looks_for_the_mount_the_containers_are_made_with() -> None:
    script = (ASSETS_DIR / "host" / "host-facts.sh").read_text()
    found = re.search(r"^RESULTS_MOUNT=(\S+)", script, re.MULTILINE)
    assert found is not None and found.group(1) == RESULTS_MOUNT
