"""Stand-ins for what the hosts' probe calls (assets/operator/ask-hosts.sh, assets/host/host-facts.sh):
the scripts run here, as if on the hosts."""

from __future__ import annotations

from pathlib import Path


def stand_ins(tmp_path: Path) -> dict[str, str]:
    """`ssh` that runs the host script here, with `ip` and `docker` answering as server1
    would (its container c1 runs a training run while `bin/docker.run-alive` exists); the host
    10.0.18.9 refuses, 10.0.18.8 never answers."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(
        "#!/bin/bash\n"
        'for arg; do case "$arg" in *@10.0.18.9) echo "ssh: connect to host 10.0.18.9 port 22: Connection refused" >&2; exit 255;;\n'
        '  *@10.0.18.7) printf "%s\\n" "@@@@@" "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @" "@@@@@" \\\n'
        '      "Host key for 10.0.18.7 has changed and you have requested strict checking." "Host key verification failed." >&2\n'
        '    exit 255;;\n'
        "  *@10.0.18.8) sleep 30;; esac; done\n"
        # Like ssh: the words after the destination are one command line for the host's shell.
        'while [[ $# -gt 0 && $1 != bash* && $1 != true ]]; do shift; done\n'
        'exec bash -c "$*"\n'
    )
    (bin_dir / "ip").write_text("#!/bin/bash\necho '2: lo    inet 10.0.18.1/24 brd 10.0.18.255 scope global lo'\n")
    (bin_dir / "docker").write_text(
        "#!/bin/bash\n"
        'case "$1 $2" in\n'
        '  "ps --all") echo "c1 running o/p/s";;\n'
        # The results directory c1 mounts: the one `bin/docker.mounts` names, else none.
        '  "inspect --format") if [[ $3 == *Mounts* ]]; then cat "$0.mounts" 2>/dev/null || true; else echo "server1 10.0.3.128"; fi;;\n'
        '  "network inspect") printf "10.0.3.128\\n10.0.3.129\\n\\n";;\n'
        # A run in the container while the test says so.
        '  "exec c1") [[ -e "$0.run-alive" ]];;\n'
        "esac\n"
    )
    for tool in ("ssh", "ip", "docker"):
        (bin_dir / tool).chmod(0o755)
    # A home of its own: the marks of steps on this machine are not the stand-in host's.
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home")}
