"""The stack file's JSON Schema (schema/stack.schema.json) says what the loader says: it accepts
every valid stack file of the project, rejects every file of the bad-input corpus at the key the
loader names (but those whose `# schema:` line says why it cannot: a rule across keys), and its
patterns accept exactly what the validators in components.config.fields accept.
"""

from __future__ import annotations

import difflib
import ipaddress
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, ValidationError

from components.config import load_stack_file
from components.config.base import NAMESPACE
from components.config.fields import as_int, ipv4_address, ipv4_network, size
from components.config.lab import TOP_LEVEL_KEYS
from components.config.loading import strip_namespace
from components.config.shapes import IPV4_HOST_ADDRESS, SIZE_TEXT, at_least, integer_text
from components.config.shapes import ipv4_network as ipv4_network_text
from components.config.stack_schema import SCHEMA_PATH, near_misses, schema_text, stack_schema
from harness.pulumi_cli import REPO

CORPUS_DIR = REPO / "tests" / "unit" / "bad_stacks"
MODELINE = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")

STACK_FILES = sorted(
    [REPO / "Pulumi.dev.yaml", REPO / "bench" / "gpu-check.yaml", *(REPO / "examples").rglob("*.yaml")]
)
"""The project's stack files: each names the schema on its first line."""
VALID_STACKS = [*STACK_FILES, *sorted(CORPUS_DIR.glob("_*.yaml"))]
BROKEN_STACKS = sorted(path for path in CORPUS_DIR.glob("*.yaml") if not path.name.startswith("_"))


@pytest.fixture(scope="module")
def validator() -> Draft202012Validator:
    schema = stack_schema()
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def document(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def header(path: Path, key: str) -> str | None:
    """The value of the corpus file's `# KEY: value` line (test_bad_stacks.py's header)."""
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.fullmatch(r"# (\w+): (.+)", line)
        if not match:
            return None
        if match[1] == key:
            return match[2]
    return None


def key_path(expect: str) -> list[str | int]:
    """``dslab:hosts[1].address: ...`` -> ``["config", "dslab:hosts", 1, "address"]`` (a key that
    is no identifier is written ``env['NCCL-DEBUG']``)."""
    key = expect.split(": ", 1)[0]
    namespace, _, rest = key.partition(":")
    tokens = re.findall(r"\.?([A-Za-z_][\w-]*)|\[(\d+)\]|\['([^']*)'\]", rest)
    path: list[str | int] = []
    for name, index, quoted in tokens:
        path.append(int(index) if index else name or quoted)
    return ["config", f"{namespace}:{path[0]}", *path[1:]]


def error_paths(errors: list[ValidationError]) -> Iterator[list[str | int]]:
    """Where each error is, those inside an anyOf/oneOf's branches too."""
    for error in errors:
        yield list(error.absolute_path)
        yield from error_paths(list(error.context or []))


# --- the file on disk and the files that name it -------------------------------------------


def test_the_schema_file_is_what_the_models_make() -> None:
    on_disk = (REPO / SCHEMA_PATH).read_text(encoding="utf-8")
    assert on_disk == schema_text(), f"{SCHEMA_PATH} is stale: run python -m components.reference"


@pytest.mark.parametrize("path", STACK_FILES, ids=lambda path: str(path.relative_to(REPO)))
def test_each_stack_file_of_the_project_names_the_schema_on_its_first_line(path: Path) -> None:
    match = MODELINE.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.relative_to(REPO)} starts with '# yaml-language-server: $schema=<path to {SCHEMA_PATH}>'"
    assert (path.parent / match[1]).resolve() == REPO / SCHEMA_PATH, (
        "the path, relative to the file, leads to the schema"
    )


# --- stack files --------------------------------------------------------------------------------


