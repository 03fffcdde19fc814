#!/usr/bin/env bash
# Instructions per `emit_tool_call` (BENCHMARKS §1), counted by callgrind: deterministic, so
# they do not move with the machine's noise (wall-clock figures do; quote both).
#
#   bash scripts/bench-dispatch-callgrind.sh [CALLS]     (default 20000 calls per case)
#
# Builds the `dispatch` bench (release), runs it under valgrind with PI_HOOKS_DISPATCH_COUNT
# set (the bench then makes CALLS calls of each case in its own function and exits) and
# prints one line per case: `emit/N  <instructions per call>`, then what each handler adds,
# `(emit/10 - emit/0) / 10`. Each call is what criterion
# times: `runner.emit_tool_call(payload.clone())` (the Arc clone and drop included).
# Then the top functions under `counted_emit_1` (where the instructions go, memcpy included).
set -euo pipefail
cd "$(dirname "$0")/.."
calls="${1:-20000}"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
bin=$(cargo bench -p pi-hooks-host --bench dispatch --no-run --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "dispatch" and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || { echo "no dispatch bench binary" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
PI_HOOKS_DISPATCH_COUNT="$calls" valgrind --tool=callgrind --callgrind-out-file="$out/cg" \
    --toggle-collect='*counted_emit_*' "$bin" >"$out/log" 2>&1 ||
    { cat "$out/log" >&2; exit 1; }
callgrind_annotate --inclusive=yes "$out/cg" >"$out/annotate" 2>/dev/null
echo "callgrind, $calls calls per case ($(git rev-parse --short HEAD)$(git diff --quiet || echo '+dirty')):"
declare -A per_call
for case in 0 1 10 reading_10; do
    ir=$(grep -E "dispatch::counted_emit_${case} " "$out/annotate" | head -1 | awk '{gsub(",","",$1); print $1}')
    name="emit/$case"
    [ "$case" = reading_10 ] && name="emit_reading/10"
    if [ -z "$ir" ]; then echo "  $name  (not found)"; continue; fi
    per_call[$case]=$ir
    python3 -c "print(f'  {\"$name\":<16} {$ir / $calls:8.1f} instructions per call')"
done
if [ -n "${per_call[0]:-}" ] && [ -n "${per_call[10]:-}" ]; then
    python3 -c "print(f'  per handler      {(${per_call[10]} - ${per_call[0]}) / $calls / 10:8.1f} instructions ((emit/10 - emit/0) / 10)')"
fi
echo "exclusive instructions per call of emit/1, by function:"
PI_HOOKS_DISPATCH_COUNT="$calls" valgrind --tool=callgrind --callgrind-out-file="$out/cg1" \
    --toggle-collect='dispatch::counted_emit_1' "$bin" >"$out/log1" 2>&1
callgrind_annotate "$out/cg1" 2>/dev/null | python3 -c '
import re, sys
calls = int(sys.argv[1])
rows = 0
for line in sys.stdin:
    m = re.match(r"\s*([\d,]+) \([^)]*\)\s+(.*?)(?: \[.*)?$", line)
    if not m or "PROGRAM TOTALS" in line:
        continue
    ir = int(m.group(1).replace(",", ""))
    print("  %8.1f  %s" % (ir / calls, m.group(2)))
    rows += 1
    if rows == 12:
        break
' "$calls"
