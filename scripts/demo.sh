#!/usr/bin/env bash
# The main job: real sessions through real plugins, offline.
#
# 1. The workflow plugin (plugins/workflow, the pi-workflows extension as a native plugin):
#    scripts/workflow-demo.sh runs a scripted model through the example workflow (Planning ->
#    Implement with a nested Review -> Verification), a tool blocked in Planning, the status
#    line at every step, then the same over RPC with the auto-continue countdown.
# 2. The safety plugins: builds the example plugins (Rust
# permission-gate, C protected-paths) and runs `pi-hooks run` with the embedded demo script:
# the model runs one harmless bash command, then tries `rm -rf` on a scratch folder it made,
# then a write to `.env` in it. permission-gate blocks the first, protected-paths the second.
# Also shows discovery and trust (`pi-hooks list`, `trust`). Uses a scratch agent dir and
# project, so your own ~/.pi is not touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

echo "== 1. The workflow plugin"
bash scripts/workflow-demo.sh
echo
echo "== 2. The safety plugins: permission-gate (Rust) and protected-paths (C)"
echo "(building the example plugins: cargo build -p pi-hooks -p permission-gate -p workflow, cc protected_paths.c)" >&2
# `-p workflow` as in part 1's build: the workflow plugin turns on serde_json's
# `preserve_order`, so without it cargo would build pi-hooks (and the host under it) a second
# time with other features; with it, this build only adds permission-gate.
cargo build --quiet -p pi-hooks -p permission-gate -p workflow
bash scripts/build-c-plugins.sh >/dev/null
bin="$root/target/debug/pi-hooks"
so="$(python3 -c 'import sys; print({"darwin": "dylib", "win32": "dll"}.get(sys.platform, "so"))' 2>/dev/null || echo so)"

demo="$(mktemp -d "${TMPDIR:-/tmp}/pi-hooks-demo.XXXXXX")"
trap 'rm -rf "$demo"' EXIT
export PI_CODING_AGENT_DIR="$demo/agent"
mkdir -p "$demo/agent/hooks" "$demo/project/.pi/hooks"
cp "target/debug/libpermission_gate.$so" "$demo/agent/hooks/"
cp "target/c-plugins/libprotected_paths.$so" "$demo/project/.pi/hooks/"
cd "$demo/project"

echo "\$ pi-hooks list     # the global plugin loads; the project's plugin waits for trust"
"$bin" list
echo
echo "\$ pi-hooks trust .pi/hooks/libprotected_paths.$so"
"$bin" trust ".pi/hooks/libprotected_paths.$so"
echo
echo "\$ pi-hooks run --mode json 'Run the demo.'   # (events rendered below)"
"$bin" run --mode json "Run the demo." | python3 -c '
import json, sys
for line in sys.stdin:
    event = json.loads(line)
    kind = event.get("type")
    if kind == "session":
        print("  session", event["id"], "in", event["cwd"])
    elif kind == "message_end" and event["message"].get("role") == "assistant":
        text = "".join(b.get("text", "") for b in event["message"]["content"] if b.get("type") == "text")
        print("  assistant:", text)
    elif kind == "tool_execution_start":
        print("  ->", event["toolName"], json.dumps(event["args"]))
    elif kind == "tool_execution_end":
        text = " ".join(b.get("text", "") for b in event["result"]["content"]).strip().replace("\n", " | ")
        mark = "BLOCKED/ERROR" if event["isError"] else "ok"
        print("    ", mark + ":", text)
'
echo
echo "\$ pi-hooks run -p 'Run the demo.'   # print mode: the final assistant text"
"$bin" run -p "Run the demo."