@pytest.mark.parametrize("path", VALID_STACKS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_valid_stack_file_is_accepted(path: Path, validator: Draft202012Validator) -> None:
    load_stack_file(path)  # valid for the loader
    errors = [f"{list(error.absolute_path)}: {error.message}" for error in validator.iter_errors(document(path))]
    assert not errors, "\n".join(errors)


def test_a_private_key_given_as_a_pulumi_secret_is_accepted(validator: Draft202012Validator) -> None:
    stack = document(REPO / "Pulumi.dev.yaml")
    operator = stack["config"]["dslab:operator"]
    del operator["private_key_path"]
    operator["private_key"] = {"secure": "v1:c2VjcmV0"}
    assert not list(validator.iter_errors(stack))


def test_other_namespaces_keys_are_theirs_and_a_dslab_key_the_models_lack_is_refused(
    validator: Draft202012Validator,
) -> None:
    stack = document(REPO / "Pulumi.dev.yaml")
    stack["config"] |= {"pulumi:disable-default-providers": ["*"], "docker:host": {"secure": "v1:eA=="}}
    assert not list(validator.iter_errors(stack)), "a provider's or Pulumi's own keys are allowed"
    stack["config"]["dslab:hosts_extra"] = []
    assert list(validator.iter_errors(stack)), "an unknown dslab: key is refused"


@pytest.mark.parametrize("path", BROKEN_STACKS, ids=lambda path: path.stem)
def test_each_broken_stack_file_is_rejected_at_its_key_unless_its_header_says_why_not(
    path: Path, validator: Draft202012Validator
) -> None:
    says = header(path, "schema")
    if says is not None and says.startswith("no document"):
        with pytest.raises(yaml.YAMLError):
            document(path)
        return
    errors = list(validator.iter_errors(document(path)))
    if says is not None:
        assert says.startswith("accepts (") and says.endswith(")"), f"{path.name}: '# schema: accepts (<why>)'"
        assert not errors, f"{path.name} says the schema accepts it, which it does not: {errors[0].message}"
        return
    assert errors, f"{path.name} is accepted by the schema; express its rule, or mark it '# schema: accepts (<why>)'"
    expect = header(path, "expect") or ""
    if expect.startswith(f"{NAMESPACE}:"):
        wanted = key_path(expect)
        found = list(error_paths(errors))
        assert any(wanted[: len(where)] == where for where in found), (
            f"{path.name}: the schema should complain at {wanted} or a mapping holding it, not only at {found}"
        )


# --- the patterns against the validators ------------------------------------------------------------


def takes(validate: Any, value: Any) -> bool:
    try:
        validate(value)
    except ValueError:
        return False
    return True


ADDRESSES = st.one_of(
    st.ip_addresses(v=4).map(str),
    st.lists(
        st.sampled_from(["0", "1", "10", "127", "128", "223", "224", "255", "256", "01", ""]), min_size=3, max_size=5
    ).map(".".join),
)


@settings(max_examples=400)
@given(address=ADDRESSES, pad=st.sampled_from(["", " ", "\t"]))
def test_the_address_pattern_takes_what_ipv4_address_takes(address: str, pad: str) -> None:
    text = f"{pad}{address}{pad}"
    assert bool(re.search(IPV4_HOST_ADDRESS, text)) == takes(ipv4_address, text), repr(text)


@st.composite
def networks(draw: st.DrawFn) -> str:
    prefix = draw(st.integers(min_value=0, max_value=34))
    address = draw(st.ip_addresses(v=4))
    if prefix > 32:
        return f"{address}/{prefix}"
    network = ipaddress.IPv4Network((int(address), prefix), strict=False)
    start = draw(st.sampled_from([network.network_address, address]))
    mask = draw(st.sampled_from([str(prefix), f"0{prefix}", str(network.netmask), str(network.hostmask)]))
    return f"{start}/{mask}"


@settings(max_examples=400)
@given(text=networks(), max_prefix=st.sampled_from([32, 29]))
def test_the_subnet_pattern_takes_what_ipv4_network_takes_up_to_its_prefix(text: str, max_prefix: int) -> None:
    expected = takes(ipv4_network, text) and ipaddress.IPv4Network(text).prefixlen <= max_prefix
    assert bool(re.search(ipv4_network_text(max_prefix), text)) == expected, text


@settings(max_examples=400)
@given(
    number=st.integers(min_value=0, max_value=2**31),
    unit=st.sampled_from(["", "b", "k", "K", "m", "M", "g", "G", "t", "kib", "MB", "gi", "x", "ib", "bb"]),
    space=st.sampled_from(["", " "]),
)
def test_the_size_pattern_takes_what_size_takes(number: int, unit: str, space: str) -> None:
    text = f"{number}{space}{unit}"
    assert bool(re.search(SIZE_TEXT, text)) == takes(size, text), text


@settings(max_examples=300)
@given(number=st.integers(min_value=0, max_value=10**9), minimum=st.sampled_from([0, 1, 9, 10, 1024, 1048576]))
def test_at_least_matches_exactly_the_numbers_from_its_minimum(number: int, minimum: int) -> None:
    assert bool(re.fullmatch(at_least(minimum), str(number))) == (number >= minimum)
    assert bool(re.fullmatch(at_least(minimum), f"00{number}")) == (number >= minimum), "leading zeros"


@settings(max_examples=200)
@given(text=st.from_regex(r"\A\s?-?[0-9]{1,4}\s?\Z") | st.text(max_size=4))
def test_an_integer_as_text_is_read_as_as_int_reads_it(text: str) -> None:
    number = as_int(text)
    assert bool(re.search(integer_text(1), text)) == (number is not None and number >= 1), repr(text)


def test_every_namespace_one_typo_from_dslab_is_one_the_loader_refuses() -> None:
    pattern = re.compile(near_misses())
    letters = "abdlsxz0-"
    variants = {NAMESPACE[:i] + c + NAMESPACE[i:] for i in range(len(NAMESPACE) + 1) for c in letters}
    variants |= {NAMESPACE[:i] + NAMESPACE[i + 1 :] for i in range(len(NAMESPACE))}
    variants |= {NAMESPACE[:i] + c + NAMESPACE[i + 1 :] for i in range(len(NAMESPACE)) for c in letters}
    variants |= {
        NAMESPACE[:i] + NAMESPACE[i + 1] + NAMESPACE[i] + NAMESPACE[i + 2 :] for i in range(len(NAMESPACE) - 1)
    }
    variants.discard(NAMESPACE)
    for variant in sorted(variants):
        for key in TOP_LEVEL_KEYS:
            assert pattern.search(f"{variant}:{key}"), f"{variant}:{key}"
            _, problems = strip_namespace({f"{variant}:{key}": {}})
            assert problems, f"the loader takes {variant}:{key} for another namespace's key"
            assert difflib.SequenceMatcher(None, variant, NAMESPACE).ratio() >= 0.6
    assert not pattern.search(f"{NAMESPACE}:hosts") and not pattern.search("docker:host")


def test_the_workload_kinds_are_told_apart_by_kind(validator: Draft202012Validator) -> None:
    stack: Mapping[str, Any] = document(REPO / "Pulumi.dev.yaml")
    workload = stack["config"]["dslab:training"]["workload"]
    workload["kind"] = "llamafactory"
    errors = list(validator.iter_errors(stack))
    assert errors, "a script's keys under kind: llamafactory are refused"
