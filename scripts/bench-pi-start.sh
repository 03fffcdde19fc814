#!/usr/bin/env bash
# What the pi-hooks bridge adds to a pi start (issue 35, BENCHMARKS.md): the real pi (1.6.0
# on its node 22, and 0.73.1) as whole processes, `pi --mode json` of one prompt against a
# local fake model, with no package, the bridge alone (`pi-hooks bridge install`), the bridge
# and 1 / 10 native packages (`pi install <folder>`), and 1 / 10 native packages laid out as
# `pi install npm:...` leaves them (each with its own copy of the bridge and the platform
# binary), interleaved round after round; medians and the median paired difference against pi
# alone. Then one run of each case with every mark (pi's PI_TIMING, the bridge's marks,
# serve's load trace): where the time goes. See scripts/bench-pi-start.mjs.
#
# The packages: plugins/examples/protected-paths built with -O2 and packed by the real
# `pi-hooks pack` ten times under the names bench-gate-1 ... bench-gate-10.
# Builds the release pi-hooks first (or give one in BENCH_PI_START_BIN). The log goes to
# target/bench-logs/. About 2-4 minutes on a 2-core machine with the default 10 rounds.
#
# Usage: scripts/bench-pi-start.sh
#        BENCH_PI_START_ROUNDS=20 scripts/bench-pi-start.sh       (more rounds)
#        BENCH_PI_START_PIS=16 BENCH_PI_START_CASES=none,bridge+10 scripts/bench-pi-start.sh
#        BENCH_PI_START_MARKS=0 scripts/bench-pi-start.sh          (no breakdown)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
LOGS=${CARGO_TARGET_DIR:-$ROOT/target}/bench-logs
mkdir -p "$LOGS"
LOG=$LOGS/bench-pi-start-$(date +%Y%m%d-%H%M%S).log
ROUNDS=${BENCH_PI_START_ROUNDS:-10}
PIS=${BENCH_PI_START_PIS:-16,073}
CASES=${BENCH_PI_START_CASES:-none,bridge,bridge+1,bridge+10,npm+1,npm+10}
MARKS=${BENCH_PI_START_MARKS:-1}

bash scripts/pi-peer/install.sh
[ -d scripts/pi-peer-1.6/node_modules/@earendil-works/pi-coding-agent ] || bash scripts/pi-peer-1.6/install.sh

if [ -n "${BENCH_PI_START_BIN:-}" ]; then
    BIN=$BENCH_PI_START_BIN
else
    cargo build --release -p pi-hooks >&2
    BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/pi-hooks
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-pi-start-pkgs.XXXXXX")
trap 'rm -rf "$work"' EXIT
"${CC:-cc}" -std=c11 -O2 -shared -fPIC -fvisibility=hidden -Iinclude \
    plugins/examples/protected-paths/protected_paths.c -o "$work/libprotected_paths.so"
mkdir -p "$work/tgz" "$work/pkgs"
for i in $(seq 1 10); do
    "$BIN" pack --name "bench-gate-$i" --out "$work/tgz" "$work/libprotected_paths.so" >/dev/null
    mkdir -p "$work/pkgs/bench-gate-$i"
    tar -xzf "$work/tgz"/bench-gate-"$i"-*.tgz -C "$work/pkgs/bench-gate-$i" --strip-components=1
done

marks=()
[ "$MARKS" = 0 ] || marks=(--marks)
cmd=(node scripts/bench-pi-start.mjs --bin "$BIN" --packages "$work/pkgs" --rounds "$ROUNDS"
    --pis "$PIS" --cases "$CASES" "${marks[@]}")
{
    echo "== machine"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "kernel: $(uname -sr)"
    echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo -)"
    echo "load average (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "== ${cmd[*]}"
} | tee "$LOG"
"${cmd[@]}" | tee -a "$LOG"
echo "load average at the end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$LOG"
echo "(log: $LOG)"
