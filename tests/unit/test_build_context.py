"""The training image's build context, as the program makes it: `components.render.build_context`
chooses the files, hashes them and writes them to the directory `docker.RemoteImage` sends to
the engine. Checked by reading that directory as a tar, as the engine gets it, without one."""

from __future__ import annotations

import io
import os
import re
import shutil
import tarfile
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from components.render.build_context import build_args, context_entries, context_hash
from components.steps.context_cache import CONTEXT_KEEP_DAYS, context_dir
from components.paths import ASSETS_DIR
from components.config import ImageConfig

DOCKERFILES = {variant: ASSETS_DIR / "image" / f"Dockerfile.{variant}" for variant in ("cpu", "gpu")}
CONTAINER_SCRIPTS = sorted(path.name for path in (ASSETS_DIR / "container").iterdir())
PEM = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"

Entries = dict[str, dict[str, Any]]
Variant = Literal["cpu", "gpu"]


@pytest.fixture(autouse=True)
def cache_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Contexts are written under a cache of the test's own."""
    cache = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return cache


def context_tar(entries: Entries) -> tarfile.TarFile:
    """The context directory, as a tar of its files and folders (what the engine receives)."""
    directory = context_dir(entries, f"dslab/test:{context_hash(entries, {})}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in sorted(directory.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(directory)), recursive=False)
    buffer.seek(0)
    return tarfile.open(fileobj=buffer)


def member_bytes(tar: tarfile.TarFile, name: str) -> bytes:
    file = tar.extractfile(name)
    assert file is not None, f"{name} is a regular file in the context"
    return file.read()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with a CA bundle and a wheelhouse of one wheel."""
    (tmp_path / "ca.crt").write_text(PEM)
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04wheel")
    return tmp_path


def full_image(**overrides: Any) -> ImageConfig:
    """A cpu image with every optional input given, paths relative to the project."""
    settings: dict[str, Any] = {
        "variant": "cpu",
        "apt_packages": ("vim", "htop"),
        "pip_requirements": ("transformers==4.33.1", "peft"),
        "ca_bundle_path": "ca.crt",
        "wheelhouse_path": "wheels",
    }
    return ImageConfig(**{**settings, **overrides})


# --- what is in the context --------------------------------------------------------------


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_the_context_holds_the_variants_dockerfile_and_every_input(variant: Variant, tmp_path: Path) -> None:
    with context_tar(context_entries(ImageConfig(variant=variant), tmp_path)) as tar:
        names = {member.name for member in tar.getmembers() if member.isfile()}
        assert member_bytes(tar, "Dockerfile") == DOCKERFILES[variant].read_bytes(), "the variant picks the Dockerfile"
        assert member_bytes(tar, "requirements.txt") == b"", "no requirements: an empty file, so no pip step runs"
        assert member_bytes(tar, "ca-bundle.crt") == b"", "no extra CA: an empty bundle, which the build appends"
    assert names == {
        "Dockerfile",
        "ca-bundle.crt",
        "requirements.txt",
        "wheelhouse/.keep",
        "llamafactory-constraints.txt",
        *(f"dslab/{name}" for name in CONTAINER_SCRIPTS),
        "dslab/train_tiny.py",
        "dslab/make_tiny_llama.py",
        "dslab/llamafactory_train.py",
        "dslab/allreduce_bench.py",
        "dslab/checkpoint_parts.py",
    }, "every script of assets/container and the python tools go to /opt/dslab; an empty wheelhouse still exists"


def test_without_llamafactory_its_constraints_are_empty_and_no_version_is_passed(tmp_path: Path) -> None:
    image = ImageConfig(variant="cpu")
    with context_tar(context_entries(image, tmp_path)) as tar:
        assert member_bytes(tar, "llamafactory-constraints.txt") == b"", "an empty file: the COPY still finds it"
    assert "LLAMAFACTORY_VERSION" not in build_args(image), "the Dockerfile skips the layer when it is empty"


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_a_llamafactory_release_brings_its_pinned_constraints_and_its_version(variant: Variant, tmp_path: Path) -> None:
    image = ImageConfig(variant=variant, llamafactory="0.9.4", python=None if variant == "cpu" else "3.11")
    with context_tar(context_entries(image, tmp_path)) as tar:
        constraints = member_bytes(tar, "llamafactory-constraints.txt").decode()
    pins = [line for line in constraints.splitlines() if line and not line.startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", pin) for pin in pins), "every line pins one version"
    assert {"transformers==4.57.1", "peft==0.17.1", "trl==0.24.0", "accelerate==1.11.0"} <= set(pins)
    assert not any(pin.split("==")[0] in {"torch", "torchvision", "torchaudio", "numpy"} for pin in pins), (
        "each variant brings its own torch family"
    )
    assert build_args(image)["LLAMAFACTORY_VERSION"] == "0.9.4"


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_every_source_the_dockerfile_copies_is_in_the_context(variant: Variant, tmp_path: Path) -> None:
    sources = re.findall(r"^COPY (\S+) ", DOCKERFILES[variant].read_text(), re.MULTILINE)
    assert sources, "the Dockerfile copies from the context"
    with context_tar(context_entries(ImageConfig(variant=variant), tmp_path)) as tar:
        names = tar.getnames()
    for source in sources:
        if source.endswith("/"):
            assert any(name.startswith(source) for name in names), f"COPY {source} needs a non-empty folder"
        else:
            assert source in names, f"COPY {source} needs that file"


def test_the_container_scripts_are_executable_in_the_context(tmp_path: Path) -> None:
    with context_tar(context_entries(ImageConfig(variant="cpu"), tmp_path)) as tar:
        for name in CONTAINER_SCRIPTS:
            assert tar.getmember(f"dslab/{name}").mode & 0o111, f"dslab/{name} is run as a program"
        assert tar.getmember("requirements.txt").mode == 0o644, "generated files are plain readable files"


def test_every_member_is_a_plain_file_or_folder_under_the_context_root(project: Path) -> None:
    with context_tar(context_entries(full_image(), project)) as tar:
        for member in tar.getmembers():
            assert member.isfile() or member.isdir(), f"{member.name}: links would point outside the context"
            assert not member.name.startswith("/") and ".." not in member.name.split("/"), member.name


def test_requirements_ca_bundle_and_wheels_are_copied_when_given(project: Path) -> None:
    with context_tar(context_entries(full_image(), project)) as tar:
        names = tar.getnames()
        assert member_bytes(tar, "requirements.txt") == b"transformers==4.33.1\npeft\n", "one specifier a line"
        assert member_bytes(tar, "ca-bundle.crt") == PEM.encode()
        assert member_bytes(tar, "wheelhouse/a-1.0-py3-none-any.whl") == b"PK\x03\x04wheel"
    assert "wheelhouse/.keep" not in names, "the placeholder is only for an empty wheelhouse"


def test_relative_input_paths_are_read_from_the_project_directory(project: Path) -> None:
    entries = context_entries(full_image(), project)
    assert entries["ca-bundle.crt"]["path"] == str(project / "ca.crt")
    assert entries["wheelhouse"]["path"] == str(project / "wheels")


def test_absolute_input_paths_are_taken_as_they_are(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    entries = context_entries(full_image(ca_bundle_path=str(project / "ca.crt")), elsewhere)
    assert entries["ca-bundle.crt"]["path"] == str(project / "ca.crt")


def test_a_symlinked_ca_bundle_goes_into_the_context_as_the_file_it_points_to(project: Path) -> None:
    # Common: Fedora's /etc/ssl/certs/ca-bundle.crt, every hashed name in /etc/ssl/certs.
    (project / "link.crt").symlink_to(project / "ca.crt")
    with context_tar(context_entries(full_image(ca_bundle_path="link.crt"), project)) as tar:
        assert tar.getmember("ca-bundle.crt").isfile()


# --- build args ----------------------------------------------------------------------------


def test_build_args_follow_the_image_settings() -> None:
    assert build_args(ImageConfig(variant="cpu", apt_packages=("vim", "htop"))) == {
        "BASE_IMAGE": "local/debian:trixie",
        "APT_PACKAGES": "vim htop",
    }, "cpu uses the base image's python3: no PYTHON_VERSION"
    assert build_args(ImageConfig(variant="gpu"))["PYTHON_VERSION"] == "3.10"


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_every_build_arg_the_program_passes_is_declared_by_the_dockerfile(variant: Variant) -> None:
    declared = set(re.findall(r"^ARG (\w+)", DOCKERFILES[variant].read_text(), re.MULTILINE))
    passed = set(build_args(ImageConfig(variant=variant)))
    assert passed <= declared, f"an undeclared arg is silently ignored: {sorted(passed - declared)}"


# --- the content hash ----------------------------------------------------------------------


def test_the_same_inputs_give_the_same_hash(project: Path) -> None:
    image = full_image()
    first = context_hash(context_entries(image, project), build_args(image))
    again = context_hash(context_entries(image, project), build_args(image))
    assert first == again, "a stable hash lets the image tag decide when to rebuild"
    assert re.fullmatch(r"[0-9a-f]{16}", first), "it is used as a docker tag"


def copy_inputs(entries: Entries, into: Path) -> Entries:
    """The same context with every file copied under `into` (a different place, new mtimes)."""
    copied: Entries = {}
    for index, (name, entry) in enumerate(entries.items()):
        if "path" not in entry:
            copied[name] = dict(entry)
            continue
        source = Path(entry["path"])
        target = into / str(index) / source.name
        target.parent.mkdir(parents=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copyfile(source, target)
        copied[name] = {**entry, "path": str(target)}
    return copied


def test_the_place_order_and_age_of_the_files_do_not_change_the_hash(project: Path, tmp_path: Path) -> None:
    image = full_image()
    entries, args = context_entries(image, project), build_args(image)
    moved = copy_inputs(entries, tmp_path / "moved")
    for entry in moved.values():
        if "path" in entry:
            os.utime(entry["path"], (0, 0))
    reordered = dict(reversed(list(moved.items())))
    assert context_hash(reordered, dict(reversed(list(args.items())))) == context_hash(entries, args), (
        "moving the checkout, a fresh clone or `touch` must not rebuild the image and replace the containers"
    )


def test_image_settings_that_do_not_reach_the_build_do_not_change_the_hash(project: Path) -> None:
    def digest(image: ImageConfig) -> str:
        return context_hash(context_entries(image, project), build_args(image))

    assert digest(full_image(tag="other/name", distribution="build-once")) == digest(full_image()), (
        "the image's name and how it is shipped are not inputs of the build"
    )


def changed_in_one_place(entries: Entries, name: str, into: Path) -> Entries:
    """`entries` with only the file(s) of entry `name` edited."""
    entry = entries[name]
    if "content" in entry:
        return {**entries, name: {**entry, "content": entry["content"] + "#"}}
    copied = copy_inputs({name: entry}, into)[name]
    path = Path(copied["path"])
    file = min(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else path
    file.write_bytes(file.read_bytes() + b"#")
    return {**entries, name: copied}


def test_changing_any_one_context_file_changes_the_hash(project: Path, tmp_path: Path) -> None:
    image = full_image()
    entries, args = context_entries(image, project), build_args(image)
    base = context_hash(entries, args)
    for index, name in enumerate(entries):
        changed = changed_in_one_place(entries, name, tmp_path / f"edit{index}")
        assert context_hash(changed, args) != base, f"an edit of {name} must rebuild the image"


def test_adding_removing_or_renaming_a_wheel_changes_the_hash(project: Path) -> None:
    image = full_image()
    args = build_args(image)
    digests = {context_hash(context_entries(image, project), args)}
    (project / "wheels" / "b-2.0-py3-none-any.whl").write_bytes(b"PK")
    digests.add(context_hash(context_entries(image, project), args))
    (project / "wheels" / "b-2.0-py3-none-any.whl").rename(project / "wheels" / "c-2.0-py3-none-any.whl")
    digests.add(context_hash(context_entries(image, project), args))
    assert len(digests) == 3, "the wheelhouse's file names are part of what pip sees"


def test_changing_any_one_build_arg_changes_the_hash(project: Path) -> None:
    image = full_image()
    entries, args = context_entries(image, project), build_args(image)
    base = context_hash(entries, args)
    for key in args:
        assert context_hash(entries, {**args, key: args[key] + "x"}) != base, f"{key} is an input of the build"
    assert context_hash(entries, {**args, "NEW_ARG": ""}) != base, "a new (even empty) arg is an input too"


def test_apt_packages_and_pip_requirements_are_inputs_of_the_hash(project: Path) -> None:
    def digest(image: ImageConfig) -> str:
        return context_hash(context_entries(image, project), build_args(image))

    base = digest(full_image())
    assert digest(full_image(apt_packages=("vim",))) != base
    assert digest(full_image(pip_requirements=("peft",))) != base
    assert digest(full_image(variant="gpu")) != base


# --- the context directory -----------------------------------------------------------------


def test_the_context_directory_is_named_by_the_tag_and_made_once(project: Path, cache_home: Path) -> None:
    entries = context_entries(full_image(), project)
    directory = context_dir(entries, "dslab/train:0123456789abcdef")
    assert directory == cache_home / "dslab" / "build-contexts" / "dslab_train-0123456789abcdef"
    assert (directory / "ca-bundle.crt").read_text() == PEM
    (project / "ca.crt").write_text("changed")  # a new content has a new tag; this one is kept as made
    assert context_dir(entries, "dslab/train:0123456789abcdef") == directory
    assert (directory / "ca-bundle.crt").read_text() == PEM
    assert [path.name for path in directory.parent.iterdir()] == [directory.name], "no partial left behind"


def test_contexts_unused_for_weeks_go_when_another_is_made(project: Path, cache_home: Path) -> None:
    entries = context_entries(full_image(), project)
    old = context_dir(entries, "dslab/train:old")
    recent = context_dir(entries, "dslab/train:recent")
    weeks_ago = time.time() - (CONTEXT_KEEP_DAYS + 1) * 86400
    os.utime(old, (weeks_ago, weeks_ago))
    context_dir(entries, "dslab/train:new")
    assert not old.exists() and recent.exists()
