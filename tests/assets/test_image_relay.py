"""assets/operator/image-relay.sh with host/image-relay-hop.sh on its stdin, as the relay Command
runs it, here with a stand-in `ssh` and `docker`: each host is a folder ($HOSTS/ADDRESS, its
HOME), the operator's logins run the command there, and a login with the relay's key runs, as
sshd would, the forced command its authorization on that host names (refused without one, or
when the known_hosts given holds no key for the host). The real engines run it in tests/e2e."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from components.hosts.host_script import script_text
from components.steps.training_image import RELAY_HOP_SCRIPT, RELAY_SCRIPT

TAG = "dslab/train:abc"
IMAGE_FILE = TAG.replace("/", "_")
HOSTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"]

STAND_IN_SSH = r"""#!/bin/bash
# ssh [-i KEY] [-o OPTION]... -p PORT USER@ADDRESS COMMAND: as on host ADDRESS (HOME=$HOSTS/ADDRESS).
# Every login is logged in $HOSTS/logins as `FROM ADDRESS`, FROM being `operator` or the host.
key="" known_hosts=""
while [[ $1 == -* ]]; do
  case $1 in
    -i) key=$2 ;;
    -o) [[ $2 != UserKnownHostsFile=* ]] || known_hosts=${2#UserKnownHostsFile=} ;;
  esac
  shift 2
done
address=${1#*@}
shift
echo "${FROM:-operator} $address" >>"$HOSTS/logins"
if [[ $key == */.dslab/relay/* ]]; then
  # A hop: strict host key, then the forced command of the key's authorization there.
  grep -q "^$address " "$known_hosts" || { echo "Host key verification failed." >&2; exit 255; }
  public=$(ssh-keygen -y -f "$key" | cut -d' ' -f2)
  line=$(grep -F "$public" "$HOSTS/$address/.ssh/authorized_keys" 2>/dev/null)
  [[ $line == restrict,command=* ]] || { echo "Permission denied (publickey)." >&2; exit 255; }
  forced=${line#restrict,command=\"}
  forced=${forced%%\" *}
  if [[ -e $HOSTS/$address/cut-after ]]; then
    # The link to this host breaks after that many bytes.
    head -c "$(cat "$HOSTS/$address/cut-after")" | HOME=$HOSTS/$address FROM=$address bash -c "$forced"
    exit 255
  fi
  exec env HOME="$HOSTS/$address" FROM="$address" bash -c "$forced"
fi
exec env HOME="$HOSTS/$address" FROM="$address" bash -c "$*"
"""

STAND_IN_DOCKER = r"""#!/bin/bash
# docker save|load|image inspect|tag, with images as files in $HOME/images (an image's id is
# "sha256:" and its file's first 5 bytes; inspect and tag take a name or an id).
images=$HOME/images
mkdir -p "$images"
by_id() { for file in "$images"/*; do [[ $(head -c 5 "$file") != "${1#sha256:}" ]] || { echo "$file"; return; }; done; }
if [[ $1 == image && $3 == sha256:* ]]; then file=$(by_id "$3"); [[ -n $file ]] || { echo "No such image: $3" >&2; exit 1; }; echo "$3"; exit 0; fi
if [[ $1 == tag ]]; then file=$(by_id "$2"); cp "$file" "$images/${3//\//_}"; exit 0; fi
case $1 in
  save) echo "$2"; cat "$images/${2//\//_}" ;;
  load) read -r tag; cat >"$images/.loading"; [[ -s $images/.loading ]] || { echo "unexpected EOF" >&2; exit 1; }
        [[ $(tail -c 3 "$images/.loading") == END ]] || { echo "unexpected EOF" >&2; exit 1; }
        mv "$images/.loading" "$images/${tag//\//_}"; echo "Loaded image: $tag" ;;
  image) [[ -e $images/${3//\//_} ]] || { echo "No such image: $3" >&2; exit 1; }; echo "sha256:$(head -c 5 "$images/${3//\//_}")" ;;
esac
"""


def lab(tmp_path: Path) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("ssh", STAND_IN_SSH), ("docker", STAND_IN_DOCKER)):
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    for address in HOSTS:
        (tmp_path / "hosts" / address / "images").mkdir(parents=True)
    # The builder's image: "built", a payload, "END" (the stand-in's id is its first 5 bytes; a
    # load that does not reach the end fails).
    (tmp_path / "hosts" / HOSTS[0] / "images" / IMAGE_FILE).write_text("built" + "x" * 200_000 + "END")
    (tmp_path / "known_hosts").write_text("".join(f"{address} ssh-ed25519 AAAA{address}\n" for address in HOSTS))
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "HOSTS": str(tmp_path / "hosts")}


def relay(tmp_path: Path, env: dict[str, str], hosts: list[str] = HOSTS) -> subprocess.CompletedProcess[str]:
    groups = [word for address in hosts for word in ("--", f"root@{address}:22", "-o", "BatchMode=yes")]
    return subprocess.run(
        ["bash", str(RELAY_SCRIPT), TAG, "sha256:built", str(tmp_path / "known_hosts"), *groups],
        input=script_text(RELAY_HOP_SCRIPT), env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def holding(tmp_path: Path) -> list[str]:
    return [address for address in HOSTS if (tmp_path / "hosts" / address / "images" / IMAGE_FILE).exists()]


def logins(tmp_path: Path) -> list[str]:
    return (tmp_path / "hosts" / "logins").read_text().splitlines()


def assert_nothing_left(tmp_path: Path) -> None:
    for address in HOSTS:
        home = tmp_path / "hosts" / address
        assert not (home / ".dslab" / "relay").exists() or not any((home / ".dslab" / "relay").iterdir()), address
        keys = home / ".ssh" / "authorized_keys"
        assert not keys.exists() or "dslab-relay" not in keys.read_text(), f"{address} still trusts the relay's key"


def test_the_image_goes_host_to_host_each_loading_while_it_passes_it_on(tmp_path: Path) -> None:
    env = lab(tmp_path)
    # An authorization a relay that was killed left is removed; the operator's stays.
    ssh_dir = tmp_path / "hosts" / HOSTS[1] / ".ssh"
    ssh_dir.mkdir()
    (ssh_dir / "authorized_keys").write_text(
        'ssh-ed25519 AAAAoperator ops\nrestrict,command="x" ssh-ed25519 AAAAold dslab-relay-1-2\n'
    )
    ran = relay(tmp_path, env)
    assert ran.returncode == 0, ran.stderr
    assert holding(tmp_path) == HOSTS
    assert ran.stderr.splitlines()[-1].startswith(f"relayed {TAG} from root@10.0.0.1 to 3 host(s) in ")
    hops = [login for login in logins(tmp_path) if not login.startswith("operator ")]
    assert hops == ["10.0.0.1 10.0.0.2", "10.0.0.2 10.0.0.3", "10.0.0.3 10.0.0.4"], "a chain, each link once"
    assert_nothing_left(tmp_path)
    assert (ssh_dir / "authorized_keys").read_text() == "ssh-ed25519 AAAAoperator ops\n"


def test_a_host_that_holds_the_image_is_left_out_of_the_chain(tmp_path: Path) -> None:
    env = lab(tmp_path)
    (tmp_path / "hosts" / HOSTS[2] / "images" / IMAGE_FILE).write_text("builtEND")
    ran = relay(tmp_path, env)
    assert ran.returncode == 0, ran.stderr
    assert f"{TAG} already on root@10.0.0.3" in ran.stderr
    hops = [login for login in logins(tmp_path) if not login.startswith("operator ")]
    assert hops == ["10.0.0.1 10.0.0.2", "10.0.0.2 10.0.0.4"]
    assert holding(tmp_path) == HOSTS


def test_a_host_that_holds_the_image_under_another_name_only_is_named_and_left_out(tmp_path: Path) -> None:
    env = lab(tmp_path)
    # Another stack's name for it, or a kept copy: the same image id.
    (tmp_path / "hosts" / HOSTS[2] / "images" / "dslab-test-cache_train:abc").write_text("builtEND")
    ran = relay(tmp_path, env)
    assert ran.returncode == 0, ran.stderr
    assert f"{TAG} already on root@10.0.0.3" in ran.stderr
    hops = [login for login in logins(tmp_path) if not login.startswith("operator ")]
    assert hops == ["10.0.0.1 10.0.0.2", "10.0.0.2 10.0.0.4"], "no copy to the host that had it"
    assert holding(tmp_path) == HOSTS, "it got the name"


def test_every_host_holding_it_relays_nothing(tmp_path: Path) -> None:
    env = lab(tmp_path)
    for address in HOSTS[1:]:
        (tmp_path / "hosts" / address / "images" / IMAGE_FILE).write_text("builtEND")
    ran = relay(tmp_path, env)
    assert ran.returncode == 0, ran.stderr
    assert all(login.startswith("operator ") for login in logins(tmp_path))


def test_a_hop_cut_midway_is_named_and_the_next_run_relays_to_the_hosts_that_lack_it_only(tmp_path: Path) -> None:
    env = lab(tmp_path)
    (tmp_path / "hosts" / HOSTS[2] / "cut-after").write_text("1000")  # the link into 10.0.0.3 breaks
    ran = relay(tmp_path, env)
    assert ran.returncode == 1
    # 10.0.0.3's load got part of it; 10.0.0.4, behind it, got as much: both named.
    assert holding(tmp_path) == HOSTS[:2], "the host before the cut loaded it whole"
    assert f"root@10.0.0.3: {TAG} did not arrive by the relay (its load: " in ran.stderr, ran.stderr
    assert f"root@10.0.0.4: {TAG} did not arrive by the relay" in ran.stderr
    assert "the next run relays to the hosts named above only" in ran.stderr
    assert_nothing_left(tmp_path)

    (tmp_path / "hosts" / HOSTS[2] / "cut-after").unlink()
    (tmp_path / "hosts" / "logins").unlink()
    again = relay(tmp_path, env)
    assert again.returncode == 0, again.stderr
    assert holding(tmp_path) == HOSTS
    hops = [login for login in logins(tmp_path) if not login.startswith("operator ")]
    assert hops == ["10.0.0.1 10.0.0.3", "10.0.0.3 10.0.0.4"], "only to the hosts that lacked it"
    assert_nothing_left(tmp_path)


def test_a_next_hop_whose_key_is_not_known_stops_the_relay_before_any_host_is_touched(tmp_path: Path) -> None:
    env = lab(tmp_path)
    keys = tmp_path / "known_hosts"
    keys.write_text("".join(line + "\n" for line in keys.read_text().splitlines() if not line.startswith("10.0.0.3 ")))
    ran = relay(tmp_path, env)
    assert ran.returncode == 1
    assert f"{keys} holds no key for 10.0.0.3: the relay cannot check it" in ran.stderr, ran.stderr
    assert holding(tmp_path) == HOSTS[:1]
    for address in HOSTS:
        assert not (tmp_path / "hosts" / address / ".dslab").exists(), f"nothing made on {address}"


def test_the_relays_key_is_authorized_for_the_hop_alone(tmp_path: Path) -> None:
    env = lab(tmp_path)
    # A login that asks for anything else gets the hop: the stand-in sshd runs the forced command.
    (tmp_path / "bin" / "docker").write_text(
        (tmp_path / "bin" / "docker").read_text().replace("  load)", "  load) cp ~/.ssh/authorized_keys ~/seen;")
    )
    assert relay(tmp_path, env).returncode == 0
    seen = (tmp_path / "hosts" / HOSTS[1] / "seen").read_text().strip()
    # sshd's `restrict` (no forwarding, no pty) and the hop as the only command; the run's name as the comment.
    assert re.fullmatch(
        r'restrict,command="bash \S+/\.dslab/relay/(dslab-relay-\d+-\d+)/hop\.sh receive \1" ssh-ed25519 \S+ \1', seen
    ), seen
