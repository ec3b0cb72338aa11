#!/usr/bin/env bash
# Bare processes on a lab host for the all-reduce baseline: the training image's files
# unpacked into a directory and run with chroot, in the host's own network namespace and
# cgroup, with no container around them. Run on the host: `bash -s -- ACTION ... < this`.
#
#   prepare IMAGE    unpack IMAGE into ROOT (once; mounts proc, sys and dev)
#   run VAR=VALUE... -- ARGV...
#                    run ARGV in ROOT with exactly these environment variables
#   remove           unmount and delete ROOT
set -euo pipefail
root=/var/lib/dslab-bench-bare
action=$1
shift
case "$action" in
  prepare)
    image=$1
    if [ ! -e "$root/.ready" ]; then
      rm -rf "$root" && mkdir -p "$root"
      source=$(docker create "$image" true)
      docker export "$source" | tar -x -C "$root"
      docker rm "$source" >/dev/null
      mount -t proc proc "$root/proc"
      # rslave: unmounting these later must not reach the host's own mounts.
      mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
      mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
      cp /etc/hosts /etc/resolv.conf "$root/etc/"
      touch "$root/.ready"
    fi
    ;;
  run)
    environment=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do environment+=("$1"); shift; done
    shift
    exec chroot "$root" /usr/bin/env -i "${environment[@]}" "$@"
    ;;
  remove)
    if [ -d "$root" ]; then
      umount -R "$root/dev" "$root/sys" "$root/proc" 2>/dev/null || umount -lR "$root/dev" "$root/sys" "$root/proc" 2>/dev/null || true
      rm -rf --one-file-system "$root"
    fi
    ;;
  *) echo "usage: bare-rootfs.sh prepare IMAGE | run VAR=VALUE... -- ARGV... | remove" >&2; exit 64 ;;
esac
