"""The bad-input corpus: every stack file in ``bad_stacks/`` is rejected before any remote action.

Each corpus file is a complete stack file that breaks a valid base (``_base.yaml``, or the one
its ``# base:`` line names) in one place. Its leading comment lines say what the validator
must answer:

    # expect: <fragment of the error output, starting with the key path>
    # base: <valid base file>      (optional; default _base.yaml)
    # problems: <n>                (optional; default 1)
    # schema: accepts (<why>)      (optional; default: the stack file's JSON Schema rejects the
                                    file; `accepts` for a rule across keys it cannot state, `no
                                    document` for a file that is no YAML: test_stack_schema.py)

``python -m components.validate`` reads no host (it has no network code), so most cases call
its ``main`` in-process; a few run it as a subprocess, the way a user does.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.validate import main
from tests.support.validate_cli import run_validate

REPO = Path(__file__).resolve().parents[2]
CORPUS_DIR = Path(__file__).resolve().parent / "bad_stacks"
CORPUS = sorted(path for path in CORPUS_DIR.glob("*.yaml") if not path.name.startswith("_"))
BASES = sorted(CORPUS_DIR.glob("_*.yaml"))
DEFAULT_BASE = "_base.yaml"
MINIMUM_CORPUS = 30

# Run as real subprocesses: a file-level fault, a cross-host rule, a field rule.
SUBPROCESS_CASES = (
    "not-yaml-at-all.yaml",
    "duplicate-host-names.yaml",
    "env-value-with-newline.yaml",
)

Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Case:
    """One corpus file and what its header says the validator answers."""

    path: Path
    expect: str
    base: str
    problems: int

    @property
    def key(self) -> str:
        """The key the fragment starts with, e.g. ``dslab:hosts[1].address``."""
        return self.expect.split(": ", 1)[0]


def read_case(path: Path) -> Case:
    header: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"# (expect|base|problems|schema): (.+)", line)
        if not match:
            break
        header[match[1]] = match[2]
    assert "expect" in header, f"{path.name} must start with '# expect: <fragment>'"
    return Case(
        path=path,
        expect=header["expect"],
        base=header.get("base", DEFAULT_BASE),
        problems=int(header.get("problems", "1")),
    )


def validate(path: Path) -> tuple[int, str]:
    """``python -m components.validate PATH`` in-process: exit status and output."""
    out = io.StringIO()
    status = main([str(path)], out)
    return status, out.getvalue()


def names_key(output: str, key: str) -> bool:
    """Some problem line names ``key`` as the thing it is about (``<key>: ...``)."""
    pattern = re.compile(rf"(^|[\s/]){re.escape(key)}: ")
    return any(pattern.search(line.strip()) for line in output.splitlines()[1:])


def problem_count(output: str) -> int:
    match = re.search(r": (\d+) problems? in the stack configuration:", output)
    assert match, f"no problem count in:\n{output}"
    return int(match[1])


def assert_rejected_as_expected(case: Case, status: int, output: str) -> None:
    assert status == 1, f"{case.path.name} was accepted:\n{output}"
    assert case.expect in output, f"{case.path.name}: expected {case.expect!r} in:\n{output}"
    assert names_key(output, case.key), f"{case.path.name}: no problem line names {case.key}:\n{output}"
    assert problem_count(output) == case.problems, (
        f"{case.path.name} should have exactly {case.problems} problem(s), one fault:\n{output}"
    )
    assert "v1:" not in output, "an encrypted secret was echoed"


def config_of(path: Path) -> Mapping[str, Any] | None:
    """The ``config:`` mapping of a stack file, or None when the file has none to compare."""
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return None
    if not isinstance(document, Mapping):
        return None
    config = document.get("config")
    return config if isinstance(config, Mapping) else None


def differences(old: Any, new: Any, loc: Loc = ()) -> list[tuple[str, Loc]]:
    """Where two YAML trees differ: ("added" | "removed" | "changed", path), shallowest first."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        found: list[tuple[str, Loc]] = []
        for key in [*old, *(key for key in new if key not in old)]:
            if key not in new:
                found.append(("removed", (*loc, key)))
            elif key not in old:
                found.append(("added", (*loc, key)))
            else:
                found += differences(old[key], new[key], (*loc, key))
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            change
            for index, (a, b) in enumerate(zip(old, new, strict=True))
            for change in differences(a, b, (*loc, index))
        ]
    # type() too: YAML's true is not the number 1.
    return [] if (type(old), old) == (type(new), new) else [("changed", loc)]


