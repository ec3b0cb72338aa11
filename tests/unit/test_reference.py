"""The configuration reference (docs/configuration.md) is made from the models and kept current;
every key has a description and says what changing it does to a running lab, and what it says is
what the program plans when that key changes on a running dev stack (the recording mock engine).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from components.config.field_reference import REFERENCE_PATH, Row, nested, reference_text, rows, sections
from components.config.on_change import Effect
from components.reference import COMMAND, main
from harness.pulumi_cli import REPO
from tests.support.plan_world import LabModel, Plan, containers

RUN = "lab-training-run"
UPDATED_IN_PLACE = {"restart"}
"""Container inputs the docker provider changes without making the container again
(resourceDockerContainerUpdate in terraform-provider-docker: the restart policy)."""

ALL_ROWS = list(rows())
ROWS = {row.path: row for row in ALL_ROWS}
"""By path; the two workload kinds share some (kind, entrypoint, workdir), which say the same."""


def test_docs_configuration_md_is_what_the_models_make() -> None:
    on_disk = (REPO / REFERENCE_PATH).read_text(encoding="utf-8")
    assert on_disk == reference_text(), f"{REFERENCE_PATH} is stale: run {COMMAND}"


def test_the_generated_files_come_out_the_same_whatever_the_hash_seed() -> None:
    for seed in ("1", "2"):
        result = subprocess.run(
            [sys.executable, "-m", "components.reference", "--check"],
            cwd=REPO,
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr


def test_check_names_a_stale_file_and_the_command_and_writes_nothing(tmp_path: Path) -> None:
    out = io.StringIO()
    assert main(["--check"], out, project_dir=tmp_path) == 1
    assert f"{REFERENCE_PATH} is stale: run {COMMAND}" in out.getvalue()
    assert not list(tmp_path.iterdir()), "--check writes nothing"


def test_every_key_has_a_description_and_says_what_changing_it_does() -> None:
    undescribed = [row.path for row in ALL_ROWS if not (row.field.description or "").strip()]
    unclassified = [row.path for row in ALL_ROWS if row.change is None]
    assert not undescribed, f"add description= to: {undescribed}"
    assert not unclassified, (
        f"add json_schema_extra=on_change(Effect...., 'note') (components/config/on_change.py) to: {unclassified}"
    )


def test_every_key_has_a_type_in_words_and_an_example() -> None:
    python = re.compile(r"\b(?:Annotated|Union|Optional|Literal|tuple|dict)\b|\w\[")
    unreadable = [row.path for row in ALL_ROWS if python.search(row.type)]
    without = [row.path for row in ALL_ROWS if not row.example]
    assert not unreadable, f"give their types a Shape (components/config/shapes.py): {unreadable}"
    assert not without, f"add examples= to: {without}"


def test_a_mapping_says_the_most_that_one_of_its_keys_does() -> None:
    found = sections()
    for row in ALL_ROWS:
        for model, suffix in nested(row.field.annotation, row.field.metadata):
            assert row.change is not None
            (section,) = [s for s in found if s.path == row.path + suffix and s.model is model]
            for child in section.rows:
                assert child.change is not None
                assert row.change.effect.rank >= child.change.effect.rank, (
                    f"{row.path} says {row.change.effect.value}, but its key {child.path} says {child.change.effect.value}"
                )


def test_the_reference_lists_every_key_once_under_its_own_heading() -> None:
    text = reference_text()
    headings = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert len(headings) == len(set(headings)) == len(sections())
    listed = re.findall(r"^\| `(dslab:[^`]+)` \|", text, re.MULTILINE)
    assert listed == [row.path for row in ALL_ROWS], "one row a key, in the sections' order"


# --- what the program plans when a key changes -----------------------------------------------------


def set_key(values: dict[str, Any], path: str, value: Any) -> None:
    """``hosts[1].overrides.env`` = VALUE in the namespace-stripped configuration VALUES."""
    target: Any = values
    parts = [int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]]+", path)]
    for part in parts[:-1]:
        target = target[part] if isinstance(part, int) else target.setdefault(part, {})
    target[parts[-1]] = value


def row_of(path: str) -> Row:
    """The reference's row for a concrete key: ``hosts[1].gpus`` -> ``dslab:hosts[].gpus``."""
    return ROWS["dslab:" + re.sub(r"\[\d+\]", "[]", path)]


def planned_effect(plan: Plan) -> Effect:
    """What the preview would do to the running lab, read from its resources beside the last up's."""
    before, after = plan.previous, plan.resources
    changed = {name for name in before.keys() & after.keys() if before[name].inputs != after[name].inputs}
    made_or_dropped = before.keys() ^ after.keys()
    old, new = containers(plan.before, before), containers(plan.after, after)
    containers_anew = old.keys() != new.keys() or any(
        key not in UPDATED_IN_PLACE
        for host in old.keys() & new.keys()
        for key in old[host].inputs.keys() | new[host].inputs.keys()
        if old[host].inputs.get(key) != new[host].inputs.get(key)
    )
    # A new network or a new image has a new id, which makes every container on it anew (the mock's
    # ids follow the names, so its containers do not show it).
    network_or_image = [
        name
        for name in changed | made_or_dropped
        if (after.get(name) or before[name]).type == "docker:index/network:Network" or name.endswith("-build")
    ]
    if containers_anew or network_or_image:
        return Effect.NEW_CONTAINERS
    if after[RUN].inputs["triggers"] != before[RUN].inputs["triggers"]:
        return Effect.NEW_RUN
    if RUN in changed:
        return Effect.REPORTS_ONLY
    return Effect.NOTHING


