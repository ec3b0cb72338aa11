"""assets/operator/image-ship.sh (with host/image-mark.sh on its stdin, as the ship Command runs
it), here with a stand-in `ssh` that runs the host's command in a folder standing for that host
and a stand-in `docker` that keeps images as files. The real engines run it in tests/e2e."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from components.hosts.host_script import script_text
from components.steps.training_image import MARK_SCRIPT, SHIP_SCRIPT

TAG = "dslab/train:abc"
BUILDER, WORKER = "root@10.0.0.1:22", "root@10.0.0.2:2222"

STAND_IN_SSH = r"""#!/bin/bash
# ssh [-i KEY] [-o OPTION]... -p PORT USER@ADDRESS COMMAND...: COMMAND runs here, as on that host
# (HOME=$HOSTS/ADDRESS, its images in $HOSTS/ADDRESS/images). Marking takes MARK_SECONDS.
# Each login's address and options are logged in $HOSTS/logins.
options=()
while [[ $1 == -* ]]; do options+=("$1" "$2"); shift 2; done
address=${1#*@}
shift
echo "$address ${options[*]}" >>"$HOSTS/logins"
[[ $* != *"bash -s"* ]] || sleep "${MARK_SECONDS:-0}"
export HOME=$HOSTS/$address
mkdir -p "$HOME/images"
exec bash -c "$*"
"""

STAND_IN_DOCKER = r"""#!/bin/bash
# docker save|load|image inspect|image rm|tag, with images as files (a file holds its image's id,
# inspect and tag take a name or an id); `save` takes SAVE_SECONDS.
images=$HOME/images
by_id() { grep -lx "${1#sha256:}" "$images"/* 2>/dev/null | head -n 1; }
if [[ $1 == image && $2 == inspect && $3 == sha256:* ]]; then
  [[ -n $(by_id "$3") ]] || { echo "No such image: $3" >&2; exit 1; }; echo "$3"; exit 0
fi
if [[ $1 == tag ]]; then cp "$(by_id "$2")" "$images/${3//\//_}"; exit 0; fi
case $1 in
  save) sleep "${SAVE_SECONDS:-0}"; echo "$2"; cat "$images/${2//\//_}" ;;
  load) read -r tag; cat >"$images/${tag//\//_}"; echo "Loaded image: $tag" ;;
  image)
    file=$images/${3//\//_}
    case $2 in
      inspect) [[ -e $file ]] || { echo "No such image: $3" >&2; exit 1; }; echo "sha256:$(cat "$file")" ;;
      rm) rm "$file" ;;
    esac ;;
esac
"""


def hosts_with_stand_ins(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ssh", STAND_IN_SSH), ("docker", STAND_IN_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    builder_images = tmp_path / "hosts" / "10.0.0.1" / "images"
    builder_images.mkdir(parents=True)
    (builder_images / TAG.replace("/", "_")).write_text("built")
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOSTS": str(tmp_path / "hosts")}


def ship(
    env: dict[str, str], *args: str, generation: int = 0, to_options: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SHIP_SCRIPT), *args, "--", "-i", "key", "-o", "BatchMode=yes",
         *(["--", *to_options] if to_options else [])],
        input=script_text(MARK_SCRIPT), env={**env, "DSLAB_GEN": str(generation)},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def worker(tmp_path: Path) -> Path:
    return tmp_path / "hosts" / "10.0.0.2"


def test_a_ship_copies_the_builders_image_and_marks_only_the_generation_it_ran_with(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    steps = worker(tmp_path) / ".dslab" / "steps"
    steps.mkdir(parents=True)
    (steps / "image.check").write_text("true\n")  # an earlier release's check
    shipped = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER, generation=2)
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.stdout == ""
    assert (worker(tmp_path) / "images" / TAG.replace("/", "_")).read_text() == "built"
    assert shipped.stderr.startswith(f"sent {TAG} to root@10.0.0.2 in ")
    # Whether the image is there the probe reads from the host's engine (host-facts.sh).
    assert sorted(path.name for path in steps.iterdir()) == ["image.gen"]
    assert (steps / "image.gen").read_text() == "2\n"


def test_a_host_reached_otherwise_than_the_builder_is_logged_in_to_with_its_own_options(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    through = ("-i", "key", "-o", "ProxyCommand=jump")
    shipped = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER, to_options=through)
    assert shipped.returncode == 0, shipped.stderr
    logins = sorted(set((tmp_path / "hosts" / "logins").read_text().splitlines()))
    assert logins == ["10.0.0.1 -i key -o BatchMode=yes -p 22", "10.0.0.2 -i key -o ProxyCommand=jump -p 2222"]
    assert (worker(tmp_path) / "images" / TAG.replace("/", "_")).read_text() == "built"


def test_removing_one_copy_leaves_the_mark_of_a_copy_of_another_tag(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    assert ship(env, "ship", TAG, "image-new", "sha256:built", BUILDER, WORKER, generation=3).returncode == 0
    removed = ship(env, "remove", "dslab/train:old", "image-old", WORKER)
    assert removed.returncode == 0, removed.stderr
    assert (worker(tmp_path) / ".dslab" / "steps" / "image-new.gen").read_text() == "3\n"


def test_a_host_that_has_the_image_is_only_marked_and_one_with_another_gets_the_builders(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    assert ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER).returncode == 0
    (tmp_path / "hosts" / "10.0.0.1" / "images" / TAG.replace("/", "_")).unlink()  # no save possible now
    again = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER, generation=1)
    assert again.returncode == 0, again.stderr
    assert again.stderr == f"{TAG} already on root@10.0.0.2\n"
    assert (worker(tmp_path) / ".dslab" / "steps" / "image.gen").read_text() == "1\n"

    (tmp_path / "hosts" / "10.0.0.1" / "images" / TAG.replace("/", "_")).write_text("rebuilt")
    rebuilt = ship(env, "ship", TAG, "image", "sha256:rebuilt", BUILDER, WORKER)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert (worker(tmp_path) / "images" / TAG.replace("/", "_")).read_text() == "rebuilt"


def test_a_host_that_holds_the_image_under_another_name_only_gets_the_name_not_a_copy(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    # Another stack's name for the same image (the same id), or a kept copy.
    (worker(tmp_path) / "images").mkdir(parents=True)
    (worker(tmp_path) / "images" / "dslab-test-cache_train:abc").write_text("built\n")
    (tmp_path / "hosts" / "10.0.0.1" / "images" / TAG.replace("/", "_")).unlink()  # no save possible now
    shipped = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER, generation=4)
    assert shipped.returncode == 0, shipped.stderr
    assert shipped.stderr == f"{TAG} already on root@10.0.0.2 under another name: named it\n"
    assert (worker(tmp_path) / "images" / TAG.replace("/", "_")).read_text() == "built\n"
    assert (worker(tmp_path) / ".dslab" / "steps" / "image.gen").read_text() == "4\n"


def test_a_long_copy_says_how_far_it_is_and_its_ticker_ends_with_it(tmp_path: Path) -> None:
    env = {**hosts_with_stand_ins(tmp_path), "SAVE_SECONDS": "1.2", "MARK_SECONDS": "1", "DSLAB_PROGRESS_SECONDS": "0.5"}
    started = time.monotonic()
    # Returns once nothing holds the ship's stderr: a ticker left running would keep it open
    # until the call's timeout.
    shipped = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER)
    took = time.monotonic() - started
    assert shipped.returncode == 0, shipped.stderr
    said = shipped.stderr.splitlines()
    ticks = [line for line in said if line.startswith(f"still sending {TAG} to root@10.0.0.2: ")]
    # The save alone takes 1.2 s: a tick every 0.5 s, and never more than the time allows.
    assert 1 <= len(ticks) <= took / 0.5, shipped.stderr
    assert said == [*ticks, said[-1]], "nothing but ticks while the image travels"
    assert said[-1].startswith(f"sent {TAG} to root@10.0.0.2 in "), "no tick after the copy, while the host is marked"


def test_a_failed_save_fails_the_ship_and_marks_nothing(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    (tmp_path / "hosts" / "10.0.0.1" / "images" / TAG.replace("/", "_")).unlink()
    shipped = ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER)
    assert shipped.returncode != 0
    assert not (worker(tmp_path) / ".dslab" / "steps" / "image.gen").exists()


def test_remove_takes_the_image_and_the_mark_away(tmp_path: Path) -> None:
    env = hosts_with_stand_ins(tmp_path)
    assert ship(env, "ship", TAG, "image", "sha256:built", BUILDER, WORKER).returncode == 0
    removed = ship(env, "remove", TAG, "image", WORKER)
    assert removed.returncode == 0, removed.stderr
    assert not list((worker(tmp_path) / "images").iterdir())
    assert not (worker(tmp_path) / ".dslab").exists(), "no mark left, nor its folders"
