#!/usr/bin/env bash
# The workflow plugin (plugins/workflow), offline: builds pi-hooks and the plugin, puts the
# example workflows (plugins/workflow/examples/workflows: Planning -> Implement, with a nested
# Review -> Verification) into a scratch project, and runs a scripted model through them in
# print mode. The model reads in Planning, tries bash there (blocked by the phase's whitelist),
# advances into the nested subworkflows, tries `edit` during the review's static check
# (blacklisted), and completes. Without a UI the plugin logs each status change at info
# level (PI_HOOKS_LOG=info), so they show on stderr as they happen. Then the same over RPC,
# where `setStatus` / `setWidget` requests carry the status line and the auto-continue
# countdown. Uses a scratch agent dir and project: your own ~/.pi is not touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

echo "(building pi-hooks and the workflow plugin: cargo build -p pi-hooks -p workflow; the first build takes a minute or two)" >&2
cargo build --quiet -p pi-hooks -p workflow
bin="$root/target/debug/pi-hooks"
case "$(uname -s)" in
  Darwin) lib="$root/target/debug/libworkflow.dylib" ;;
  *) lib="$root/target/debug/libworkflow.so" ;;
esac

. scripts/workflow-scratch.sh
workflow_scratch workflow-demo

cat > "$demo/turns.json" <<JSON
{"turns": [
  {"text": "Planning: reading first.", "toolCalls": [{"name": "read", "arguments": {"path": "greet.py"}}]},
  {"text": "Let me just run it.", "toolCalls": [{"name": "bash", "arguments": {"command": "python3 greet.py"}}]},
  {"text": "Plan: implement greet().", "toolCalls": [{"name": "workflow_step", "arguments": {"action": "next", "summary": "planned"}}]},
  {"toolCalls": [{"name": "write", "arguments": {"path": "greet.py", "content": "def greet():\n    return 'hello'\n"}}]},
  $(step next),
  {"text": "Reviewing; a quick fix first?", "toolCalls": [{"name": "edit", "arguments": {"path": "greet.py", "oldText": "hello", "newText": "Hello"}}]},
  $(step next),
  {"toolCalls": [{"name": "edit", "arguments": {"path": "greet.py", "oldText": "hello", "newText": "Hello"}}]},
  $(step next),
  {"toolCalls": [{"name": "bash", "arguments": {"command": "cat greet.py"}}]},
  $(step next),
  {"text": "Done: greet() returns 'Hello', reviewed and verified."}
]}
JSON

echo "\$ ls .pi/workflows"
ls .pi/workflows
echo
echo "\$ PI_HOOKS_LOG=info pi-hooks run -p --no-session --script turns.json -e libworkflow.so '/workflow feature Add a greeting'"
echo "  (stderr: the plugin's status changes and blocks; stdout: the final assistant text)"
PI_HOOKS_LOG=info "$bin" run -p --no-session --script "$demo/turns.json" -e "$lib" \
  "/workflow feature Add a greeting" 2>&1 | sed 's/^/  /'
echo
echo "\$ cat greet.py"
cat greet.py
echo

# RPC: the model stops in Planning, so the countdown widget ticks 3-2-1 and the not-done
# reminder starts a new run; /cancel-workflow then ends it.
cat > "$demo/stop.json" <<'JSON'
{"turns": [{"text": "I think I am done."}]}
JSON
echo "\$ pi-hooks rpc --no-session --script stop.json -e libworkflow.so   # setStatus / setWidget / notify requests"
{
  echo '{"id":"1","type":"prompt","message":"/workflow feature Add a farewell"}'
  sleep 4.5
  echo '{"id":"2","type":"prompt","message":"/cancel-workflow"}'
  sleep 0.5
} | "$bin" rpc --no-session --script "$demo/stop.json" -e "$lib" \
  | grep -o '"method":"\(setStatus\|setWidget\|notify\)"[^}]*\|"type":"message_end","message":{"role":"user","content":\[{"type":"text","text":"[^"]\{0,60\}' \
  | sed -e 's/"type":"message_end","message":{"role":"user","content":\[{"type":"text","text":/user message: /' -e 's/^/  /'
