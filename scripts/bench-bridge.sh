#!/usr/bin/env bash
# What the pi bridge adds to a gated tool call in pi (BENCHMARKS.md section 8): pi 0.73.1's and
# pi 1.6.0's ExtensionRunner.emitToolCall with no extension, with a TypeScript extension gating
# the call in pi's process, and with the bridge (plugins/pi-bridge/) running the C example
# protected-paths in `pi-hooks serve` (a real round trip per call) over each of its transports
# (`bridge`: the pipe; `ring`: the shared-memory rings through the Node-API addon
# plugins/pi-bridge/addon), beside the floor (a line round trip from node to `cat`); hot, after
# a 2 ms pause, and after a 2 ms pause ended by pi's `toolcall_end` (the bridge's nudge).
# Builds pi-hooks and the addon in release mode and protected-paths with -O2, installs both pis
# (scripts/pi-peer/install.sh, scripts/pi-peer-1.6/install.sh), then runs
# scripts/pi-peer/bench-bridge.mjs. About a minute once built; read the table it ends with
# (medians over the processes; "added" is paired with `none` round by round).
#
# Usage: scripts/bench-bridge.sh            (BENCH_BRIDGE_PROCESSES=5 for more processes;
#                                            extra arguments go to bench-bridge.mjs)
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
bash scripts/pi-peer/install.sh
bash scripts/pi-peer-1.6/install.sh
cargo build --release -q -p pi-hooks -p pi-hooks-node-ring
plugin=$(mktemp -d "${TMPDIR:-/tmp}/bench-bridge.XXXXXX")
trap 'rm -rf "$plugin"' EXIT
cc -O2 -shared -fPIC -Iinclude -o "$plugin/libprotected_paths.so" \
    plugins/examples/protected-paths/protected_paths.c
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), nproc $(nproc), node $(node --version), load average $(cut -d' ' -f1-3 /proc/loadavg)"
cmd=(node scripts/pi-peer/bench-bridge.mjs --pi-hooks "$TARGET/release/pi-hooks"
    --plugin "$plugin/libprotected_paths.so" --processes "${BENCH_BRIDGE_PROCESSES:-3}" "$@")
echo "== ${cmd[*]}"
"${cmd[@]}"
