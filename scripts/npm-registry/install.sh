#!/usr/bin/env bash
# Installs the pinned local npm registry, verdaccio 6.8.0 (with node-fetch held at 2.7.0 so
# that it runs on node 20), into scripts/npm-registry/node_modules from package-lock.json, for
# the tests that publish pi-hooks' npm packages and packed native plugins and install them with
# the real pi and npm (tests/tests/npm_*.rs). Needs node (>= 20) and npm; packages come from
# the npm registry npm is configured for. Idempotent: does nothing when the installed tree
# already matches the lockfile. Install scripts of dependencies are not run (verdaccio needs
# none of them).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "error: scripts/npm-registry/install.sh needs node (>= 20) and npm on PATH to install verdaccio." >&2
    echo "       Install Node.js with npm (e.g. 'apt-get install nodejs npm'), then run it again." >&2
    exit 1
fi

# `npm ci` always deletes node_modules and reinstalls, so it is skipped when the stamp left by
# the last successful run here names the current lockfile's hash.
stamp=node_modules/.npm-registry-lock.sha256
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f node_modules/verdaccio/package.json ]; then
    exit 0
fi

log="$(mktemp "${TMPDIR:-/tmp}/npm-registry-npm.XXXXXX")"
trap 'rm -f "$log"' EXIT
if ! npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: 'npm ci' failed in $here (output above). Check network access to the npm registry" >&2
    echo "       ($(npm config get registry 2>/dev/null || echo 'registry unknown'))." >&2
    exit 1
fi
version="$(node -p 'require("./node_modules/verdaccio/package.json").version')"
if [ "$version" != 6.8.0 ]; then
    echo "error: installed verdaccio is $version, expected 6.8.0 (package-lock.json)" >&2
    exit 1
fi
echo "$want" >"$stamp"
