"""Who holds a simulated lab: a lease per lab, so that nothing touches a lab it did not take.

A lab is machine-wide (its containers, bridge and subnet), while what drives it lives in a clone
(operator files, stacks). A lease names its holder, the clone's path, and how it holds the lab:

- **kept** (``pid`` none): ``simhosts up`` (``make demo``, ``make hosts-up``) keeps the lab for its
  clone until ``simhosts down`` there; the suite leaves such a lab alone, the same clone's included
  (a demo's stack must survive ``make test``).
- **for a process** (``pid``): the test harness (``harness.lanes``) or a plain ``pytest`` of the
  end-to-end tier holds its labs while it runs. A lease whose process is gone is stale: the next
  taker takes it over and says so.

Leases are files in ``$DSLAB_CACHE/lab-leases`` (default ~/.cache/dslab), shared by every clone of
the machine's user; each is read and written under an exclusive ``flock`` of its own lock file,
so two takers never both get a lab.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from simhosts.plan import MAX_LABS, SimLab

LEASE_PID_ENV = "DSLAB_LEASE_PID"
"""Set by the harness for the processes it starts: the pid whose lease covers their lab, so that
their ``simhosts up`` and their session's check take the lab as theirs."""

Log = Callable[[str], None]


@dataclass(frozen=True)
class Lease:
    """Who holds a lab, and how."""

    holder: str
    """The clone's path."""
    purpose: str
    """What holds it, in words: ``make demo / hosts-up``, ``make test``, ``pytest``."""
    pid: int | None
    """The process it is held for; None: kept until ``simhosts down`` in that clone."""
    since: str
    """When it was taken (UTC, ISO 8601)."""

    def said(self) -> str:
        """``/work/main (make test, pid 4242, since 2026-12-07T22:30:00Z)``."""
        how = f", pid {self.pid}" if self.pid is not None else ""
        return f"{self.holder} ({self.purpose}{how}, since {self.since})"


class LabTaken(RuntimeError):
    """A lab another holder has: names it and what to do."""

    def __init__(self, lab: SimLab, lease: Lease) -> None:
        super().__init__(
            f"lab {lab.id} is held by {lease.said()}: use it there, wait for it, or take another lab "
            "(--lab N, LAB=N or DSLAB_LAB=N)"
        )
        self.lab = lab
        self.lease = lease


class NotEnoughLabs(RuntimeError):
    """Fewer free labs than asked for: names the ones held."""


def lease_dir() -> Path:
    root = os.environ.get("DSLAB_CACHE") or str(Path.home() / ".cache" / "dslab")
    return Path(root) / "lab-leases"


def alive(pid: int) -> bool:
    """Whether process PID exists (a zombie counts as gone only once reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextmanager
def _locked(lab: SimLab) -> Iterator[Path]:
    """The lab's lease file, under an exclusive lock for the block."""
    folder = lease_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"lab-{lab.id}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder / f"lab-{lab.id}.json"


def _read(path: Path) -> Lease | None:
    try:
        return Lease(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        return None  # a half-written or foreign file holds nothing


def _write(path: Path, lease: Lease) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(asdict(lease)) + "\n", encoding="utf-8")
    partial.replace(path)


def holder_of(lab: SimLab) -> Lease | None:
    """The lab's lease as it stands, a stale one included."""
    with _locked(lab) as path:
        return _read(path)


def in_force(lease: Lease | None) -> bool:
    """A lease holds its lab while it is kept, or while its process runs."""
    return lease is not None and (lease.pid is None or alive(lease.pid))


def covers(lease: Lease | None, holder: str, pid: int | None) -> bool:
    """Whether LEASE is HOLDER's, for PID (None: kept), or a process lease of HOLDER's for PID
    that a kept request finds (the harness's own `simhosts up`)."""
    if lease is None or lease.holder != holder:
        return False
    return lease.pid == pid or (pid is None and lease.pid is not None and alive(lease.pid))


def take(lab: SimLab, holder: str, purpose: str, pid: int | None, log: Log) -> Lease:
    """Takes LAB for HOLDER: kept (PID None) or for process PID. A lease already HOLDER's stays
    (a kept request under a live process lease of HOLDER's keeps that one); a stale one is taken
    over and said; any other lease in force raises LabTaken naming its holder."""
    with _locked(lab) as path:
        lease = _read(path)
        if covers(lease, holder, pid):
            assert lease is not None
            return lease
        if in_force(lease):
            assert lease is not None
            raise LabTaken(lab, lease)
        if lease is not None and lease.pid is not None:
            log(f"lab {lab.id}: the lease of {lease.said()} is stale (its process is gone): taken over")
        taken = Lease(holder=holder, purpose=purpose, pid=pid, since=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        _write(path, taken)
        return taken


def release(lab: SimLab, holder: str, pid: int | None) -> bool:
    """Gives LAB back when HOLDER holds it for PID (None: kept); True when a lease went."""
    with _locked(lab) as path:
        lease = _read(path)
        if lease is None or lease.holder != holder or lease.pid != pid:
            return False
        path.unlink(missing_ok=True)
        return True


def take_free(
    count: int, holder: str, purpose: str, pid: int, log: Log, among: Sequence[int] = range(MAX_LABS)
) -> list[SimLab]:
    """COUNT labs of AMONG (in that order) that no lease in force holds, each taken for PID; the
    ones already taken are given back when not enough are free (NotEnoughLabs names the holders)."""
    taken: list[SimLab] = []
    held: list[str] = []
    for lab_id in among:
        if len(taken) == count:
            break
        lab = SimLab(lab_id)
        try:
            take(lab, holder, purpose, pid, log)
        except LabTaken as refusal:
            held.append(f"lab {lab_id} by {refusal.lease.said()}")
            continue
        taken.append(lab)
    if len(taken) < count:
        for lab in taken:
            release(lab, holder, pid)
        raise NotEnoughLabs(f"{count} free labs are needed and {len(taken)} are; held: {'; '.join(held)}")
    return taken


def leases() -> dict[int, Lease]:
    """Every lab's lease, stale ones included."""
    return {lab_id: lease for lab_id in range(MAX_LABS) if (lease := holder_of(SimLab(lab_id))) is not None}
