"""The training image's build context: which local files go in it, its content hash, and the
directory that holds it for the engine's build.

The hash names the image tag, so the image is rebuilt (and the containers replaced)
exactly when an input changes, and never otherwise.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import time
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


CONTEXT_KEEP_DAYS = 14
"""A context directory no stack has used for this long is removed when another is made."""


def contexts_dir() -> Path:
    """Where build contexts are kept: this user's cache, outside any checkout."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dslab" / "build-contexts"


def context_dir(entries: dict[str, dict[str, Any]], tag: str) -> Path:
    """The context as a directory named by the tag's content hash: `docker.RemoteImage` sends
    a directory to the engine, and a name that changes exactly when the content does is what
    tells it to build again. Made once (whole, or not at all), reused by every later run."""
    parent = contexts_dir()
    target = parent / tag.replace("/", "_").replace(":", "-")
    if target.is_dir():
        os.utime(target)  # in use: not pruned
        return target
    parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=parent))
    try:
        for name, entry in entries.items():
            destination = partial / name
            destination.parent.mkdir(parents=True, exist_ok=True)
            if "content" in entry:
                destination.write_text(entry["content"], encoding="utf-8")
            elif Path(entry["path"]).is_dir():
                shutil.copytree(entry["path"], destination)
            else:
                shutil.copy2(entry["path"], destination)
        partial.rename(target)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)
        if not target.is_dir():  # else another run made it first
            raise
    _prune(parent, keep=target)
    return target


def _prune(parent: Path, keep: Path) -> None:
    oldest = time.time() - CONTEXT_KEEP_DAYS * 86400
    for path in parent.iterdir():
        if path != keep and path.is_dir() and path.stat().st_mtime < oldest:
            shutil.rmtree(path, ignore_errors=True)


@dataclass(frozen=True)
class ImageSource:
    """What an engine builds an image from: its tag, its context directory, its build args."""

    tag: str
    context_dir: Path
    build_args: dict[str, str]


def training_image_source(image: ImageConfig, project_dir: Path) -> ImageSource:
    entries = context_entries(image, project_dir)
    tag = image_tag(image, entries)
    return ImageSource(tag, context_dir(entries, tag), build_args(image))


def ipsec_image_source(image: ImageConfig) -> ImageSource:
    entries = ipsec_context_entries()
    tag = ipsec_image_tag(image, entries)
    return ImageSource(tag, context_dir(entries, tag), {"BASE_IMAGE": image.base_image})
