"""The two images of the simulator, built once and cached outside the clone.

``local/debian:trixie`` is a debootstrapped Debian (no registry is reachable) and the base
of the training image the Pulumi program builds on each host; ``local/dslab-host:trixie``
adds a Docker engine and sshd to it and is what every simulated server runs.
Both carry a label with the hash of their inputs, so a rebuild happens only when an input
changes, and a fresh engine reloads them from tarballs in seconds.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from pathlib import Path

from simhosts import paths
from simhosts.proc import Log, docker, run

BASE_IMAGE = "local/debian:trixie"
HOST_IMAGE = "local/dslab-host:trixie"
HASH_LABEL = "dslab.input-hash"
SUITE = "trixie"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
# Bump to force a rebuild when the recipe changes outside the hashed inputs.
RECIPE_VERSION = "1"


def debian_mirror(apt_dir: Path = Path("/etc/apt")) -> str:
    """Return the machine's Debian mirror (the only archive reachable), from its apt sources."""
    candidates: list[str] = []
    for path in sorted(apt_dir.glob("sources.list.d/*.sources")):
        candidates += re.findall(r"^URIs:\s*(\S+)", path.read_text(), flags=re.MULTILINE)
    list_file = apt_dir / "sources.list"
    if list_file.exists():
        candidates += re.findall(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)", list_file.read_text(), flags=re.MULTILINE)
    for uri in candidates:
        if uri.rstrip("/").endswith("/debian"):
            return uri.rstrip("/")
    return DEFAULT_MIRROR


def base_inputs_hash(mirror: str) -> str:
    """Hash of everything that determines the debootstrapped base image."""
    return _digest([RECIPE_VERSION, SUITE, "minbase", mirror])


def host_inputs_hash(base_hash: str, context: Path = paths.HOST_IMAGE_CONTEXT) -> str:
    """Hash of the base image and every file of the host image's build context."""
    parts = [RECIPE_VERSION, base_hash]
    for path in sorted(p for p in context.rglob("*") if p.is_file()):
        parts += [str(path.relative_to(context)), hashlib.sha256(path.read_bytes()).hexdigest()]
    return _digest(parts)


def image_hash(image: str) -> str | None:
    """Return the input-hash label of ``image`` on the machine's engine, None when absent."""
    out = docker("image", "inspect", "--format", f'{{{{ index .Config.Labels "{HASH_LABEL}" }}}}', image, check=False)
    return out or None


def ensure_base_image(log: Log) -> str:
    """Make ``local/debian:trixie`` present on the machine's engine; return its input hash."""
    mirror = debian_mirror()
    wanted = base_inputs_hash(mirror)
    if image_hash(BASE_IMAGE) == wanted:
        return wanted
    cache = paths.cache_dir()
    rootfs = cache / f"debian-{SUITE}-rootfs-{wanted}.tar"
    if not rootfs.exists():
        log(f"debootstrap {SUITE} from {mirror} (about a minute, cached afterwards)")
        _debootstrap(rootfs, mirror)
        _prune(cache, f"debian-{SUITE}-rootfs-", keep=rootfs)
    log(f"import {BASE_IMAGE}")
    docker("import", "--change", f"LABEL {HASH_LABEL}={wanted}", str(rootfs), BASE_IMAGE)
    return wanted


def ensure_host_image(base_hash: str, log: Log) -> str:
    """Make ``local/dslab-host:trixie`` present on the machine's engine; return its input hash."""
    wanted = host_inputs_hash(base_hash)
    if image_hash(HOST_IMAGE) == wanted:
        return wanted
    cache = paths.cache_dir()
    tarball = cache / f"dslab-host-{SUITE}-{wanted}.tar"
    if tarball.exists():
        log(f"load {HOST_IMAGE} from cache")
        docker("load", "--input", str(tarball))
        if image_hash(HOST_IMAGE) == wanted:
            return wanted
    log(f"build {HOST_IMAGE} (a few minutes, cached afterwards)")
    run(
        [
            "docker", "build", "--build-arg", f"BASE={BASE_IMAGE}", "--label", f"{HASH_LABEL}={wanted}",
            "--tag", HOST_IMAGE, str(paths.HOST_IMAGE_CONTEXT),
        ],
        # The machine's CLI has no buildx plugin; the classic builder is what works here.
        env={"DOCKER_BUILDKIT": "0"},
        timeout=1800,
    )
    _save(HOST_IMAGE, tarball)
    _prune(cache, f"dslab-host-{SUITE}-", keep=tarball)
    return wanted


def base_image_tarball(base_hash: str) -> Path:
    """Return a ``docker save`` tarball of the base image, for loading into host engines."""
    tarball = paths.cache_dir() / f"debian-{SUITE}-image-{base_hash}.tar"
    if not tarball.exists():
        _save(BASE_IMAGE, tarball)
        _prune(paths.cache_dir(), f"debian-{SUITE}-image-", keep=tarball)
    return tarball


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _save(image: str, tarball: Path) -> None:
    """``docker save`` to a temporary name first so that an interrupted save is never used."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial")
    docker("save", "--output", str(partial), image)
    partial.rename(tarball)


def _prune(cache: Path, prefix: str, keep: Path) -> None:
    """Remove older tarballs of the same kind: the cache keeps one per kind."""
    for old in cache.glob(f"{prefix}*"):
        if old != keep:
            old.unlink()


def _debootstrap(rootfs: Path, mirror: str) -> None:
    rootfs.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="debootstrap-", dir=rootfs.parent))
    target = work / "root"
    try:
        run(["debootstrap", "--variant=minbase", SUITE, str(target), mirror], timeout=1800)
        partial = rootfs.with_suffix(".partial")
        run(["tar", "--numeric-owner", "-C", str(target), "-cf", str(partial), "."], timeout=600)
        partial.rename(rootfs)
    finally:
        _unmount_below(work)
        shutil.rmtree(work, ignore_errors=True)


def _unmount_below(directory: Path) -> None:
    """Unmount what a failed debootstrap left mounted (proc, sys) before deleting its tree."""
    prefix = str(directory.resolve()) + "/"
    with open("/proc/mounts") as mounts:
        points = [line.split()[1] for line in mounts if line.split()[1].startswith(prefix)]
    for point in sorted(points, key=len, reverse=True):
        run(["umount", "--lazy", point], check=False)
