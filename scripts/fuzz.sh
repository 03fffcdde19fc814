#!/usr/bin/env bash
# Fuzzes everything that parses package bytes, and what crosses from an isolated plugin's
# child to the host: builds the cargo-fuzz targets in loader/host/fuzz (tgz, package_json,
# capabilities, signature, settings; ring_frames, serve_lines, report_lines) and runs each for
# SECONDS (default 5), starting from the committed seeds (loader/host/fuzz/seeds/TARGET) and
# the corpus of earlier runs (loader/host/fuzz/corpus, not committed). Each fuzzer runs on one
# core, so as many run at once as there are cores (PI_HOOKS_FUZZ_JOBS sets how many; 1 runs
# them one at a time): each target still gets SECONDS of a core of its own. A crash fails the
# script with its input in loader/host/fuzz/artifacts.
# Needs the nightly toolchain; installs the pinned cargo-fuzz when it is missing.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cargo_fuzz_version="0.13.1"
seconds="${1:-5}"
shift || true
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(tgz package_json capabilities signature settings ring_frames serve_lines report_lines)
fi

if ! cargo +nightly --version >/dev/null 2>&1; then
    echo "fuzz: the nightly toolchain is needed (rustup toolchain install nightly)" >&2
    exit 1
fi
if [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $cargo_fuzz_version" ]; then
    echo "== installing cargo-fuzz $cargo_fuzz_version"
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi

cd "$root/loader/host"
start=$(date +%s)
# No sanitizer: the code fuzzed is safe Rust (the crates it uses too), so AddressSanitizer
# would only slow the build and the runs down; panics, overflows (debug assertions) and
# timeouts are what is looked for.
flags=(--sanitizer none --debug-assertions)
cargo +nightly fuzz build "${flags[@]}" 2>&1 | tail -n 3
built=$(date +%s)
echo "fuzz: built in $((built - start)) s"

jobs="${PI_HOOKS_FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}"
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
# Runs one target into its log; its exit status is written beside the log.
run_target() {
    local target="$1" corpus="fuzz/corpus/$1" status=0
    mkdir -p "$corpus"
    cargo +nightly fuzz run "${flags[@]}" "$target" "$corpus" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        >"$logs/$target.log" 2>&1 || status=$?
    echo "$status" >"$logs/$target.status"
}

# At most $jobs at once, started in the list's order.
pids=()
for target in "${targets[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do
        wait -n || true
    done
    echo "== fuzz $target for $seconds s"
    run_target "$target" &
    pids+=("$!")
done
wait "${pids[@]}" || true

summary=()
for target in "${targets[@]}"; do
    log="$logs/$target.log"
    status="$(cat "$logs/$target.status" 2>/dev/null || echo 1)"
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$log"
        echo "fuzz: $target failed (exit $status); the input is in loader/host/fuzz/artifacts/$target" >&2
        exit "$status"
    fi
    summary+=("$target: ${runs:-?} runs in $seconds s")
done
printf 'fuzz: %s\n' "${summary[@]}"
echo "fuzz: done in $(($(date +%s) - start)) s"