def is_one_fault(changes: list[tuple[str, Loc]]) -> bool:
    """One changed, added or removed key; or one key renamed (removed and added side by side)."""
    if len(changes) == 1:
        return True
    if len(changes) == 2:
        (kind_a, loc_a), (kind_b, loc_b) = changes
        return {kind_a, kind_b} == {"added", "removed"} and loc_a[:-1] == loc_b[:-1]
    return False


CASES = [read_case(path) for path in CORPUS]


def test_the_corpus_holds_at_least_thirty_broken_stack_files() -> None:
    assert len(CORPUS) >= MINIMUM_CORPUS, [path.name for path in CORPUS]


@pytest.mark.parametrize("base", BASES, ids=lambda path: path.name)
def test_every_base_the_corpus_breaks_is_itself_valid(base: Path) -> None:
    status, output = validate(base)
    assert status == 0, output


def test_the_default_base_passes_the_cli_with_exit_0() -> None:
    result = run_validate(CORPUS_DIR / DEFAULT_BASE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].endswith(f"{DEFAULT_BASE}: valid")


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path.stem)
def test_each_broken_stack_file_is_rejected_with_a_message_naming_the_key(
    case: Case,
) -> None:
    status, output = validate(case.path)
    assert_rejected_as_expected(case, status, output)


@pytest.mark.parametrize("name", SUBPROCESS_CASES)
def test_the_cli_rejects_a_broken_stack_file_as_the_user_runs_it(name: str) -> None:
    case = read_case(CORPUS_DIR / name)
    result = run_validate(case.path)
    assert result.stderr == "", "problems go to stdout, nothing crashes"
    assert_rejected_as_expected(case, result.returncode, result.stdout)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path.stem)
def test_each_broken_stack_file_differs_from_its_valid_base_in_one_place(
    case: Case,
) -> None:
    base = CORPUS_DIR / case.base
    assert base in BASES, f"{case.path.name}: base {case.base} is not in bad_stacks/"
    broken = config_of(case.path)
    if broken is None:
        pytest.skip("a file-level fault: no config: mapping to compare")
    changes = differences(config_of(base), broken)
    assert is_one_fault(changes), f"{case.path.name} differs from {case.base} in more than one place: {changes}"


# --- inputs that once passed validation and must not ------------------------------------


def variant_of_base(tmp_path: Path, old: str, new: str, base: str = DEFAULT_BASE) -> Path:
    """``base`` with its first ``old`` replaced by ``new``, written to ``tmp_path``."""
    text = (CORPUS_DIR / base).read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "Pulumi.gap.yaml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "base", "expect"),
    [
        pytest.param(
            "ssh_port: 22",
            "ssh_port: true",
            DEFAULT_BASE,
            "dslab:hosts[0].ssh_port: True is a boolean; expected a number",
            id="a-boolean-ssh-port",
        ),
        pytest.param(
            "  dslab:image:",
            "  dslab:network:\n    name: other-net\n  dslab:image:",
            DEFAULT_BASE,
            "'dslab:network' is given twice; keep one",
            id="a-key-given-twice-in-the-yaml",
        ),
        pytest.param(
            "address: 10.0.18.2",
            "address: 0.0.0.0",
            DEFAULT_BASE,
            "dslab:hosts[1].address: '0.0.0.0' is not an address another machine can reach",
            id="a-host-address-no-host-can-have",
        ),
        pytest.param(
            "gpus: all\n      slots: 1",
            "gpus: [0]\n      slots: 4",
            "_base-llamafactory.yaml",
            "slots 4 is more than the 1 GPU(s) in gpus",
            id="more-slots-than-listed-gpus",
        ),
    ],
)
def test_an_input_the_validator_should_reject(tmp_path: Path, old: str, new: str, base: str, expect: str) -> None:
    status, output = validate(variant_of_base(tmp_path, old, new, base))
    assert status == 1, output
    assert expect in output and problem_count(output) == 1, f"rejected for that one fault:\n{output}"
