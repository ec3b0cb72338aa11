#!/usr/bin/env bash
# A new random secret (256 bits, hex), made on the operator's machine. Usage: new-secret.sh
set -euo pipefail
od -An -N32 -tx1 /dev/urandom | tr -d ' \n'
echo
