#!/usr/bin/env bash
# Remove the IPsec container and its routing rules. Usage: ipsec-remove.sh NAME IMAGE TABLE
set -euo pipefail
# dslab:include host/lib/ipsec-teardown.sh
ipsec_teardown "$1" "$2" "$3" || true
