#!/usr/bin/env bash
# Installs pi-hooks for C and C++ plugin authors under a prefix:
#
#   PREFIX/bin/pi-hooks                                     the host, built in release mode
#   PREFIX/include/pi-hooks/pi_hooks.h, pi_hooks.hpp        the headers
#   PREFIX/lib/pkgconfig/pi-hooks.pc                        cc $(pkg-config --cflags pi-hooks)
#   PREFIX/lib/cmake/pi-hooks/pi-hooksConfig.cmake          find_package(pi-hooks), with the
#   PREFIX/lib/cmake/pi-hooks/pi-hooksConfigVersion.cmake   INTERFACE target pi-hooks::headers
#
# The package files find the headers relative to themselves, so the prefix can be moved.
# This script builds the binary (or takes --binary) and runs `pi-hooks sdk --prefix DIR
# --with-binary`: the binary carries the headers and the package files, so anyone with only
# the binary (npm install -g pi-hooks, say) gets the same with `pi-hooks sdk --prefix DIR`.
#
# usage: scripts/install.sh --prefix DIR [--binary FILE]
#   --prefix DIR    where to install (created when missing), for example ~/.local or /usr/local
#   --binary FILE   install this pi-hooks binary instead of building one with
#                   `cargo build --release -p pi-hooks`
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

usage() {
    echo "usage: scripts/install.sh --prefix DIR [--binary FILE]" >&2
    echo "  (see the comment at the top of scripts/install.sh)" >&2
    exit 2
}

prefix=""
binary=""
while [ $# -gt 0 ]; do
    case "$1" in
        --prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
        --prefix=*) prefix="${1#--prefix=}"; shift ;;
        --binary) [ $# -ge 2 ] || usage; binary="$2"; shift 2 ;;
        --binary=*) binary="${1#--binary=}"; shift ;;
        -h | --help) usage ;;
        *) echo "error: unknown argument '$1'" >&2; usage ;;
    esac
done
if [ -z "$prefix" ]; then
    echo "error: --prefix DIR is required" >&2
    usage
fi
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"

if [ -z "$binary" ]; then
    echo "building pi-hooks (release)"
    cargo build --release --locked -p pi-hooks
    binary="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/pi-hooks"
fi
if [ ! -f "$binary" ]; then
    echo "error: no pi-hooks binary at $binary" >&2
    exit 1
fi

# The binary carries the headers and writes the package files itself (loader/cli/src/cli/sdk.rs).
exec "$binary" sdk --prefix "$prefix" --with-binary
