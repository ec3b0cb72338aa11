"""The operator files the simulator writes, rendered by pure functions."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simhosts import lifecycle, links, operator_files
from simhosts.links import LinkRates
from simhosts.images import debian_mirror
from simhosts.plan import SimLab, lab_from_env

LAB0 = SimLab(0)

pytestmark = pytest.mark.simhosts


def test_stack_config_matches_the_contract_with_the_pulumi_program() -> None:
    text = operator_files.render_stack_config(LAB0.hosts(2))
    assert yaml.safe_load(text) == {
        "dslab:hosts": [
            {"name": "server1", "address": "10.0.18.1", "role": "manager", "ssh_user": "root", "ssh_port": 22, "gpus": "none"},
            {"name": "server2", "address": "10.0.18.2", "role": "worker", "ssh_user": "root", "ssh_port": 22, "gpus": "none"},
        ],
        "dslab:operator": {"private_key_path": ".simhosts/operator_ed25519", "known_hosts_path": ".simhosts/known_hosts"},
    }


def test_the_first_host_manages_and_the_others_work() -> None:
    roles = [(h.name, h.address, h.role) for h in LAB0.hosts(3)]
    assert roles == [("server1", "10.0.18.1", "manager"), ("server2", "10.0.18.2", "worker"), ("server3", "10.0.18.3", "worker")]


def test_a_lab_other_than_zero_has_its_own_subnet_names_bridge_folder_and_stack_config() -> None:
    lab = SimLab(3)
    (server1, server2) = lab.hosts(2)
    assert (str(lab.subnet), str(lab.gateway), server2.address) == ("10.0.21.0/24", "10.0.21.254", "10.0.21.2")
    assert (server1.container, server1.volume, lab.network_name, lab.bridge_interface) == (
        "dslab3-server1", "dslab3-server1-docker", "dslab3-lab", "dslab3",
    )
    assert lab.state_dir(Path("/r")) == Path("/r/.simhosts-3")
    operator = yaml.safe_load(operator_files.render_stack_config([server1], ".simhosts-3"))["dslab:operator"]
    assert operator == {"private_key_path": ".simhosts-3/operator_ed25519", "known_hosts_path": ".simhosts-3/known_hosts"}


def test_no_two_labs_share_a_name_an_address_or_a_folder() -> None:
    labs = [SimLab(index) for index in range(10)]
    for kind in (
        lambda lab: str(lab.subnet), lambda lab: lab.network_name, lambda lab: lab.bridge_interface,
        lambda lab: lab.state_dir(Path("/r")), lambda lab: lab.label_value,
    ):
        assert len({kind(lab) for lab in labs}) == len(labs)
    containers = [host.container for lab in labs for host in lab.hosts(8)]
    assert len(set(containers)) == len(containers)
    # A lab's names must not be a prefix match of another's (cleanup and snapshots select by prefix).
    for lab in labs:
        assert [c for c in containers if c.startswith(lab.prefix)] == [host.container for host in lab.hosts(8)]


def test_the_lab_comes_from_dslab_lab_and_a_bad_value_names_the_variable() -> None:
    assert lab_from_env({}) == SimLab(0)
    assert lab_from_env({"DSLAB_LAB": "2"}) == SimLab(2)
    with pytest.raises(ValueError, match=r"DSLAB_LAB='x' is not a lab id; expected 0..9, e.g. DSLAB_LAB=1"):
        lab_from_env({"DSLAB_LAB": "x"})
    with pytest.raises(ValueError, match=r"a lab id is between 0 and 9, got 10; e.g. --lab 1"):
        SimLab(10)


@pytest.mark.parametrize("count", [0, 9])
def test_a_host_count_outside_one_to_eight_is_refused_with_an_example(count: int) -> None:
    with pytest.raises(ValueError, match=rf"between 1 and 8, got {count}; e.g. --hosts 2"):
        LAB0.hosts(count)


def test_known_hosts_are_keyed_by_address() -> None:
    text = operator_files.render_known_hosts({"10.0.18.1": ["ssh-ed25519 AAAA1"], "10.0.18.2": ["ssh-ed25519 AAAA2"]})
    assert text == "10.0.18.1 ssh-ed25519 AAAA1\n10.0.18.2 ssh-ed25519 AAAA2\n"


def test_ssh_config_keeps_strict_host_key_checking_and_matches_names_and_addresses() -> None:
    text = operator_files.render_ssh_config(LAB0.hosts(1), Path("/r/.simhosts"))
    assert "Host server1 10.0.18.1\n" in text
    assert "StrictHostKeyChecking yes" in text
    assert "UserKnownHostsFile /r/.simhosts/known_hosts" in text
    assert "IdentityFile /r/.simhosts/operator_ed25519" in text
    assert "StrictHostKeyChecking no" not in text


def test_the_debian_mirror_is_read_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\n\nTypes: deb\nURIs: http://mirror.example/debian/\n"
    )
    assert debian_mirror(tmp_path) == "http://mirror.example/debian"


def test_loopback_resolvers_are_not_handed_to_hosts(tmp_path: Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 127.0.0.53\nnameserver 10.255.255.53\nnameserver ::1\noptions edns0\n")
    assert lifecycle.machine_nameservers(resolv) == ["10.255.255.53"]


def test_a_lab_behind_its_bastion_reaches_each_host_through_it_and_the_stack_names_it() -> None:
    lab = SimLab(3)
    bastion = lab.bastion
    assert (bastion.name, bastion.address, bastion.container) == ("bastion", "10.0.21.20", "dslab3-bastion")
    assert lab.host("bastion") == bastion and bastion.address not in {host.address for host in lab.hosts(8)}
    config = operator_files.render_ssh_config(lab.hosts(2), Path("/state"), bastion)
    blocks = {block.splitlines()[0]: block for block in config.split("\n\n")}
    assert "    ProxyJump bastion\n" in blocks["Host server1 10.0.21.1"]
    assert "ProxyJump" not in blocks["Host bastion 10.0.21.20"], "the bastion itself is reached directly"
    assert "    StrictHostKeyChecking yes\n" in blocks["Host bastion 10.0.21.20"]
    stack = yaml.safe_load(operator_files.render_stack_config(lab.hosts(2), ".simhosts-3", bastion))
    assert stack["dslab:operator"]["jump_host"] == {"address": "10.0.21.20", "port": 22, "user": "root"}
    assert "jump_host" not in yaml.safe_load(operator_files.render_stack_config(lab.hosts(2)))["dslab:operator"]


@pytest.mark.parametrize("rate", ["100", "100mbps", "0mbit", "fast", "1.5gbit"])
def test_a_link_rate_tc_cannot_take_is_refused_naming_the_flag(rate: str) -> None:
    with pytest.raises(ValueError, match=f"--link '{rate}' is not a rate; expected .* e.g. 100mbit"):
        LinkRates(host=rate)


def test_link_rates_in_words_and_what_a_host_sends_to_the_operator_goes_at_the_slower_rate() -> None:
    assert LinkRates(host="100mbit", operator="50mbit").describe() == "hosts 100mbit, operator 50mbit"
    assert LinkRates().describe() == "hosts unlimited, operator unlimited"
    assert links._slower("100mbit", "50mbit") == "50mbit"
    assert links._slower("1gbit", "900mbit") == "900mbit"
    assert links._slower("20mbit", "1gbit") == "20mbit"
