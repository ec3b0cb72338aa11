#!/usr/bin/env bash
# The wheels the GPU check carries to a GPU machine whose python3 has torch but nothing can be
# downloaded (docs/gpu.md): LLaMA-Factory and DeepSpeed at the GPU image's versions, and what
# training imports that such a machine lacks or has at other versions, at the versions the
# image pins (assets/image/llamafactory/<release>.txt); for CPython 3.12, manylinux x86-64.
# Run it where the package index is reached.
#
# usage: bench/gpu-wheels.sh DIR PYTHON_WITH_TORCH [LLAMAFACTORY_RELEASE]
#
#   DIR                 where the wheels go (the repository's ignored .whl/)
#   PYTHON_WITH_TORCH   a python that imports torch: DeepSpeed ships only an sdist whose
#                       setup.py imports torch, so its wheel is built here (no CUDA ops built:
#                       DS_BUILD_OPS=0, they compile on first use)
#   LLAMAFACTORY_RELEASE  default 0.9.4
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: bench/gpu-wheels.sh DIR PYTHON_WITH_TORCH [LLAMAFACTORY_RELEASE]" >&2
  exit 64
fi
dir=$1 python=$2 release=${3:-0.9.4}
repo=$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)
constraints="$repo/assets/image/llamafactory/$release.txt"
[ -f "$constraints" ] || { echo "gpu-wheels.sh: no $constraints" >&2; exit 64; }
deepspeed=$(sed -n 's/^ARG DEEPSPEED_VERSION=//p' "$repo/assets/image/Dockerfile.gpu")

pinned() { grep -i "^$1==" "$constraints"; }
# Imported by training, and missing from a GPU machine's own Python or there at other versions
# (the GPU check's machine: docs/gpu.md, "Versions: used against pinned").
packages=(
  "llamafactory==$release"
  "$(pinned transformers)" "$(pinned tokenizers)" "$(pinned huggingface_hub)" "$(pinned accelerate)"
  "$(pinned peft)" "$(pinned trl)" "$(pinned datasets)" "$(pinned dill)" "$(pinned multiprocess)"
  "$(pinned fsspec)" "$(pinned omegaconf)" "$(pinned pydantic)" "$(pinned pydantic_core)"
  annotated-types typing-inspection hjson  # pydantic's and DeepSpeed's, not in the constraints
)
mkdir -p "$dir"
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$dir" "${packages[@]}"
DS_BUILD_OPS=0 "$python" -m pip wheel --quiet --no-deps --no-build-isolation -w "$dir" "deepspeed==$deepspeed"
ls "$dir"
