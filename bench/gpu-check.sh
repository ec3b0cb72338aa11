#!/usr/bin/env bash
# The GPU check (docs/gpu.md): on a machine with NVIDIA GPUs and no Docker, as root, run the
# preflight all-reduce and the training that STACK_FILE renders (bench/gpu_check.py prepare),
# with the real deepspeed launcher and the ranks' .deepspeed_env, and collect what shows how
# it went.
#
# usage: bench/gpu-check.sh STACK_FILE OUT_DIR [--controls]
#
# python3 must have torch, DeepSpeed and, for a LLaMA-Factory stack, LLaMA-Factory. OUT_DIR
# gets: versions.txt (the GPU, the image's pins beside this machine's versions),
# preflight.log, train.log, gpu_memory.csv (nvidia-smi every 200 ms during training: GPU
# index, MiB used), training_loss.png, run.tar (the files and command lines that ran,
# deviations.txt, LLaMA-Factory's trainer_log.jsonl and all_results.json) and summary.json.
# --controls then runs the training twice more, each without one of the fixes docs/gpu.md
# describes, and keeps the lines that tell in controls.log (both are expected to fail).
# Exit status: the training's, or 1 when only the all-reduce failed; 64 for bad usage.
set -euo pipefail

usage() { echo "usage: bench/gpu-check.sh STACK_FILE OUT_DIR [--controls]" >&2; exit 64; }
[ $# -eq 2 ] || [ $# -eq 3 ] || usage
[ $# -eq 2 ] || [ "$3" = --controls ] || usage
stack=$(readlink -f "$1")
mkdir -p "$2"
out=$(cd "$2" && pwd)
controls=${3:-}
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
check="$repo/bench/gpu_check.py"
rendered=$(mktemp -d)
# Found now: .deepspeed_env's PATH, the image's, replaces this machine's below.
python=$(command -v python3)
smi=$(command -v nvidia-smi)

gpus=$("$smi" --list-gpus | grep -c '^GPU ')
{
  "$smi" --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/gpu: /'
  "$python" "$check" versions "$stack"
} | tee "$out/versions.txt"
"$python" "$check" prepare "$stack" --gpus "$gpus" --record "$rendered" --make-inputs

# The rank environment of the manager container: what DeepSpeed's launcher reads and
# run-deepspeed.sh exports there.
# shellcheck source=../assets/container/deepspeed-env.sh
. /opt/dslab/deepspeed-env.sh
cd "$(cat "$rendered/workdir")"
mapfile -d '' -t preflight <"$rendered/preflight.argv"
mapfile -d '' -t train <"$rendered/train.argv"
system_path=$PATH
export_deepspeed_env
# NVLink multicast stays off, whatever the rendered environment says: on GPUs shared with
# others a fault in it can take the host's GPUs out of service (matters from 2 GPUs up).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

echo "gpu-check: all-reduce: ${preflight[*]}"
set +e
"${preflight[@]}" </dev/null 2>&1 | tee "$out/preflight.log"
preflight_code=${PIPESTATUS[0]}
set -e

"$smi" --query-gpu=index,memory.used --format=csv,noheader,nounits -lms 200 >"$out/gpu_memory.csv" &
sampler=$!
echo "gpu-check: training: ${train[*]}"
set +e
"${train[@]}" </dev/null 2>&1 | tee "$out/train.log"
train_code=${PIPESTATUS[0]}
set -e
kill "$sampler"

output_dir=$(cat "$rendered/output_dir")
for name in trainer_log.jsonl all_results.json training_loss.png; do
  if [ -n "$output_dir" ] && [ -f "$output_dir/$name" ]; then cp "$output_dir/$name" "$rendered/"; fi
done
if [ -f "$rendered/training_loss.png" ]; then mv "$rendered/training_loss.png" "$out/"; fi
tar -C "$rendered" -cf "$out/run.tar" .
"$python" "$check" report "$out" --run-output "$rendered"
echo "gpu-check: all-reduce exit $preflight_code, training exit $train_code"

if [ "$controls" = --controls ]; then
  entry_point=/opt/dslab/llamafactory_train.py
  sed 's/^    drop_empty_param_groups(Trainer)$/    pass  # control: not dropped/' "$entry_point" >/opt/dslab/control_train.py
  without_env=()
  while IFS='=' read -r name _; do without_env+=(-u "$name"); done <"$rendered/deepspeed_env"
  control() {  # TITLE COMMAND...: the lines of its output that tell why it ended
    echo "== control: $1"
    shift
    timeout 300 "$@" </dev/null 2>&1 | grep -aE 'Error|error:|required|exits (with return code|successfully)' | cut -c1-300 || true
  }
  {
    control "the entry point without drop_empty_param_groups" "${train[@]/#$entry_point//opt/dslab/control_train.py}"
    control "the launcher without the .deepspeed_env variables (one host: the ranks get its environment)" \
      env "${without_env[@]}" PATH="$system_path" "${train[@]}"
  } | tee "$out/controls.log"
fi

if [ "$train_code" -ne 0 ]; then exit "$train_code"; fi
if [ "$preflight_code" -ne 0 ]; then exit 1; fi
