#!/usr/bin/env bash
# Runs every benchmark behind BENCHMARKS.md and prints the figures:
#   1. criterion: tool_call dispatch (loader/host/benches/dispatch.rs) and plugin loading in fresh
#      processes (loader/host/benches/load.rs, with a per-stage breakdown);
#   2. process level, with the release binary (loader/cli/benches/process.rs): a print-mode run
#      with one bash tool call, 0 vs 50 plugins, and peak RSS;
#   3. a hyperfine cross-check of (2) when hyperfine is available (installed from Debian
#      when missing and running as root; set BENCH_INSTALL=0 to never install, and
#      BENCH_HYPERFINE=0 to skip it). Without it, (2) is the loop-with-medians measurement.
# Then a table of the criterion medians. Logs go to target/bench-logs/.
#
# Usage: scripts/bench.sh            (about 2 minutes once built; the first build of the
#                                     bench profile takes a few minutes more)
#        PI_HOOKS_BENCH_RUNS=200 scripts/bench.sh   (more rounds for the process bench)
#        BENCH_PI=1 scripts/bench.sh                (then pi 0.73.1 too: scripts/bench-pi.sh)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
LOGS=$TARGET/bench-logs
mkdir -p "$LOGS"
STAMP=$(date +%Y%m%d-%H%M%S)
LOG=$LOGS/bench-$STAMP.log
START_MARK=$(mktemp)
trap 'rm -f "$START_MARK"' EXIT

machine() {
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "kernel: $(uname -sr)"
    echo "rustc: $(rustc --version)"
    echo "cc: $(${CC:-cc} --version | head -1)"
    echo "load average (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
}

{
    echo "== machine"
    machine
    echo
    echo "== cargo bench -p pi-hooks-host --bench dispatch --bench load; cargo bench -p pi-hooks --bench process"
} | tee "$LOG"
cargo bench -p pi-hooks-host --bench dispatch --bench load 2>&1 | tee -a "$LOG"
cargo bench -p pi-hooks --bench process 2>&1 | tee -a "$LOG"

# --- hyperfine cross-check of the print-mode run -------------------------------------------
if [ "${BENCH_HYPERFINE:-1}" != 0 ]; then
    if ! command -v hyperfine >/dev/null 2>&1 && [ "${BENCH_INSTALL:-1}" != 0 ] &&
        [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "== installing hyperfine from Debian (BENCH_INSTALL=0 to skip)" | tee -a "$LOG"
        (apt-get install -y -qq hyperfine >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq hyperfine >/dev/null 2>&1; }) ||
            echo "   (could not install hyperfine; skipping the cross-check)" | tee -a "$LOG"
    fi
    if command -v hyperfine >/dev/null 2>&1; then
        WORK=$(mktemp -d)
        trap 'rm -f "$START_MARK"; rm -rf "$WORK"' EXIT
        mkdir -p "$WORK/home/.pi/agent" "$WORK/project" "$WORK/lib"
        seq -w 0 49 | xargs -P "$(nproc)" -I{} "${CC:-cc}" -std=c11 -O2 -shared -fPIC \
            -I include "-DPLUGIN_NAME=\"trivial-{}\"" -o "$WORK/lib/libtrivial_{}.so" \
            loader/host/benches/fixtures/trivial.c
        cat >"$WORK/one_bash.json" <<'EOF'
{"turns": [
  {"text": "Running it.", "toolCalls": [{"name": "bash", "arguments": {"command": "echo hi"}}]},
  {"text": "bench-done", "stopReason": "stop"}
]}
EOF
        BIN=$TARGET/release/pi-hooks
        HOOKS=""
        for f in "$WORK"/lib/*.so; do HOOKS="$HOOKS --hook $f"; done
        RUN="$BIN run -p --no-session --script $WORK/one_bash.json"
        export HOME=$WORK/home PI_CODING_AGENT_DIR=$WORK/home/.pi/agent \
            PI_HOOKS_CACHE_DIR=$WORK/cache
        unset PI_HOOKS_LOG
        (cd "$WORK/project" && $RUN $HOOKS >/dev/null) # populate the shadow-copy cache
        {
            echo
            echo "== hyperfine: $RUN [+ 50 x --hook] (warm cache)"
            echo "   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
        } | tee -a "$LOG"
        (cd "$WORK/project" && hyperfine -N --warmup 5 --runs "${BENCH_HYPERFINE_RUNS:-60}" \
            --export-json "$WORK/hyperfine.json" \
            -n "no plugins" "$RUN" -n "50 plugins" "$RUN $HOOKS") 2>&1 | tee -a "$LOG"
        python3 - "$WORK/hyperfine.json" <<'EOF' | tee -a "$LOG"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
print("| hyperfine case | median ms | min ms | runs > 15 ms |")
print("|---|---|---|---|")
for r in results:
    slow = sum(t > 0.015 for t in r["times"])
    print(f"| {r['command']} | {r['median'] * 1e3:.2f} | {r['min'] * 1e3:.2f} | {slow}/{len(r['times'])} |")
if len(results) == 2:
    print(f"| difference of medians | {(results[1]['median'] - results[0]['median']) * 1e3:.2f} | | |")
EOF
    fi
fi

# --- the criterion medians of this run --------------------------------------------------------
{
    echo
    echo "== criterion medians (target/criterion/*/new/estimates.json of this run)"
    python3 - "$TARGET/criterion" "$START_MARK" <<'EOF'
import json, os, sys
root, mark = sys.argv[1], os.path.getmtime(sys.argv[2])
rows = []
for dirpath, _, files in os.walk(root):
    if os.path.basename(dirpath) != "new" or "estimates.json" not in files:
        continue
    path = os.path.join(dirpath, "estimates.json")
    if os.path.getmtime(path) < mark:
        continue
    est = json.load(open(path))["median"]
    bench = json.load(open(os.path.join(dirpath, "benchmark.json")))
    rows.append((bench["full_id"], est["point_estimate"],
                 est["confidence_interval"]["lower_bound"], est["confidence_interval"]["upper_bound"]))
def fmt(ns):
    return f"{ns / 1e6:.3f} ms" if ns >= 1e6 else f"{ns / 1e3:.3f} µs" if ns >= 1e3 else f"{ns:.1f} ns"
print("| benchmark | median | 95% CI of the median |")
print("|---|---|---|")
for name, m, lo, hi in sorted(rows):
    print(f"| {name} | {fmt(m)} | {fmt(lo)} – {fmt(hi)} |")
EOF
    echo
    echo "load average at the end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "log: $LOG"
} 2>&1 | tee -a "$LOG"

# --- the peer, in the same run ------------------------------------------------------------
# BENCH_PI=1 measures pi 0.73.1 right after (scripts/bench-pi.sh: npm ci from the lockfile,
# then pi's loadExtensions and emitToolCall), so both sides of a ratio come from one run.
if [ "${BENCH_PI:-0}" = 1 ]; then
    bash scripts/bench-pi.sh
fi
