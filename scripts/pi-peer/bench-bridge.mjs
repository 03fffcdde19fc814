// What the pi bridge adds to a gated `tool_call` in pi, for BENCHMARKS.md: the time of one
// awaited `runner.emitToolCall(event)` on pi's real `ExtensionRunner` (pi 0.73.1) holding
// either no extension ("none") or the bridge (plugins/pi-bridge/index.ts) with `pi-hooks serve`
// running one native plugin that subscribes to `tool_call` ("bridge"). Each call through the
// bridge is a real round trip: JSON line to serve over its stdin, the native plugin's handler,
// the decision back over its stdout.
//
// Method as bench-dispatch.mjs: a fresh node process per (case, process); in it `warmup`
// awaited calls, then `repeats` runs of `calls` calls; the process reports the median
// ns/event of its runs; a case's figure is the median of its processes' medians. Processes
// of all cases are interleaved. A third case, "floor", times the same awaited line round
// trip from node to a child that only echoes it (`cat`): what any out-of-process design pays
// on this machine at this moment, to compare the bridge with.
//
// Usage: node scripts/pi-peer/bench-bridge.mjs --pi-hooks PATH --plugin PATH
//            [--processes 3] [--repeats 7] [--calls 5000] [--warmup 1000]
// (scripts/bench-bridge.sh builds both in release mode and runs this.)
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { PI_VERSION, checkPiInstalled, fail, median, piRunner, parseArgs, requirePositive, round, runChild, scratchDir } from "./common.mjs";

const script = fileURLToPath(import.meta.url);
const bridge = path.resolve(path.dirname(script), "../../plugins/pi-bridge/index.ts");
const usage =
    "usage: node scripts/pi-peer/bench-bridge.mjs --pi-hooks PATH --plugin PATH [--processes 3] [--repeats 7] [--calls 5000] [--warmup 1000]";

/** The floor: the same awaited line round trip to a child that only echoes it (`cat`). */
async function floor(opts) {
    const { spawn } = await import("node:child_process");
    const { createInterface } = await import("node:readline");
    const echo = spawn("cat", [], { stdio: ["pipe", "pipe", "inherit"] });
    let waiting;
    createInterface({ input: echo.stdout }).on("line", () => waiting?.());
    const line = `${JSON.stringify({ type: "event", id: 1, name: "tool_call", payload: { toolCallId: "toolu_bench_0001", toolName: "bash", input: { command: "echo hi" } } })}\n`;
    const once = () =>
        new Promise((resolve) => {
            waiting = resolve;
            echo.stdin.write(line);
        });
    for (let i = 0; i < opts.warmup; i++) await once();
    const runs = [];
    for (let r = 0; r < opts.repeats; r++) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < opts.calls; i++) await once();
        runs.push(Number(process.hrtime.bigint() - t0) / opts.calls);
    }
    console.log(JSON.stringify({ case: opts.case, median_ns: median(runs), runs_ns: runs }));
    process.exit(0);
}

async function child(opts) {
    if (opts.case === "floor") return floor(opts);
    const cwd = process.cwd();
    const { runner, loaded } = await piRunner(opts.case === "bridge" ? [bridge] : [], cwd);
    if (loaded.errors.length > 0) fail(`pi's loadExtensions reported errors: ${JSON.stringify(loaded.errors)}`);
    if (runner.hasHandlers("tool_call") !== (opts.case === "bridge")) {
        fail(`runner.hasHandlers("tool_call") is ${runner.hasHandlers("tool_call")} in case ${opts.case}`);
    }
    const event = { type: "tool_call", toolName: "bash", toolCallId: "toolu_bench_0001", input: { command: "echo hi" } };
    const first = await runner.emitToolCall(event);
    if (first !== undefined) fail(`emitToolCall returned ${JSON.stringify(first)}, expected undefined (nothing blocks)`);
    for (let i = 0; i < opts.warmup; i++) await runner.emitToolCall(event);
    const runs = [];
    for (let r = 0; r < opts.repeats; r++) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < opts.calls; i++) await runner.emitToolCall(event);
        runs.push(Number(process.hrtime.bigint() - t0) / opts.calls);
    }
    console.log(JSON.stringify({ case: opts.case, median_ns: median(runs), runs_ns: runs }));
    // The bridge's serve child keeps the event loop alive.
    process.exit(0);
}

function parent(opts) {
    checkPiInstalled();
    if (!opts["pi-hooks"] || !opts.plugin) fail(`--pi-hooks and --plugin are required\n${usage}`);
    const root = scratchDir("pi-peer-bridge-");
    const agent = path.join(root, "agent");
    const project = path.join(root, "project");
    fs.mkdirSync(path.join(agent, "hooks"), { recursive: true });
    fs.mkdirSync(project);
    fs.copyFileSync(opts.plugin, path.join(agent, "hooks", path.basename(opts.plugin)));
    const env = {
        PI_CODING_AGENT_DIR: agent,
        PI_HOOKS_BIN: path.resolve(opts["pi-hooks"]),
        TMPDIR: path.join(root, "tmp"),
    };
    fs.mkdirSync(env.TMPDIR);
    const cases = ["none", "bridge", "floor"].map((name) => ({ name, medians: [] }));
    for (let p = 0; p < opts.processes; p++) {
        for (const c of cases) {
            const args = ["--child", "--case", c.name];
            for (const name of ["repeats", "calls", "warmup"]) args.push(`--${name}`, String(opts[name]));
            c.medians.push(runChild(script, args, env, project).median_ns);
        }
    }
    const none = median(cases[0].medians);
    for (const c of cases) {
        console.log(
            JSON.stringify({
                bench: "pi_bridge_tool_call",
                case: c.name,
                median_ns: round(median(c.medians), 0),
                min_ns: round(Math.min(...c.medians), 0),
                max_ns: round(Math.max(...c.medians), 0),
                added_ns: c.name === "floor" ? undefined : round(median(c.medians) - none, 0),
                processes: opts.processes,
                repeats: opts.repeats,
                calls: opts.calls,
                pi: PI_VERSION,
            }),
        );
    }
}

const opts = parseArgs(
    process.argv.slice(2),
    { "pi-hooks": "", plugin: "", processes: 3, repeats: 7, calls: 5000, warmup: 1000, child: false, case: "" },
    usage,
);
if (opts.child) {
    await child(opts);
} else {
    requirePositive(opts, ["processes", "repeats", "calls"], usage);
    parent(opts);
}
