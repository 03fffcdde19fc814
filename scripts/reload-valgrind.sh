#!/usr/bin/env bash
# Runs the hot-reload tests that stress the swap (tests/tests/reload_swap.rs: reload under
# load, a call in progress during a reload, broken rebuilds, the file overwritten in place)
# under a memory checker, and fails on any invalid access.
#
#   scripts/reload-valgrind.sh          valgrind memcheck on the debug test binary
#   scripts/reload-valgrind.sh --asan   AddressSanitizer (needs a nightly toolchain:
#                                       rustup toolchain install nightly)
#
# The C plugins the tests compile are not instrumented; everything the host does with them
# (loading, calling, swapping, retiring) is. Libraries are never closed (the unload policy),
# so leaks are not reported: valgrind runs with --leak-check=no, ASan with detect_leaks=0.
# Takes about a minute and a half. valgrind runs one thread at a time; --fair-sched=yes
# makes it take turns, without which the test thread that emits continuously starves the
# reloading one and the 200 reloads under load do not finish.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=(reload_under_load a_call_in_progress broken_rebuilds the_loaded_file_overwritten)

if [[ "${1:-}" == "--asan" ]]; then
    target=$(rustc -vV | sed -n 's/^host: //p')
    export RUSTFLAGS="-Zsanitizer=address"
    export RUSTDOCFLAGS="-Zsanitizer=address"
    export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"
    export CARGO_TARGET_DIR="target/asan"
    cargo +nightly test -p pi-hooks-tests --target "$target" --test reload_swap -- \
        --test-threads=1 "${tests[@]}"
    echo "reload-valgrind.sh --asan: no invalid access reported"
    exit 0
fi

command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 2; }
# Build the test binary (and the pi-hooks binary and plugins the tests build) first.
bin=$(cargo test -p pi-hooks-tests --test reload_swap --no-run --message-format=json 2>/dev/null |
    sed -n 's/.*"executable":"\([^"]*reload_swap[^"]*\)".*/\1/p' | tail -1)
[[ -x "$bin" ]] || { echo "could not build the reload_swap test binary" >&2; exit 2; }
for t in "${tests[@]}"; do
    echo "== valgrind: $t"
    valgrind --quiet --error-exitcode=99 --leak-check=no --track-origins=no --fair-sched=yes \
        "$bin" --test-threads=1 "$t"
done
echo "reload-valgrind.sh: no invalid access reported"
