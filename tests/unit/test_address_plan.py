"""The address plan keeps each host's address whatever the host list's order, and the
answers of the hosts that tell it which addresses the containers hold (the scripts run with
stand-in ssh, ip and docker)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from components.config.address_plan import AddressPlan, AddressPlanError, plan_addresses
from components.config import Host
from components.hosts.probe import ASK_SCRIPT, HOST_SCRIPT, parse_answers
from tests.support.probe_stand_ins import stand_ins

SUBNET = "10.0.3.0/24"


def addresses(plan: AddressPlan) -> dict[str, str]:
    return dict(plan.container_addresses)


def held_after(*hosts: str, subnet: str = SUBNET) -> dict[str, str]:
    """What a new stack of HOSTS (in that order) gives its containers: what they hold next time."""
    return addresses(plan_addresses(subnet, [(host, None) for host in hosts]))


def test_a_new_stack_numbers_its_hosts_in_list_order_from_the_upper_half() -> None:
    assert held_after("server1", "server2") == {"server1": "10.0.3.128", "server2": "10.0.3.129"}


def test_a_host_inserted_at_the_front_takes_a_free_address_and_moves_nobody() -> None:
    held = held_after("server1", "server2")
    plan = plan_addresses(SUBNET, [("server0", None), ("server1", None), ("server2", None)], held=held)
    assert addresses(plan) == {"server0": "10.0.3.130", "server1": "10.0.3.128", "server2": "10.0.3.129"}


def test_removing_the_first_worker_moves_nobody_and_its_address_is_not_given_while_in_use() -> None:
    held = held_after("server1", "server2", "server3")
    # server2's container is still on the overlay until `up` removes it, at its end.
    plan = plan_addresses(
        SUBNET, [("server1", None), ("server3", None), ("server4", None)], held=held, in_use={held["server2"]}
    )
    assert addresses(plan) == {"server1": "10.0.3.128", "server3": "10.0.3.130", "server4": "10.0.3.131"}
    # Once it is gone, a later new host may have it.
    remaining = {host: address for host, address in held.items() if host != "server2"}
    later = plan_addresses(SUBNET, [("server1", None), ("server3", None), ("server5", None)], held=remaining)
    assert addresses(later)["server5"] == "10.0.3.129"


def test_reordering_the_list_changes_no_address() -> None:
    held = held_after("server1", "server2", "server3")
    plan = plan_addresses(SUBNET, [("server3", None), ("server1", None), ("server2", None)], held=held)
    assert addresses(plan) == held
    assert [name for name, _ in plan.container_addresses] == ["server3", "server1", "server2"], "list order kept"


def test_a_pin_on_the_address_another_host_holds_is_refused_naming_both_and_the_fix() -> None:
    # Both containers would be replaced in one run, in no order, racing for the address.
    held = held_after("server1", "server2")
    with pytest.raises(AddressPlanError) as refused:
        plan_addresses(SUBNET, [("server1", None), ("server2", "10.0.3.128")], held=held)
    assert refused.value.path == "hosts[1].container_address"
    assert str(refused.value) == (
        "10.0.3.128 is held now by the container of host 'server1'; pin 'server1' to another address "
        "(or leave 'server2' unpinned) and run pulumi up, then pin 'server2' to 10.0.3.128"
    )


def test_a_pin_on_the_address_a_leaving_host_holds_is_refused_until_it_has_left() -> None:
    with pytest.raises(AddressPlanError, match=r"^10.0.3.129 is held now by the container of a host that leaves"):
        plan_addresses(SUBNET, [("server1", "10.0.3.129")], held={"server1": "10.0.3.128"}, in_use={"10.0.3.129"})


def test_a_pin_moves_its_own_host_when_nobody_else_holds_the_address() -> None:
    held = held_after("server1", "server2")
    plan = plan_addresses(SUBNET, [("server1", None), ("server2", "10.0.3.140")], held=held)
    assert addresses(plan) == {"server1": "10.0.3.128", "server2": "10.0.3.140"}


def test_a_held_address_the_plan_cannot_keep_is_given_anew() -> None:
    # Outside a new subnet, inside the dynamic range, or the same as another host's.
    held = {"a": "10.9.9.200", "b": "10.0.3.5", "c": "10.0.3.140", "d": "10.0.3.140"}
    plan = plan_addresses(SUBNET, [("a", None), ("b", None), ("c", None), ("d", None)], held=held)
    assert addresses(plan) == {"a": "10.0.3.128", "b": "10.0.3.129", "c": "10.0.3.140", "d": "10.0.3.130"}


def test_sixteen_hosts_in_a_slash_25_never_share_an_address_in_any_order() -> None:
    hosts = [f"node{index:02d}" for index in range(16)]
    held = held_after(*hosts, subnet="10.0.3.0/25")
    for order in (hosts, hosts[::-1], hosts[8:] + hosts[:8]):
        plan = plan_addresses("10.0.3.0/25", [(host, None) for host in order], held=held)
        assert len(set(addresses(plan).values())) == 16
        assert addresses(plan) == held


def test_a_slash_28_that_fills_up_names_the_subnet_and_the_host_left_without() -> None:
    # 10.0.3.0/28: ip_range .0/29, so the static candidates are .8 to .14: seven hosts.
    held = held_after(*(f"h{index}" for index in range(7)), subnet="10.0.3.0/28")
    assert set(held.values()) == {f"10.0.3.{last}" for last in range(8, 15)}
    with pytest.raises(AddressPlanError, match=r"^10.0.3.0/28 has no free static address left for host 'h7'"):
        plan_addresses("10.0.3.0/28", [(f"h{index}", None) for index in range(8)], held=held)


# --- what the hosts answer (components.hosts.probe) -----------------------------------------


def hosts(*names: str) -> list[Host]:
    return [Host(name=name, address=f"10.0.18.{name[-1]}") for name in names]


def test_the_answers_become_held_addresses_addresses_in_use_mtus_and_problems() -> None:
    facts = parse_answers(
        "server1 mtu 1500\n"
        "server1 held server1 10.0.3.128\n"
        "server1 in-use 10.0.3.128\n"
        "server1 in-use 10.0.3.129\n"
        "server1 in-use 10.0.3.3\n"
        "server3 mtu-unknown no interface holds 10.0.18.3 on this host (hosts[].address); its MTU is unknown: set network.mtu\n"
        "server3 held old-name 10.0.3.131\n"
        "server2 unreachable ssh: connect to host 10.0.18.2 port 22: Connection refused\n"
        "server4 held server4 10.0.3.130\n"
        "server5 silent 30\n"
        "server6 failed docker: command not found\n"
        "server7 mtu 1500\n"
        "server7 engine-silent 60\n",
        hosts("server1", "server2", "server3", "server4", "server5", "server6", "server7"),
        "known_hosts",
        want_mtu=True,
    )
    # server3's machine holds the container of a host no longer listed: server3 is that host renamed.
    assert facts.addresses == {"server1": "10.0.3.128", "server3": "10.0.3.131", "server4": "10.0.3.130"}
    assert facts.renamed == {"server3": "old-name"}
    assert facts.in_use == {"10.0.3.129", "10.0.3.3"}, "anything else on the overlay is not free"
    assert facts.mtus == {"server1": 1500, "server7": 1500}
    assert facts.problems == {
        "server2": "cannot reach server2 (10.0.18.2:22) over SSH (is the host up and its key in known_hosts?): "
        "ssh: connect to host 10.0.18.2 port 22: Connection refused",
        "server3": "no interface holds 10.0.18.3 on this host (hosts[].address); its MTU is unknown: set network.mtu",
        "server4": "did not tell its interface MTU",
        "server5": "server5 (10.0.18.5:22) does not answer over SSH (no reply in 30 s)",
        "server6": "reading server6 (10.0.18.6:22) failed: docker: command not found",
        "server7": "the Docker engine does not answer (no reply in 60 s)",
    }


def test_every_host_is_asked_at_once_and_those_that_do_not_answer_are_named(tmp_path: Path) -> None:
    ran = subprocess.run(
        [
            "bash", str(ASK_SCRIPT), str(HOST_SCRIPT), "o/p/s", "test-net", "yes", "1", "2", "", str(tmp_path / "runs"), "",
            "server1=root@10.0.18.1:22", "server2=root@10.0.18.9:22", "server3=root@10.0.18.8:22",
            "--", "-o", "BatchMode=yes",
        ],
        capture_output=True, text=True, env=stand_ins(tmp_path), timeout=20,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    asked = [Host(name="server1", address="10.0.18.1"), Host(name="server2", address="10.0.18.9"),
             Host(name="server3", address="10.0.18.8")]  # fmt: skip
    facts = parse_answers(ran.stdout, asked, "known_hosts", want_mtu=True)
    assert facts.addresses == {"server1": "10.0.3.128"}
    assert facts.in_use == {"10.0.3.129"}
    assert facts.mtus == {"server1": int(Path("/sys/class/net/lo/mtu").read_text())}, "the interface holding its address"
    assert facts.problems == {
        "server2": "cannot reach server2 (10.0.18.9:22) over SSH (is the host up and its key in known_hosts?): "
        "ssh: connect to host 10.0.18.9 port 22: Connection refused",
        "server3": "server3 (10.0.18.8:22) does not answer over SSH (no reply in 2 s)",
    }


def test_a_host_whose_key_changed_is_named_with_what_it_may_mean_and_the_command_that_accepts_it(
    tmp_path: Path,
) -> None:
    ran = subprocess.run(
        ["bash", str(ASK_SCRIPT), str(HOST_SCRIPT), "o/p/s", "test-net", "no", "1", "2", "", "/runs", "",
         "server7=root@10.0.18.7:2222", "--", "-o", "BatchMode=yes"],
        capture_output=True, text=True, env=stand_ins(tmp_path), timeout=20,
    )  # fmt: skip
    assert ran.stdout == "server7 host-key-changed\n"
    facts = parse_answers(ran.stdout, [Host(name="server7", address="10.0.18.7", ssh_port=2222)], "/ops/known_hosts", False)
    assert facts.problems == {
        "server7": "the SSH host key of server7 (10.0.18.7:2222) is not the one /ops/known_hosts holds (REMOTE HOST "
        "IDENTIFICATION HAS CHANGED): a reinstalled machine, or someone in between. Compare the key's fingerprint "
        "with the machine's own (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub on its console), then accept it: "
        "ssh-keygen -R '[10.0.18.7]:2222' -f /ops/known_hosts && ssh-keyscan -p 2222 10.0.18.7 >> /ops/known_hosts"
    }
