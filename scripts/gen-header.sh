#!/usr/bin/env bash
# Generates include/pi_hooks.h from the C ABI in abi/src/ffi (see scripts/gen-header/).
#   scripts/gen-header.sh            write the header
#   scripts/gen-header.sh --verify   exit 1 with a diff when the committed header is stale
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
exec cargo run --quiet -p pi-hooks-gen-header -- "$@"
