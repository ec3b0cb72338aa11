# shellcheck shell=bash
# Source this file to use the project's Pulumi toolchain and local state backend:
#   source toolchain/env.sh
# (run `make toolchain` once first).
_dslab_repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PULUMI_HOME="$_dslab_repo/.pulumi-home"
export PATH="$PULUMI_HOME/bin:$_dslab_repo/.venv/bin:$PATH"
# State lives in a directory; secrets are encrypted with a generated passphrase.
export PULUMI_BACKEND_URL="file://$_dslab_repo/.pulumi-state"
export PULUMI_CONFIG_PASSPHRASE_FILE="$PULUMI_HOME/passphrase"
# Never try to download plugins or check for CLI updates: there is no internet.
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_PYTHON_CMD="$_dslab_repo/.venv/bin/python"
unset _dslab_repo
