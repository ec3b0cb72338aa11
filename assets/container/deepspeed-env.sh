#!/usr/bin/env bash
# export_deepspeed_env: export the variables of DeepSpeed's .deepspeed_env files into this
# shell, as DeepSpeed's launcher does on every node it reaches through pdsh. Sourced by
# run-deepspeed.sh and preflight.sh, and by bench/gpu-check.sh.
#
# The launcher reads ~/.deepspeed_env, then ./.deepspeed_env (the name is DS_ENV_FILE when
# set), but only when it starts ranks through pdsh, i.e. for more than one host. For a
# hostfile of one host it starts the ranks itself, in its own environment, and never reads
# the file: without this, a one-server lab's ranks would lack what .deepspeed_env holds
# (LLaMA-Factory's DISABLE_VERSION_CHECK and offline switches, the NCCL/gloo interface).
#
# Lines are KEY=VALUE, split on the first '='; a later file wins, as with the launcher.
# Call it in the directory the launcher runs in.

export_deepspeed_env() {
  local base="${DS_ENV_FILE:-.deepspeed_env}" file line name
  for file in ${HOME:+"$HOME/$base"} "./$base"; do
    [ -f "$file" ] || continue
    while IFS= read -r line || [ -n "$line" ]; do
      name="${line%%=*}"
      [ "$name" != "$line" ] || continue  # no '=': the launcher would fail; skip it here
      if ! [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        echo "deepspeed-env.sh: $file: '$name' is not a variable name; line skipped" >&2
        continue
      fi
      export "$name=${line#*=}"
    done <"$file"
  done
}
