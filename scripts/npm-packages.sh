#!/usr/bin/env bash
# Builds pi-hooks' npm packages as tarballs ready for `npm publish`, into OUTDIR:
#
#   pi-hooks-VERSION.tgz                the main package: the pi bridge extension (bridge/),
#                                       a launcher `bin` for `npx pi-hooks`, the C and C++
#                                       headers (include/), and one optional dependency per
#                                       platform built here
#   pi-hooks-PLATFORM-VERSION.tgz       @pi-hooks/PLATFORM: bin/pi-hooks for that platform,
#                                       with `os` / `cpu` / `libc` so npm installs only it,
#                                       and on Linux the bridge's ring addon
#                                       bin/libpi_hooks_node_ring.so when it was built beside
#                                       the binary (cargo build --release -p pi-hooks-node-ring)
#
# Usage: scripts/npm-packages.sh OUTDIR [PLATFORM=BINARY ...]
#
# Without PLATFORM=BINARY arguments it packs this machine's release build,
# linux-x64-gnu=target/release/pi-hooks (built with `cargo build --release` when missing). The
# platforms are those of plugins/pi-bridge/npm/platforms.tsv; give a binary built elsewhere
# (see the CI recipe in docs/packages.md) as, for instance, darwin-arm64=dist/darwin-arm64/pi-hooks. The
# templates are plugins/pi-bridge/npm/ (package.json, README.md) and the bridge's own files.
# Needs node and npm (`npm pack`); the version is the binary's (`pi-hooks --version`).
#
# It also packs two native plugins prebuilt, with `pi-hooks pack` (this machine's platform
# only), for users with no Rust (`pi install npm:@pi-hooks/claude-hooks`):
#
#   pi-hooks-claude-hooks-VERSION.tgz    @pi-hooks/claude-hooks: plugins/claude-hooks (Claude
#                                        Code's command hooks); it declares no capabilities
#                                        (unrestricted: it runs whatever commands the user's
#                                        .claude/settings.json names, which no grant can list)
#   pi-hooks-permission-gate-VERSION.tgz @pi-hooks/permission-gate: the Rust example
#                                        plugins/examples/permission-gate; it declares the
#                                        empty grant {} (no files, no network, no programs: it
#                                        only reads the tool call and asks through the UI)
#
# built with `cargo build --release -p claude-hooks -p permission-gate` (so this step needs
# cargo; PI_HOOKS_NATIVE_PACKAGES=0 skips it). PI_HOOKS_SIGN_KEY=FILE signs both with that
# minisign secret key (`pi-hooks pack --sign FILE`; an encrypted key's password is read from
# PI_HOOKS_KEY_PASSWORD); without it they are unsigned.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
templates="$root/plugins/pi-bridge/npm"

