#!/usr/bin/env bash
# Installs the pinned peer, pi (@mariozechner/pi-coding-agent 0.73.1), and TypeScript into
# scripts/pi-peer/node_modules from package-lock.json, for the side-by-side benchmarks
# (scripts/bench-pi.sh), the tests with the real pi (tests/tests/pi_rpc_client.rs,
# pi_bridge.rs) and the bridge's type check (plugins/pi-bridge/tsconfig.json). Needs node (>= 20.6, pi's own minimum) and npm; packages come from
# the npm registry npm is configured for. Idempotent: does nothing when the installed tree
# already matches the lockfile. Install scripts of dependencies are not run (the loader and
# the runner need none of them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "error: scripts/pi-peer/install.sh needs node (>= 20.6) and npm on PATH to install pi" >&2
    echo "       (missing: $(command -v node >/dev/null 2>&1 || printf 'node ')$(command -v npm >/dev/null 2>&1 || printf 'npm'))." >&2
    echo "       Install Node.js with npm (e.g. 'apt-get install nodejs npm'), then run it again." >&2
    exit 1
fi
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 6) ? 0 : 1)'; then
    echo "error: pi 0.73.1 needs node >= 20.6; this node is $(node --version). Install a newer Node.js." >&2
    exit 1
fi

# `npm ci` always deletes node_modules and reinstalls, so it is skipped when the stamp left by
# the last successful run here names the current lockfile's hash.
stamp=node_modules/.pi-peer-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
    [ -f node_modules/@mariozechner/pi-coding-agent/package.json ]; then
    exit 0
fi

log="$(mktemp "${TMPDIR:-/tmp}/pi-peer-npm.XXXXXX")"
trap 'rm -f "$log"' EXIT
if ! npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: 'npm ci' failed in $here (output above). Check network access to the npm registry" >&2
    echo "       ($(npm config get registry 2>/dev/null || echo 'registry unknown'))." >&2
    exit 1
fi
version="$(node -p 'require("./node_modules/@mariozechner/pi-coding-agent/package.json").version')"
if [ "$version" != 0.73.1 ]; then
    echo "error: installed @mariozechner/pi-coding-agent is $version, expected 0.73.1 (package-lock.json)" >&2
    exit 1
fi
echo "$want" >"$stamp"
