# Sourced by scripts/workflow-demo.sh and scripts/chat-demo.sh (from the repository root):
# makes a scratch folder ($demo, removed on exit) with an agent dir (PI_CODING_AGENT_DIR, so
# your own ~/.pi is not touched) and a project holding the example workflows and a greet.py,
# cds into the project, and defines `step ACTION`, a scripted turn calling workflow_step.
# Usage: workflow_scratch NAME   (the scratch folder is pi-hooks-NAME.XXXXXX in $TMPDIR)
workflow_scratch() {
  demo="$(mktemp -d "${TMPDIR:-/tmp}/pi-hooks-$1.XXXXXX")"
  trap 'rm -rf "$demo"' EXIT
  export PI_CODING_AGENT_DIR="$demo/agent"
  mkdir -p "$demo/agent" "$demo/project/.pi"
  cp -R plugins/workflow/examples/workflows "$demo/project/.pi/workflows"
  cd "$demo/project"
  echo 'def greet(): pass' > greet.py
}

step() { printf '{"toolCalls": [{"name": "workflow_step", "arguments": {"action": "%s"}}]}' "$1"; }
