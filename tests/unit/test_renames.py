"""A host renamed on the same machine (components.hosts.renames, components.hosts.probe): found
from the container the machine holds, and every resource of the new name aliased to the old
name's, so that `up` takes them over rather than making a second set beside them."""

from __future__ import annotations

import pulumi
import pytest

from components.config import Host
from components.hosts.probe import parse_answers
from components.hosts.renames import old_name, taken_over_from_old_names

RESOURCES_OF_SERVER3 = [
    "lab-claim-server3", "lab-image-server3-ship", "lab-mesh-server3-keys", "lab-mesh-server3-trust",
    "lab-results-server3", "lab-server3", "lab-swarm-server3-join", "lab-swarm-server3-membership",
    "lab-training-server3-files", "server3-docker", "server3-llm",
]  # fmt: skip


def test_the_machine_holding_the_container_of_a_host_no_longer_listed_is_that_host_renamed() -> None:
    hosts = [Host(name="server1", address="10.0.18.1"), Host(name="server3", address="10.0.18.2")]
    facts = parse_answers(
        "server1 held server1 10.0.3.128\nserver3 held server2 10.0.3.129\n", hosts, "known_hosts", want_mtu=False
    )
    assert facts.renamed == {"server3": "server2"}
    assert facts.addresses == {"server1": "10.0.3.128", "server3": "10.0.3.129"}, "it keeps its address"
    # A container labelled with a host still listed is that host's (a move), not a rename.
    moved = parse_answers("server3 held server1 10.0.3.128\n", hosts, "known_hosts", want_mtu=False)
    assert moved.renamed == {} and moved.in_use == {"10.0.3.128"}


def test_every_resource_of_the_new_name_is_the_old_names_and_no_other_resource_is() -> None:
    renamed = {"server3": "server2"}
    assert [old_name(name, renamed) for name in RESOURCES_OF_SERVER3] == [
        name.replace("server3", "server2") for name in RESOURCES_OF_SERVER3
    ]
    for other in ("lab", "lab-mesh-reach", "lab-training-run", "lab-server30", "lab-swarm-server1-init", "test-net"):
        assert old_name(other, renamed) is None, other
    assert old_name("lab-gpu-a-1-join", {"gpu-a-1": "gpu-b"}) == "lab-gpu-b-join", "names with dashes"


@pytest.mark.parametrize("kept", [None, [pulumi.Alias(name="earlier")]])
def test_the_transformation_adds_the_old_name_as_an_alias_and_keeps_the_resources_own(
    kept: list[pulumi.Alias] | None,
) -> None:
    transform = taken_over_from_old_names({"server3": "server2"})
    props = {"name": "llm"}
    args = pulumi.ResourceTransformationArgs(
        resource=None, type_="docker:index/container:Container", name="server3-llm", props=props,  # type: ignore[arg-type]
        opts=pulumi.ResourceOptions(aliases=kept, delete_before_replace=True),
    )  # fmt: skip
    result = transform(args)
    assert result is not None and result.props is props
    assert result.opts.delete_before_replace is True
    assert [alias.name for alias in result.opts.aliases or []] == [*(a.name for a in kept or []), "server2-llm"]  # type: ignore[union-attr]
    other = pulumi.ResourceTransformationArgs(
        resource=None, type_="command:remote:Command", name="lab-training-run", props={}, opts=pulumi.ResourceOptions(),  # type: ignore[arg-type]
    )  # fmt: skip
    assert transform(other) is None
