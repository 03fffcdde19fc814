#!/usr/bin/env bash
# The interactive mode, offline: builds pi-hooks, the workflow plugin and the ui-tour example,
# puts the example workflows into a scratch project, and starts `pi-hooks chat` with a
# scripted model on `/workflow feature Add a greeting`. Watch the footer's status line follow
# the nested phase path, the Planning whitelist block `bash` (the tool shows the reason), and
# the auto-continue countdown widget tick 3-2-1 each time the model stops mid-phase (once in
# Planning, once in the nested Review). Then try
# `/tour` (every UI element a plugin can draw), `!ls`, `/help`, and quit with Ctrl+C twice.
# Needs a terminal. Uses a scratch agent dir and project: your own ~/.pi is not touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
if [ ! -t 0 ] || [ ! -t 1 ]; then
  echo "scripts/chat-demo.sh needs a terminal (it starts the interactive mode)" >&2
  exit 2
fi

echo "(building pi-hooks, the workflow plugin and ui-tour; the first build takes a minute or two)" >&2
cargo build --quiet -p pi-hooks -p workflow
bin="$root/target/debug/pi-hooks"
case "$(uname -s)" in
  Darwin) ext=dylib ;;
  *) ext=so ;;
esac
. scripts/workflow-scratch.sh
workflow_scratch chat-demo
"${CC:-cc}" -std=c11 -shared -fPIC -I "$root/include" -o "$demo/libui_tour.$ext" "$root/plugins/examples/ui-tour/ui_tour.c"

cat > "$demo/turns.json" <<JSON
{"rewind": false, "turns": [
  {"thinking": "The workflow starts in Planning: read before changing anything.", "text": "Planning: reading first.", "toolCalls": [{"name": "read", "arguments": {"path": "greet.py"}}]},
  {"text": "Let me just run it.", "toolCalls": [{"name": "bash", "arguments": {"command": "python3 greet.py"}}]},
  {"text": "I have a plan, but I'll stop here for a moment."},
  {"text": "Plan: implement greet().", "toolCalls": [{"name": "workflow_step", "arguments": {"action": "next", "summary": "planned"}}]},
  {"toolCalls": [{"name": "write", "arguments": {"path": "greet.py", "content": "def greet():\n    return 'hello'\n"}}]},
  $(step next),
  {"text": "Reviewing; a quick fix first?", "toolCalls": [{"name": "edit", "arguments": {"path": "greet.py", "oldText": "hello", "newText": "Hello"}}]},
  {"text": "Pausing inside the review."},
  $(step next),
  {"toolCalls": [{"name": "edit", "arguments": {"path": "greet.py", "oldText": "hello", "newText": "Hello"}}]},
  $(step next),
  {"toolCalls": [{"name": "bash", "arguments": {"command": "cat greet.py"}}]},
  $(step next),
  {"text": "Done: greet() returns 'Hello', reviewed and verified. Try /tour next."}
]}
JSON
"$bin" chat --no-session --script "$demo/turns.json" -e "$root/target/debug/libworkflow.$ext" \
  -e "$demo/libui_tour.$ext" "/workflow feature Add a greeting"
