#!/usr/bin/env bash
# Measures the peer, pi (@mariozechner/pi-coding-agent 0.73.1, pinned by
# scripts/pi-peer/package-lock.json), for the side-by-side columns of BENCHMARKS.md:
#   1. scripts/pi-peer/bench-load.mjs: one `loadExtensions` call on N = 1, 10, 50 trivial
#      TypeScript extensions, a fresh node process per sample, cold (empty jiti transpile
#      cache) and warm (primed cache);
#   2. scripts/pi-peer/bench-dispatch.mjs: awaited `ExtensionRunner.emitToolCall` with 0, 1
#      and 10 trivial `tool_call` handlers, ns/event.
# Installs pi first (scripts/pi-peer/install.sh: `npm ci` from the lockfile; needs node >= 20.6
# and npm). Prints the machine, the JSON lines of both benches, then a table of the medians.
# The log goes to target/bench-logs/. About 2-3 minutes on a 2-core machine.
#
# Usage: scripts/bench-pi.sh
#        BENCH_PI_SAMPLES=20 BENCH_PI_PROCESSES=5 scripts/bench-pi.sh   (more samples)
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
LOGS=${CARGO_TARGET_DIR:-$ROOT/target}/bench-logs
mkdir -p "$LOGS"
LOG=$LOGS/bench-pi-$(date +%Y%m%d-%H%M%S).log
SAMPLES=${BENCH_PI_SAMPLES:-10}
PROCESSES=${BENCH_PI_PROCESSES:-3}

bash scripts/pi-peer/install.sh

load_cmd=(node scripts/pi-peer/bench-load.mjs --n 1,10,50 --samples "$SAMPLES")
dispatch_cmd=(node scripts/pi-peer/bench-dispatch.mjs --handlers 0,1,10 --processes "$PROCESSES"
    --repeats 9 --calls 100000 --warmup 20000)

results=$(mktemp)
trap 'rm -f "$results"' EXIT
{
    echo "== machine"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "nproc: $(nproc)"
    echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "kernel: $(uname -sr)"
    echo "node: $(node --version)"
    echo "pi: $(node -p 'require("./scripts/pi-peer/node_modules/@mariozechner/pi-coding-agent/package.json").version')"
    echo "load average (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "== ${load_cmd[*]}"
} | tee "$LOG"
"${load_cmd[@]}" | tee -a "$LOG" "$results"
echo "== ${dispatch_cmd[*]}" | tee -a "$LOG"
"${dispatch_cmd[@]}" | tee -a "$LOG" "$results"
echo "load average at the end (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$LOG"

echo | tee -a "$LOG"
node --input-type=module - "$results" <<'EOF' | tee -a "$LOG"
import { readFileSync } from "node:fs";
const rows = readFileSync(process.argv[2], "utf8").trim().split("\n").map((line) => JSON.parse(line));
const pad = (s, n) => String(s).padEnd(n);
const range = (r, unit) => `${r[`median_${unit}`]} (${r[`min_${unit}`]}-${r[`max_${unit}`]})`;

console.log("== pi medians (min-max)");
console.log(`${pad("pi loadExtensions, N trivial .ts", 34)}${pad("cold ms", 36)}warm ms`);
const loads = rows.filter((r) => r.bench === "pi_load");
for (const n of [...new Set(loads.map((r) => r.n))]) {
    const cell = (mode) => {
        const r = loads.find((r) => r.n === n && r.mode === mode);
        return r ? `${range(r, "ms")}, ${r.samples} samples` : "-";
    };
    console.log(`${pad(`  N = ${n}`, 34)}${pad(cell("cold"), 36)}${cell("warm")}`);
}
const imp = rows.find((r) => r.bench === "pi_import");
if (imp) console.log(`${pad("  import of pi (loader.js), not in the above", 70)}${imp.median_ms} ms, ${imp.samples} samples`);
console.log(`${pad("pi emitToolCall, awaited", 34)}ns/event (median of per-process medians)`);
for (const r of rows.filter((r) => r.bench === "pi_tool_call")) {
    console.log(`${pad(`  ${r.handlers} handler${r.handlers === 1 ? "" : "s"}`, 34)}${range(r, "ns")}, ${r.processes} processes`);
}
EOF
echo "(log: $LOG)"