if [ $# -lt 1 ]; then
    echo "usage: scripts/npm-packages.sh OUTDIR [PLATFORM=BINARY ...]" >&2
    exit 2
fi
# A signing key that cannot be used is said before anything is built or packed.
if [ "${PI_HOOKS_NATIVE_PACKAGES:-1}" != 0 ] && [ -n "${PI_HOOKS_SIGN_KEY:-}" ] && [ ! -f "$PI_HOOKS_SIGN_KEY" ]; then
    echo "error: PI_HOOKS_SIGN_KEY names $PI_HOOKS_SIGN_KEY, which is not a file; make a key with \`pi-hooks keygen\` (it prints where it wrote it)" >&2
    exit 1
fi
mkdir -p "$1"
out="$(cd "$1" && pwd)"
shift
for tool in node npm; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "error: scripts/npm-packages.sh needs $tool on PATH (npm pack makes the tarballs); install Node.js with npm" >&2
        exit 1
    fi
done

# The platform table: name os cpu libc rust-target binary-name.
known="$(grep -v '^#' "$templates/platforms.tsv")"
names="$(cut -f1 <<<"$known" | paste -sd' ')"

declare -A binaries=()
if [ $# -eq 0 ]; then
    target_dir="${CARGO_TARGET_DIR:-$root/target}"
    release="$target_dir/release/pi-hooks"
    if [ ! -x "$release" ]; then
        echo "scripts/npm-packages.sh: building the release binary ($release)" >&2
        (cd "$root" && cargo build --release --quiet -p pi-hooks --bin pi-hooks)
    fi
    if [ ! -f "$target_dir/release/libpi_hooks_node_ring.so" ]; then
        echo "scripts/npm-packages.sh: building the pi bridge's ring addon" >&2
        (cd "$root" && cargo build --release --quiet -p pi-hooks-node-ring)
    fi
    binaries[linux-x64-gnu]="$release"
else
    for pair in "$@"; do
        platform="${pair%%=*}"
        binary="${pair#*=}"
        if [ "$platform" = "$pair" ] || ! grep -qx "$platform" <<<"$(cut -f1 <<<"$known")"; then
            echo "error: '$pair' is not PLATFORM=BINARY with a platform of plugins/pi-bridge/npm/platforms.tsv ($names)" >&2
            exit 2
        fi
        if [ ! -f "$binary" ]; then
            echo "error: the $platform binary $binary does not exist" >&2
            exit 1
        fi
        binaries[$platform]="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
    done
fi

# The version: the binary of this machine's platform says it; else the workspace's.
version=""
for platform in "${!binaries[@]}"; do
    if version="$("${binaries[$platform]}" --version 2>/dev/null)"; then
        version="${version##* }"
        break
    fi
    version=""
done
if [ -z "$version" ]; then
    version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -1)"
fi

stage="$(mktemp -d "${TMPDIR:-/tmp}/pi-hooks-npm.XXXXXX")"
trap 'rm -rf "$stage"' EXIT

optional="{}"
while IFS=$'\t' read -r name os cpu libc _target exe; do
    [ -n "${binaries[$name]:-}" ] || continue
    dir="$stage/$name"
    mkdir -p "$dir/bin"
    cp "${binaries[$name]}" "$dir/bin/$exe"
    chmod 755 "$dir/bin/$exe"
    # The pi bridge's ring addon (plugins/pi-bridge/addon, Linux), where it was built beside
    # the binary: the bridge loads it from beside the binary it runs.
    addon="$(dirname "${binaries[$name]}")/libpi_hooks_node_ring.so"
    if [ "$os" = linux ] && [ -f "$addon" ]; then
        cp "$addon" "$dir/bin/libpi_hooks_node_ring.so"
    fi
    NAME="$name" OS="$os" CPU="$cpu" LIBC="$libc" VERSION="$version" node -e '
        const { NAME, OS, CPU, LIBC, VERSION } = process.env;
        const pkg = {
            name: `@pi-hooks/${NAME}`,
            version: VERSION,
            description: `The pi-hooks binary for ${NAME}, installed by the pi-hooks package as an optional dependency where npm finds this platform.`,
            license: "MIT",
            repository: { type: "git", url: "https://github.com/pi-hooks/pi-hooks" },
            os: [OS],
            cpu: [CPU],
            ...(LIBC === "-" ? {} : { libc: [LIBC] }),
            files: ["bin"],
            preferUnplugged: true,
        };
        require("node:fs").writeFileSync(process.argv[1], JSON.stringify(pkg, null, 2) + "\n");
    ' "$dir/package.json"
    (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null)
    optional="$(OPTIONAL="$optional" NAME="$name" VERSION="$version" node -p '
        const o = JSON.parse(process.env.OPTIONAL); o[`@pi-hooks/${process.env.NAME}`] = process.env.VERSION; JSON.stringify(o)')"
    echo "packed @pi-hooks/$name $version -> $out/pi-hooks-$name-$version.tgz"
done <<<"$known"

main="$stage/main"
mkdir -p "$main/bridge"
for file in index.ts serve-client.ts supervisor.ts events.ts client-requests.ts platform-binary.cjs pi-hooks-launcher.cjs README.md; do
    cp "$root/plugins/pi-bridge/$file" "$main/bridge/$file"
done
chmod 755 "$main/bridge/pi-hooks-launcher.cjs"
# The C and C++ headers, for a plugin author with only npm (`pi-hooks sdk` gives the same
# files from the binary).
mkdir -p "$main/include"
cp "$root/include/pi_hooks.h" "$root/include/pi_hooks.hpp" "$main/include/"
cp "$templates/README.md" "$main/README.md"
OPTIONAL="$optional" VERSION="$version" node -e '
    const fs = require("node:fs");
    const pkg = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    pkg.version = process.env.VERSION;
    pkg.optionalDependencies = JSON.parse(process.env.OPTIONAL);
    fs.writeFileSync(process.argv[2], JSON.stringify(pkg, null, 2) + "\n");
' "$templates/package.json" "$main/package.json"
(cd "$main" && npm pack --silent --pack-destination "$out" >/dev/null)
echo "packed pi-hooks $version -> $out/pi-hooks-$version.tgz (platforms: ${!binaries[*]}; not built here: $(for n in $names; do [ -n "${binaries[$n]:-}" ] || printf '%s ' "$n"; done))"

# The native plugins, prebuilt (see the head comment): packed by this machine's pi-hooks.
if [ "${PI_HOOKS_NATIVE_PACKAGES:-1}" != 0 ]; then
    packer=""
    for platform in "${!binaries[@]}"; do
        if "${binaries[$platform]}" --version >/dev/null 2>&1; then
            packer="${binaries[$platform]}"
            break
        fi
    done
    if [ -z "$packer" ]; then
        echo "error: none of the binaries given runs on this machine, so none can run \`pi-hooks pack\` for the native plugins; give this machine's (e.g. linux-x64-gnu=target/release/pi-hooks) or set PI_HOOKS_NATIVE_PACKAGES=0" >&2
        exit 1
    fi
    sign=()
    if [ -n "${PI_HOOKS_SIGN_KEY:-}" ]; then
        if [ ! -f "$PI_HOOKS_SIGN_KEY" ]; then
            echo "error: PI_HOOKS_SIGN_KEY names $PI_HOOKS_SIGN_KEY, which is not a file; make a key with \`pi-hooks keygen\`" >&2
            exit 1
        fi
        sign=(--sign "$PI_HOOKS_SIGN_KEY")
    fi
    target_dir="${CARGO_TARGET_DIR:-$root/target}"
    (cd "$root" && cargo build --release --quiet -p claude-hooks -p permission-gate)
    printf '{}\n' >"$stage/permission-gate.capabilities.json"
    "$packer" pack "$target_dir/release/libclaude_hooks.so" --name @pi-hooks/claude-hooks \
        "${sign[@]}" --out "$out"
    "$packer" pack "$target_dir/release/libpermission_gate.so" --name @pi-hooks/permission-gate \
        --capabilities "$stage/permission-gate.capabilities.json" "${sign[@]}" --out "$out"
fi