def both(**values: Any) -> Callable[[dict[str, Any]], None]:
    def change(config: dict[str, Any]) -> None:
        for path, value in values.items():
            set_key(config, path, value)

    return change


PROBES: list[tuple[str, Any]] = [
    ("hosts[1].ssh_port", 2222),
    ("hosts[0].ssh_user", "admin"),
    ("hosts[1].gpus", 1),
    ("hosts[1].container_address", "10.0.3.140"),
    ("hosts[1].overrides", {"shm_size": "2G"}),
    ("hosts[1].overrides", {"env": {"NCCL_DEBUG": "WARN"}}),
    ("hosts[1].name", "server9"),
    ("operator.host_timeout", 120),
    ("operator.known_hosts_path", ".simhosts/other_known_hosts"),
    ("network.name", "lab-net"),
    ("network.subnet", "10.0.4.0/24"),
    ("network.ip_range", "10.0.3.0/26"),
    ("network.mtu", 1400),
    ("network.encrypted", True),
    ("network.mode", "host"),
    ("image.apt_packages", ["vim"]),
    ("image.python", "3.11"),
    ("image.tag", "lab/train"),
    ("image.distribution", "every-host"),
    ("image.platform", "linux/arm64"),
    ("container.name", "train"),
    ("container.shm_size", "2G"),
    ("container.ulimits", {"memlock": 8388608}),
    ("container.env", {"NCCL_DEBUG": "INFO"}),
    ("container.mounts", [{"source": "/srv/data", "target": "/data"}]),
    ("container.ssh_port", 2200),
    ("container.restart", "unless-stopped"),
    ("training.wait", False),
    ("training.stall_timeout", 600),
    ("training.resume", "never"),
    ("training.master_port", 29600),
    ("training.results_dir", "/srv/dslab/runs"),
    ("training.results_on_destroy", "remove"),
    ("training.socket_ifname", "eth0"),
    ("training.preflight.enabled", False),
    ("training.preflight.min_busbw_gbps", 5.0),
    ("training.preflight.reach_timeout", 120),
    ("training.workload.args", ["--steps", "30"]),
    ("training.workload.workdir", "/home/user/code"),
    ("training.workload.output_dir_flag", "--out"),
    ("training.deepspeed.zero_stage", 1),
]
"""One change of each kind, on the running dev stack (two CPU hosts, a script workload)."""

TOGETHER: list[tuple[str, Mapping[str, Any]]] = [
    ("hosts[].role", {"hosts[0].role": "worker", "hosts[1].role": "manager"}),
    ("hosts[].slots", {"hosts[1].slots": 2, "training.deepspeed.train_batch_size": 12}),
    ("network.ipsec", {"network.encrypted": True, "network.ipsec": "strongswan"}),
]
"""Changes validation takes only with another: the effect expected is the key named first's."""

AFTER: list[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = [
    ("training.deepspeed.loss_scaling", {"training.deepspeed.precision": "fp16"}, {"hysteresis": 1}),
    ("training.deepspeed.loss_scaling.hysteresis", {"training.deepspeed.precision": "fp16"}, 1),
]
"""Keys that count only after another change, applied first: loss scaling under fp16."""


def assert_planned_as_said(
    change: Callable[[dict[str, Any]], None], said: Effect, what: str, first: Mapping[str, Any] | None = None
) -> None:
    """CHANGE on the running dev stack (after FIRST was applied) is planned as SAID."""
    model = LabModel.running(hosts=2)
    if first:
        assert model.edit(both(**first)) is None
        model.up(model.preview())
    refused = model.edit(change)
    assert refused is None, refused
    planned = planned_effect(model.preview())
    # What only changes how this machine reaches the hosts may run their steps again, the run's too.
    allowed = {Effect.NOTHING, Effect.REPORTS_ONLY} if said is Effect.NOTHING else {said}
    assert planned in allowed, f"{what} says {said.value}, but the program plans {planned.value}"


@pytest.mark.parametrize(("path", "value"), PROBES, ids=[path for path, _ in PROBES])
def test_what_a_key_says_its_change_does_is_what_the_program_plans(path: str, value: Any) -> None:
    row = row_of(path)
    assert row.change is not None
    assert_planned_as_said(both(**{path: value}), row.change.effect, f"{row.path} (set to {value!r})")


@pytest.mark.parametrize(("key", "values"), TOGETHER, ids=[key for key, _ in TOGETHER])
def test_keys_changed_together_are_planned_as_the_first_says(key: str, values: Mapping[str, Any]) -> None:
    change = ROWS[f"dslab:{key}"].change
    assert change is not None
    assert_planned_as_said(both(**values), change.effect, f"dslab:{key}")


@pytest.mark.parametrize(("path", "first", "value"), AFTER, ids=[path for path, _, _ in AFTER])
def test_a_key_that_counts_after_another_is_planned_as_it_says(path: str, first: Mapping[str, Any], value: Any) -> None:
    change = row_of(path).change
    assert change is not None
    assert_planned_as_said(both(**{path: value}), change.effect, f"dslab:{path} after {dict(first)}", first)


def test_every_effect_is_seen_in_a_plan() -> None:
    said = {row_of(path).change.effect for path, _ in PROBES if row_of(path).change is not None}  # type: ignore[union-attr]
    assert said == set(Effect)
