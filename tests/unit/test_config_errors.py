"""Every validation rule, with the exact text the user reads: key path, value, expectation, fix."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.config import LabConfigError, load_lab_config


def lab(**sections: Any) -> dict[str, Any]:
    """A valid two-host configuration to break one thing at a time."""
    return copy.deepcopy(
        {
            "hosts": [
                {"name": "server1", "address": "10.0.18.1", "role": "manager"},
                {"name": "server2", "address": "10.0.18.2"},
            ],
            "operator": {"private_key_path": ".simhosts/operator_ed25519"},
            **sections,
        }
    )


def problems(values: dict[str, Any]) -> list[str]:
    with pytest.raises(LabConfigError) as caught:
        load_lab_config(values)
    return caught.value.problems


def with_host(index: int, **fields: Any) -> dict[str, Any]:
    values = lab()
    values["hosts"][index].update(fields)
    return values


def test_an_invalid_ipv4_address_names_the_key_the_value_and_an_example() -> None:
    assert problems(with_host(1, address="10.0.18.300")) == [
        "dslab:hosts[1].address: '10.0.18.300' is not an IPv4 address; expected e.g. 10.0.18.2"
    ]


def test_duplicate_host_names_point_at_the_second_one() -> None:
    assert problems(with_host(1, name="server1")) == [
        "dslab:hosts[1].name: 'server1' is also the name of hosts[0]; every host needs its own name"
    ]


def test_duplicate_host_addresses_point_at_the_second_one() -> None:
    assert problems(with_host(1, address="10.0.18.1")) == [
        "dslab:hosts[1].address: '10.0.18.1' is also the address of hosts[0]; every host needs its own address"
    ]


def test_a_lab_without_a_manager_is_rejected() -> None:
    assert problems(with_host(0, role="worker")) == [
        "dslab:hosts: has no manager; set role: manager on exactly one host, e.g. hosts[0].role: manager"
    ]


def test_a_second_manager_is_rejected() -> None:
    assert problems(with_host(1, role="manager")) == [
        "dslab:hosts[1].role: 'manager' is also the role of hosts[0]; a lab has exactly one "
        "manager: set role: worker here"
    ]


def test_an_unknown_role_lists_the_valid_ones() -> None:
    assert problems(with_host(1, role="boss")) == [
        "dslab:hosts[1].role: 'boss' is not allowed; expected one of 'manager' or 'worker'"
    ]


def test_an_empty_host_list_is_rejected() -> None:
    values = lab()
    values["hosts"] = []
    assert problems(values) == [
        "dslab:hosts: is empty; expected at least one host, e.g. [{name: server1, address: 10.0.18.1, role: manager}]"
    ]


def test_slots_below_one_are_rejected() -> None:
    assert problems(with_host(1, slots=0)) == [
        "dslab:hosts[1].slots: 0 must be at least 1 (DeepSpeed starts one rank per slot); expected e.g. slots: 1"
    ]


def test_an_invalid_gpu_request_lists_the_accepted_forms() -> None:
    assert problems(with_host(1, gpus="some")) == [
        'dslab:hosts[1].gpus: \'some\' is not a GPU request; expected "all", "none", a count '
        "such as 2, or device ids such as [0, 1]"
    ]


def test_a_host_name_that_is_not_a_dns_label_is_rejected() -> None:
    assert problems(with_host(1, name="Server_2")) == [
        "dslab:hosts[1].name: 'Server_2' is not a valid host name; expected a lower-case DNS "
        "label (letters, digits, '-', at most 63 characters), e.g. server1"
    ]


def test_a_missing_required_key_says_what_to_add() -> None:
    values = lab()
    del values["hosts"][1]["address"]
    assert problems(values) == ["dslab:hosts[1].address: is required; add it, e.g. 10.0.18.1"]


def test_a_misspelled_key_gets_a_did_you_mean() -> None:
    values = lab()
    values["hosts"][1]["adress"] = values["hosts"][1].pop("address")
    assert problems(values) == [
        "dslab:hosts[1].address: is required; add it, e.g. 10.0.18.1",
        "dslab:hosts[1].adress: unknown key; did you mean 'address'? known keys: name, address, "
        "role, ssh_user, ssh_port, gpus, slots, container_address, overrides, jump_host",
    ]


def test_an_unknown_top_level_key_is_an_error_too() -> None:
    assert problems(lab(netwrok={})) == [
        "dslab:netwrok: unknown key; did you mean 'network'? known keys: hosts, operator, "
        "network, image, container, training"
    ]


def test_a_wrong_type_says_what_was_expected() -> None:
    assert problems(with_host(1, ssh_port="twenty-two")) == [
        "dslab:hosts[1].ssh_port: 'twenty-two' is not valid (input should be a valid integer, "
        "unable to parse string as an integer); expected e.g. 22"
    ]


def test_a_scalar_where_a_section_belongs_lists_the_sections_keys() -> None:
    assert problems(lab(network="test-net")) == [
        "dslab:network: 'test-net' is not a mapping; expected keys mode, name, subnet, ip_range, mtu, encrypted, ipsec"
    ]


def test_the_operator_needs_exactly_one_key_form() -> None:
    both = lab(operator={"private_key_path": "k", "private_key": "text"})
    neither = lab(operator={"known_hosts_path": "k"})
    assert problems(both) == [
        "dslab:operator: has both of private_key_path and private_key; give exactly one, "
        "e.g. private_key_path: ~/.ssh/id_ed25519"
    ]
    assert problems(neither) == [
        "dslab:operator: has neither of private_key_path and private_key; give exactly one, "
        "e.g. private_key_path: ~/.ssh/id_ed25519"
    ]


def test_there_is_no_option_to_turn_host_key_checking_off() -> None:
    values = lab(operator={"private_key_path": "k", "strict_host_key_checking": False})
    assert problems(values) == [
        "dslab:operator.strict_host_key_checking: unknown key; remove it; known keys: "
        "private_key_path, private_key, known_hosts_path, jump_host, host_timeout"
    ]


def test_an_encrypted_value_outside_the_private_key_is_rejected() -> None:
    values = lab(network={"name": {"secure": "v1:abc"}})
    assert problems(values) == [
        "dslab:network.name: is a Pulumi secret, but only dslab:operator.private_key may be "
        "secret; set it as plain text: pulumi config set --path 'network.name' <value>"
    ]


def test_an_encrypted_private_key_is_accepted_until_run_time() -> None:
    values = lab(operator={"private_key": {"secure": "v1:abc"}})
    assert load_lab_config(values).operator.private_key_is_encrypted


def test_a_subnet_in_non_cidr_form_is_rejected() -> None:
    assert problems(lab(network={"subnet": "10.0.3.0"})) == [
        "dslab:network.subnet: '10.0.3.0' is not a subnet in CIDR notation; expected e.g. 10.0.3.0/24"
    ]


def test_a_subnet_with_host_bits_suggests_its_network_address() -> None:
    assert problems(lab(network={"subnet": "10.0.3.7/24"})) == [
        "dslab:network.subnet: '10.0.3.7/24' has host bits set; expected the network address, i.e. 10.0.3.0/24"
    ]


def test_a_subnet_too_small_for_the_plan_is_rejected() -> None:
    assert problems(lab(network={"subnet": "10.0.3.0/30"})) == [
        "dslab:network.subnet: '10.0.3.0/30' is too small for a gateway, a dynamic range and "
        "static container addresses; expected a /29 or larger, e.g. 10.0.3.0/24"
    ]


def test_an_overlay_subnet_that_holds_the_hosts_addresses_is_rejected() -> None:
    assert problems(lab(network={"subnet": "10.0.18.0/24"})) == [
        "dslab:network.subnet: '10.0.18.0/24' contains hosts[0].address 10.0.18.1; the overlay "
        "must not overlap the hosts' own network: pick another private range, e.g. 10.0.3.0/24",
        "dslab:network.subnet: '10.0.18.0/24' contains hosts[1].address 10.0.18.2; the overlay "
        "must not overlap the hosts' own network: pick another private range, e.g. 10.0.3.0/24",
    ]


def test_an_ip_range_outside_the_subnet_is_rejected() -> None:
    assert problems(lab(network={"ip_range": "10.0.4.0/25"})) == [
        "dslab:network.ip_range: '10.0.4.0/25' is not inside subnet 10.0.3.0/24; expected a "
        "part of it, e.g. 10.0.3.0/25"
    ]


def test_an_ip_range_covering_the_whole_subnet_leaves_no_static_addresses() -> None:
    assert problems(lab(network={"ip_range": "10.0.3.0/24"})) == [
        "dslab:network.ip_range: '10.0.3.0/24' is the whole subnet, which leaves no room for "
        "static container addresses; use a part, e.g. 10.0.3.0/25"
    ]


def test_an_mtu_out_of_range_is_rejected() -> None:
    assert problems(lab(network={"mtu": 100})) == [
        "dslab:network.mtu: 100 is not a usable MTU; expected 576..9000, e.g. 1450"
    ]


def test_an_unknown_network_mode_is_rejected() -> None:
    assert problems(lab(network={"mode": "bridge"})) == [
        "dslab:network.mode: 'bridge' is not allowed; expected one of 'overlay' or 'host'"
    ]


def test_host_mode_refuses_the_hosts_own_sshd_port_for_the_containers() -> None:
    assert problems(lab(network={"mode": "host"}, container={"ssh_port": 22})) == [
        "dslab:container.ssh_port: 22 is hosts[0].ssh_port, where server1's own sshd listens; with "
        "network.mode host the container shares the host's ports: pick another, e.g. 2222",
        "dslab:container.ssh_port: 22 is hosts[1].ssh_port, where server2's own sshd listens; with "
        "network.mode host the container shares the host's ports: pick another, e.g. 2222",
    ]


def test_host_mode_refuses_overlay_only_settings() -> None:
    assert problems(lab(network={"mode": "host", "encrypted": True})) == [
        "dslab:network.encrypted: encrypts the overlay, and network.mode host has none; remove it, "
        "or set network.mode: overlay"
    ]
    values = with_host(1, container_address="10.0.3.140")
    values["network"] = {"mode": "host"}
    assert problems(values) == [
        "dslab:hosts[1].container_address: '10.0.3.140' has no use with network.mode host (containers "
        "use the host's address); remove it, or set network.mode: overlay"
    ]


def test_host_mode_reaches_containers_at_the_hosts_addresses_on_port_2222() -> None:
    config = load_lab_config(lab(network={"mode": "host"}))
    assert config.container_ssh_port == 2222
    assert [config.node_address(host.name, config.address_plan()) for host in config.hosts] == [
        host.address for host in config.hosts
    ]


def test_a_container_address_outside_the_subnet_is_rejected() -> None:
    assert problems(with_host(1, container_address="10.0.9.5")) == [
        "dslab:hosts[1].container_address: '10.0.9.5' is outside network.subnet 10.0.3.0/24; "
        "pick an address in it outside ip_range 10.0.3.0/25, e.g. 10.0.3.128"
    ]


def test_a_container_address_inside_the_dynamic_range_is_rejected() -> None:
    assert problems(with_host(1, container_address="10.0.3.6")) == [
        "dslab:hosts[1].container_address: '10.0.3.6' is inside network.ip_range 10.0.3.0/25, "
        "where swarm allocates its own endpoints; pick one outside it, e.g. 10.0.3.128"
    ]


@pytest.mark.parametrize(
    ("address", "what"),
    [
        ("10.0.3.0", "the network address of 10.0.3.0/24"),
        ("10.0.3.255", "the broadcast address of 10.0.3.0/24"),
    ],
)
def test_a_container_address_on_the_network_or_broadcast_address_is_rejected(address: str, what: str) -> None:
    assert problems(with_host(1, container_address=address)) == [
        f"dslab:hosts[1].container_address: {address!r} is {what}; e.g. 10.0.3.128"
    ]


def test_a_container_address_on_the_gateway_is_rejected() -> None:
    values = lab(network={"ip_range": "10.0.3.128/25"})
    values["hosts"][1]["container_address"] = "10.0.3.1"
    assert problems(values) == ["dslab:hosts[1].container_address: '10.0.3.1' is the overlay gateway; e.g. 10.0.3.2"]


def test_colliding_container_addresses_are_rejected() -> None:
    values = lab()
    values["hosts"][0]["container_address"] = "10.0.3.200"
    values["hosts"][1]["container_address"] = "10.0.3.200"
    assert problems(values) == [
        "dslab:hosts[1].container_address: '10.0.3.200' is also the container_address of "
        "hosts[0]; every container needs its own address, e.g. 10.0.3.128"
    ]


def test_a_subnet_without_room_for_every_container_is_rejected() -> None:
    # A /29's upper half holds three static addresses (.4 .5 .6); the fourth host finds none.
    values = lab(network={"subnet": "10.0.3.0/29"})
    values["hosts"] += [{"name": f"server{n}", "address": f"10.0.18.{n}"} for n in range(3, 5)]
    assert problems(values) == [
        "dslab:network.subnet: 10.0.3.0/29 has no free static address left for host "
        "'server4' outside ip_range 10.0.3.0/30 (held: server1, server2, server3); use a larger subnet (e.g. a /24) or a smaller "
        "ip_range"
    ]


def test_an_unknown_zero_stage_is_rejected() -> None:
    assert problems(lab(training={"deepspeed": {"zero_stage": 4}})) == [
        "dslab:training.deepspeed.zero_stage: 4 is not a ZeRO stage; expected 0, 1, 2 or 3, e.g. zero_stage: 2"
    ]


def test_precision_fp16_conflicts_with_llamafactory_bf16() -> None:
    training = {
        "workload": {"kind": "llamafactory", "args": {"fp16": None, "bf16": True}},
        "deepspeed": {"precision": "fp16"},
    }
    assert problems(lab(training=training)) == [
        "dslab:training.deepspeed.precision: 'fp16' conflicts with training.workload.args "
        "(bf16: true); set args.fp16: true, or precision: auto to follow the args"
    ]


def test_precision_bf16_conflicts_with_the_default_llamafactory_fp16() -> None:
    assert problems(lab(training={"deepspeed": {"precision": "bf16"}})) == [
        "dslab:training.deepspeed.precision: 'bf16' conflicts with training.workload.args "
        "(fp16: true); set args.bf16: true (and fp16: null), or precision: auto to follow the args"
    ]


def test_precision_fp32_conflicts_with_llamafactory_fp16() -> None:
    assert problems(lab(training={"deepspeed": {"precision": "fp32"}})) == [
        "dslab:training.deepspeed.precision: 'fp32' conflicts with training.workload.args.fp16: "
        "true; set args.fp16: null, or precision: auto to follow the args"
    ]


def test_llamafactory_args_asking_for_fp16_and_bf16_at_once_are_rejected() -> None:
    training = {"workload": {"kind": "llamafactory", "args": {"bf16": True}}}
    assert problems(lab(training=training)) == [
        "dslab:training.workload.args: sets both fp16: true and bf16: true; pick one, e.g. remove bf16"
    ]


def test_workload_args_may_not_set_what_dslab_sets() -> None:
    training = {"workload": {"kind": "llamafactory", "args": {"deepspeed": "x.json"}}}
    assert problems(lab(training=training)) == [
        "dslab:training.workload.args.deepspeed: key 'deepspeed' is set by dslab (from "
        "training.deepspeed and the launcher); remove it"
    ]


def test_workload_argument_names_are_checked_alongside_their_values() -> None:
    args = {"--dataset": "x", "template": ["a"]}
    training = {"workload": {"kind": "llamafactory", "args": args}}
    assert problems(lab(training=training)) == [
        # template is a default argument, so it comes first.
        "dslab:training.workload.args.template: ['a'] is not a flag value; expected text, "
        'a number or true/false, e.g. "alpaca_gpt4_zh"',
        "dslab:training.workload.args['--dataset']: key '--dataset' is not an argument name; "
        "expected lower-case words joined by '_', without the leading --, "
        "e.g. per_device_train_batch_size",
    ]


def test_a_batch_size_that_is_not_micro_times_accumulation_times_world_is_rejected() -> None:
    deepspeed = {
        "precision": "fp32",
        "train_batch_size": 10,
        "train_micro_batch_size_per_gpu": 4,
        "gradient_accumulation_steps": 1,
    }
    training = {
        "workload": {"kind": "script", "entrypoint": "/t.py"},
        "deepspeed": deepspeed,
    }
    assert problems(lab(training=training)) == [
        "dslab:training.deepspeed.train_batch_size: 10 is not micro batch 4 x gradient "
        'accumulation 1 x world size 2 = 8; set train_batch_size: 8, or "auto"'
    ]


def test_a_batch_size_is_checked_against_the_llamafactory_arguments_that_fill_auto() -> None:
    assert problems(lab(training={"deepspeed": {"train_batch_size": 16}})) == [
        "dslab:training.deepspeed.train_batch_size: 16 is not micro batch 4 x gradient "
        'accumulation 4 x world size 2 = 32; set train_batch_size: 32, or "auto"'
    ]


def test_a_batch_size_not_divisible_by_the_known_factors_is_rejected() -> None:
    deepspeed = {"train_batch_size": 6, "train_micro_batch_size_per_gpu": 2}
    training = {
        "workload": {"kind": "script", "entrypoint": "/t.py"},
        "deepspeed": deepspeed,
    }
    assert problems(lab(training=training)) == [
        "dslab:training.deepspeed.train_batch_size: 6 is not divisible by micro batch 2 x "
        "world size 2 = 4; use a multiple of 4, e.g. 4"
    ]


def test_a_ds_micro_batch_that_differs_from_the_llamafactory_argument_is_rejected() -> None:
    assert problems(lab(training={"deepspeed": {"train_micro_batch_size_per_gpu": 2}})) == [
        "dslab:training.deepspeed.train_micro_batch_size_per_gpu: 2 differs from "
        "training.workload.args.per_device_train_batch_size (4); the Trainer rejects the "
        'mismatch: set train_micro_batch_size_per_gpu: "auto" or make them equal'
    ]


def test_a_workload_without_a_kind_lists_the_kinds() -> None:
    assert problems(lab(training={"workload": {"entrypoint": "/t.py"}})) == [
        "dslab:training.workload: kind is missing; expected kind: script or kind: llamafactory"
    ]


def test_a_workload_with_an_unknown_kind_lists_the_kinds() -> None:
    assert problems(lab(training={"workload": {"kind": "torchrun"}})) == [
        "dslab:training.workload: kind 'torchrun' is unknown; expected kind: script or kind: llamafactory"
    ]


def test_unknown_keys_inside_a_workload_get_a_did_you_mean() -> None:
    training = {"workload": {"kind": "script", "entrypoint": "/t.py", "arg": ["--x"]}}
    assert problems(lab(training=training)) == [
        "dslab:training.workload.arg: unknown key; did you mean 'args'? known keys: kind, "
        "entrypoint, args, workdir, output_dir_flag, deepspeed_config_flag"
    ]


def test_sizes_without_a_unit_or_number_are_rejected() -> None:
    assert problems(lab(container={"shm_size": "lots"})) == [
        "dslab:container.shm_size: 'lots' is not a size; expected a number and a unit, e.g. 40G or 512M"
    ]


def test_an_unknown_ulimit_name_gets_a_did_you_mean() -> None:
    assert problems(lab(container={"ulimits": {"memlok": -1}})) == [
        "dslab:container.ulimits.memlok: key 'memlok' is not a ulimit name; did you mean "
        "'memlock'? expected one of core, cpu, data, fsize, locks, memlock, msgqueue, nice, "
        "nofile, nproc, rss, rtprio, rttime, sigpending, stack"
    ]


def test_an_environment_value_with_a_newline_is_rejected() -> None:
    assert problems(lab(container={"env": {"NCCL_DEBUG": "INFO\nX=1"}})) == [
        "dslab:container.env.NCCL_DEBUG: 'INFO\\nX=1' contains a line break; expected a single-line value, e.g. INFO"
    ]


def test_a_relative_mount_source_is_rejected() -> None:
    mounts = [{"source": "./code", "target": "/home/user/code"}]
    assert problems(lab(container={"mounts": mounts})) == [
        "dslab:container.mounts[0].source: './code' is not an absolute path; expected e.g. /home/user/code"
    ]


def test_two_mounts_on_one_container_path_are_rejected() -> None:
    mounts = [{"source": "/a", "target": "/data"}, {"source": "/b", "target": "/data"}]
    assert problems(lab(container={"mounts": mounts})) == [
        "dslab:container.mounts[1].target: '/data' is also the target of mounts[0]; mount each container path once"
    ]


def test_a_python_version_written_as_a_yaml_number_is_caught() -> None:
    assert problems(lab(image={"python": 3.1})) == [
        'dslab:image.python: 3.1 is a number, and YAML turns 3.10 into 3.1; quote it, e.g. python: "3.10"'
    ]


def test_every_problem_is_reported_at_once() -> None:
    values = lab(network={"mtu": 1}, training={"deepspeed": {"zero_stage": 9}})
    values["hosts"][1]["address"] = "nowhere"
    assert sorted(problem.split(": ", 1)[0] for problem in problems(values)) == [
        "dslab:hosts[1].address",
        "dslab:network.mtu",
        "dslab:training.deepspeed.zero_stage",
    ], "one run must show all independent problems"


def test_the_exception_text_lists_every_problem_under_a_count() -> None:
    with pytest.raises(LabConfigError) as caught:
        load_lab_config(with_host(1, slots=0, ssh_port=0))
    assert str(caught.value).splitlines() == [
        "2 problems in the stack configuration:",
        "  dslab:hosts[1].ssh_port: 0 is not a TCP port; expected 1..65535, e.g. 22",
        "  dslab:hosts[1].slots: 0 must be at least 1 (DeepSpeed starts one rank per slot); expected e.g. slots: 1",
    ]


def test_a_batch_size_not_divisible_by_the_world_size_is_rejected() -> None:
    training = {
        "workload": {"kind": "script", "entrypoint": "/t.py"},
        "deepspeed": {"train_batch_size": 3},
    }
    assert problems(lab(training=training)) == [
        "dslab:training.deepspeed.train_batch_size: 3 is not divisible by world size 2; use a multiple of 2, e.g. 2"
    ]
