"""The training image's build context: which local files go in it and its content hash (pure:
the directory the engine builds from is written by the image step that sends it,
components.steps.context_cache).

The hash names the image tag, so the image is rebuilt (and the containers replaced)
exactly when an input changes, and never otherwise.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.config import ImageConfig
from components.paths import ASSETS_DIR, project_path

CONTAINER_PYTHON_SCRIPTS = (
    "train_tiny.py",
    "make_tiny_llama.py",
    "llamafactory_train.py",
    "allreduce_bench.py",
    "checkpoint_parts.py",
)
"""Python scripts of ``assets/`` copied to ``/opt/dslab/`` in the image (checkpoint_parts.py is
imported by the two training scripts beside it)."""


def llamafactory_constraints(release: str) -> Path:
    """The constraints file pinning every requirement of LLaMA-Factory ``release``."""
    return ASSETS_DIR / "image" / "llamafactory" / f"{release}.txt"


def context_entries(image: ImageConfig, project_dir: Path) -> dict[str, dict[str, Any]]:
    """Name in the context -> `{"path": local file or directory}` or `{"content": text}`."""
    entries: dict[str, dict[str, Any]] = {
        "Dockerfile": {"path": str(ASSETS_DIR / "image" / f"Dockerfile.{image.variant}")},
        "requirements.txt": {"content": "".join(f"{line}\n" for line in image.pip_requirements)},
    }
    for path in sorted((ASSETS_DIR / "container").iterdir()):
        entries[f"dslab/{path.name}"] = {"path": str(path)}
    for script in CONTAINER_PYTHON_SCRIPTS:
        entries[f"dslab/{script}"] = {"path": str(ASSETS_DIR / script)}
    if image.llamafactory:
        entries["llamafactory-constraints.txt"] = {"path": str(llamafactory_constraints(image.llamafactory))}
    else:
        entries["llamafactory-constraints.txt"] = {"content": ""}
    if image.ca_bundle_path:
        entries["ca-bundle.crt"] = {"path": str(project_path(image.ca_bundle_path, project_dir))}
    else:
        entries["ca-bundle.crt"] = {"content": ""}
    if image.wheelhouse_path:
        entries["wheelhouse"] = {"path": str(project_path(image.wheelhouse_path, project_dir))}
    else:
        entries["wheelhouse/.keep"] = {"content": ""}
    return entries


def ipsec_context_entries() -> dict[str, dict[str, Any]]:
    """The IPsec image's build context (network.ipsec: strongswan)."""
    return {name: {"path": str(ASSETS_DIR / "ipsec" / name)} for name in ("Dockerfile", "ipsec-peers.sh")}


def build_args(image: ImageConfig) -> dict[str, str]:
    """The Dockerfile's ARGs for this configuration."""
    args = {"BASE_IMAGE": image.base_image, "APT_PACKAGES": " ".join(image.apt_packages)}
    if image.python:
        args["PYTHON_VERSION"] = image.python
    if image.llamafactory:
        args["LLAMAFACTORY_VERSION"] = image.llamafactory
    return args


def context_hash(entries: dict[str, dict[str, Any]], args: dict[str, str]) -> str:
    """A digest of every file's name and bytes and of the build args."""
    digest = hashlib.sha256()
    for name in sorted(entries):
        entry = entries[name]
        digest.update(name.encode() + b"\0")
        if "content" in entry:
            digest.update(entry["content"].encode())
            continue
        path = Path(entry["path"])
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            digest.update(str(file.relative_to(path) if path.is_dir() else "").encode() + b"\0")
            digest.update(file.read_bytes())
    for key in sorted(args):
        digest.update(f"{key}={args[key]}\0".encode())
    return digest.hexdigest()[:16]


def image_tag(image: ImageConfig, entries: dict[str, dict[str, Any]]) -> str:
    """`name:<content hash>`: a new tag exactly when a context file or a build arg changed."""
    return f"{image.tag}:{context_hash(entries, build_args(image))}"


def ipsec_image_tag(image: ImageConfig, entries: dict[str, dict[str, Any]]) -> str:
    """The IPsec image's tag, beside the training image's: `name-ipsec:<content hash>`."""
    return f"{image.tag}-ipsec:{context_hash(entries, {'BASE_IMAGE': image.base_image})}"


@dataclass(frozen=True)
class ImageSource:
    """What an engine builds an image from: its tag, its context's entries, its build args."""

    tag: str
    entries: dict[str, dict[str, Any]]
    """Path in the context -> {"path": a local file or directory} or {"content": text}."""
    build_args: dict[str, str]


def training_image_source(image: ImageConfig, project_dir: Path) -> ImageSource:
    entries = context_entries(image, project_dir)
    return ImageSource(image_tag(image, entries), entries, build_args(image))


def ipsec_image_source(image: ImageConfig) -> ImageSource:
    entries = ipsec_context_entries()
    return ImageSource(ipsec_image_tag(image, entries), entries, {"BASE_IMAGE": image.base_image})
