#!/usr/bin/env python3
"""Time from spawning `pi-hooks rpc` to the response of its first `get_state`, with 0 and with
50 trivial plugins (BENCHMARKS.md section 5; pi 0.73.1 itself needs about 570 ms to start).

Usage: python3 scripts/bench-rpc-start.py [ROUNDS]     (default 60 rounds, interleaved)

Builds the release binary if needed (cargo build --release), compiles
loader/host/benches/fixtures/trivial.c 50 times into a temporary folder, then runs both cases in
turn with a private HOME and prints the medians and p10/p90 in milliseconds.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "pi-hooks")


def build(work):
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "pi-hooks"], cwd=ROOT, check=True)
    libs = []
    for i in range(50):
        out = os.path.join(work, f"libtrivial_{i:02}.so")
        subprocess.run(
            ["cc", "-std=c11", "-O2", "-shared", "-fPIC", "-I", os.path.join(ROOT, "include"),
             f'-DPLUGIN_NAME="trivial-{i:02}"', "-o", out,
             os.path.join(ROOT, "loader", "benches", "fixtures", "trivial.c")],
            check=True)
        libs.append(out)
    return libs


def first_state(args, env, cwd):
    """Milliseconds from spawn to the first line that answers get_state."""
    start = time.perf_counter()
    child = subprocess.Popen([BIN, "rpc", "--no-session"] + args, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    child.stdin.write(b'{"id":"1","type":"get_state"}\n')
    child.stdin.flush()
    for line in child.stdout:
        if b'"command":"get_state"' in line:
            elapsed = (time.perf_counter() - start) * 1000
            break
    else:
        raise SystemExit("pi-hooks rpc ended without answering get_state")
    child.stdin.close()
    child.wait(timeout=10)
    return elapsed


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    with tempfile.TemporaryDirectory() as work:
        libs = build(work)
        home = os.path.join(work, "home")
        project = os.path.join(work, "project")
        os.makedirs(os.path.join(home, ".pi", "agent"))
        os.makedirs(project)
        env = dict(os.environ, HOME=home)
        env.pop("PI_CODING_AGENT_DIR", None)
        hooks = [arg for lib in libs for arg in ("--hook", lib)]
        cases = {"0 plugins": [], "50 plugins": hooks}
        for args in cases.values():  # warm-up
            first_state(args, env, project)
        times = {name: [] for name in cases}
        for _ in range(rounds):
            for name, args in cases.items():
                times[name].append(first_state(args, env, project))
        print(f"pi-hooks rpc: spawn -> get_state response, {rounds} interleaved rounds, "
              f"load average {os.getloadavg()[0]:.2f}")
        print("| case | median ms | p10 ms | p90 ms |")
        print("|---|---|---|---|")
        for name, values in times.items():
            deciles = statistics.quantiles(values, n=10)
            print(f"| {name} | {statistics.median(values):.2f} | {deciles[0]:.2f} | {deciles[-1]:.2f} |")


if __name__ == "__main__":
    main()
