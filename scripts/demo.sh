#!/usr/bin/env bash
# The main job: build the example plugins (Rust and C) and show what pi-hooks does with them:
# discovery and load order, trust of a project plugin, and what each plugin registers.
# Runs in a scratch agent dir and project, so your own ~/.pi is not touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

cargo build --quiet -p pi-hooks -p permission-gate
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

echo "\$ pi-hooks list     # a global plugin loads; the project's plugin waits for trust"
"$bin" list
echo
echo "\$ pi-hooks trust .pi/hooks/libprotected_paths.$so"
"$bin" trust ".pi/hooks/libprotected_paths.$so"
echo
echo "\$ pi-hooks list"
"$bin" list
echo
echo "\$ pi-hooks inspect --json <permission-gate>"
"$bin" inspect --json "$demo/agent/hooks/libpermission_gate.$so"
