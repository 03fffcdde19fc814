#!/usr/bin/env bash
# Wall-clock time of whole test binaries of pi-hooks-tests, where CI's minutes go
# (BENCHMARKS.md §11): builds them once (`cargo test --no-run`), then runs each ROUNDS times,
# interleaved (A B C, A B C, ...), as `cargo test` runs them (from tests/, every test of the
# binary, its default thread count), and prints each round's seconds and the median per
# binary. The first round also pays for what the tests install or build on first use (pi,
# verdaccio, the release build), so read the median, and compare two trees' medians.
#
#   scripts/bench-tests.sh [ROUNDS] TEST...      e.g. scripts/bench-tests.sh 3 embed reload_watch
#
# Output: one line per run, "round R  TEST  SECONDS s  (ok|FAILED)", then per binary
# "median TEST  SECONDS s  (of R rounds)".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds=3
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    rounds="$1"
    shift
fi
if [ $# -eq 0 ]; then
    echo "usage: scripts/bench-tests.sh [ROUNDS] TEST..." >&2
    exit 2
fi

declare -A binary=()
for test in "$@"; do
    # The executable cargo built for tests/tests/TEST.rs.
    path="$(cargo test -p pi-hooks-tests --test "$test" --no-run --message-format=json 2>/dev/null |
        node -e '
            const want = process.argv[1];
            let found = "";
            for (const line of require("fs").readFileSync(0, "utf8").split("\n")) {
                if (!line.startsWith("{")) continue;
                const m = JSON.parse(line);
                if (m.reason === "compiler-artifact" && m.target.name === want && m.executable) found = m.executable;
            }
            process.stdout.write(found);
        ' "$test")"
    if [ -z "$path" ]; then
        echo "bench-tests: no test binary for tests/tests/$test.rs (cargo test -p pi-hooks-tests --test $test --no-run failed?)" >&2
        exit 1
    fi
    binary[$test]="$path"
done

declare -A times=()
for round in $(seq 1 "$rounds"); do
    for test in "$@"; do
        start=$(date +%s.%N)
        if (cd "$root/tests" && "${binary[$test]}" >/dev/null 2>&1); then
            result=ok
        else
            result=FAILED
        fi
        seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
        times[$test]+="$seconds "
        printf 'round %d  %-28s %8.2f s  (%s)\n' "$round" "$test" "$seconds" "$result"
    done
done
for test in "$@"; do
    # shellcheck disable=SC2086
    median=$(printf '%s\n' ${times[$test]} | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
    printf 'median %-28s %8.2f s  (of %d rounds)\n' "$test" "$median" "$rounds"
done
