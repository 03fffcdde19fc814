// pi's `tool_call` dispatch, for the side-by-side figures in BENCHMARKS.md: the time of one
// awaited `runner.emitToolCall(event)` on pi's real `ExtensionRunner` (pi 0.73.1,
// dist/core/extensions/runner.js) holding H trivial `tool_call` handlers. The handlers come
// from H trivial TypeScript extensions (one handler each, returning nothing) loaded through
// pi's own `loadExtensions`, as pi loads them; H = 0 is the runner with no extension.
//
// Method (that of the notes behind BENCHMARKS.md's pi column, with runs of 100k calls where
// they had 200k, to keep scripts/bench-pi.sh short): each (H, process) is a fresh
// node process, so one case's JIT state does not leak into another's. In it, `warmup` awaited
// calls, then `repeats` timed runs of `calls` awaited calls each, one after the other; the
// process reports the median ns/event of its runs. A case's figure is the median of its
// processes' medians (min and max of those are printed too). Processes of all cases are
// interleaved, so drift in the machine's load spreads over every case.
// The event is built once: {type:"tool_call", toolName:"bash", toolCallId:"toolu_bench_0001",
// input:{command:"echo hi"}}.
//
// Usage: node scripts/pi-peer/bench-dispatch.mjs [--handlers 0,1,10] [--processes 3]
//            [--repeats 9] [--calls 100000] [--warmup 20000]
// Prints one JSON line per case, e.g.
//   {"bench":"pi_tool_call","handlers":10,"median_ns":..,"min_ns":..,"max_ns":..,"processes":3,...}
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import {
    PI_VERSION,
    checkLoaded,
    checkPiInstalled,
    countToolCallHandlers,
    fail,
    piRunner,
    median,
    parseArgs,
    requirePositive,
    round,
    runChild,
    scratchDir,
    writeTrivialExtensions,
} from "./common.mjs";

const script = fileURLToPath(import.meta.url);
const usage =
    "usage: node scripts/pi-peer/bench-dispatch.mjs [--handlers 0,1,10] [--processes 3] [--repeats 9] [--calls 100000] [--warmup 20000]";

/** One process: load `count` extensions, build the runner, time `emitToolCall`. */
async function child(opts) {
    const cwd = process.cwd();
    const paths = fs
        .readdirSync(opts.dir)
        .filter((name) => name.endsWith(".ts"))
        .sort()
        .slice(0, opts.count)
        .map((name) => path.join(opts.dir, name));
    if (paths.length !== opts.count) fail(`${opts.dir} holds ${paths.length} extensions, expected ${opts.count}`);

    const { runner, loaded } = await piRunner(paths, cwd);
    checkLoaded(loaded, opts.count);
    if (runner.hasHandlers("tool_call") !== opts.count > 0) {
        fail(`runner.hasHandlers("tool_call") is ${runner.hasHandlers("tool_call")} with ${opts.count} handlers`);
    }

    const event = { type: "tool_call", toolName: "bash", toolCallId: "toolu_bench_0001", input: { command: "echo hi" } };
    const first = await runner.emitToolCall(event);
    if (first !== undefined) fail(`emitToolCall returned ${JSON.stringify(first)}, expected undefined (handlers return nothing)`);

    for (let i = 0; i < opts.warmup; i++) await runner.emitToolCall(event);
    const runs = [];
    for (let r = 0; r < opts.repeats; r++) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < opts.calls; i++) await runner.emitToolCall(event);
        const t1 = process.hrtime.bigint();
        runs.push(Number(t1 - t0) / opts.calls);
    }
    console.log(JSON.stringify({ handlers: countToolCallHandlers(loaded.extensions), median_ns: median(runs), runs_ns: runs }));
}

function parent(opts) {
    checkPiInstalled();
    const root = scratchDir("pi-peer-dispatch-");
    const extDir = path.join(root, "extensions");
    const project = path.join(root, "project");
    fs.mkdirSync(project);
    writeTrivialExtensions(extDir, Math.max(...opts.handlers));
    // A private TMPDIR (jiti's transpile cache) and agent dir: nothing of the user's is touched.
    const env = { PI_CODING_AGENT_DIR: path.join(root, "agent"), TMPDIR: path.join(root, "tmp") };
    fs.mkdirSync(env.TMPDIR);

    const cases = opts.handlers.map((handlers) => ({ handlers, medians: [] }));
    for (let p = 0; p < opts.processes; p++) {
        for (const c of cases) {
            const args = ["--child", "--dir", extDir, "--count", String(c.handlers)];
            for (const name of ["repeats", "calls", "warmup"]) args.push(`--${name}`, String(opts[name]));
            const r = runChild(script, args, env, project);
            if (r.handlers !== c.handlers) fail(`a child ran with ${r.handlers} handlers, expected ${c.handlers}`);
            c.medians.push(r.median_ns);
        }
    }
    for (const c of cases) {
        console.log(
            JSON.stringify({
                bench: "pi_tool_call",
                handlers: c.handlers,
                median_ns: round(median(c.medians), 0),
                min_ns: round(Math.min(...c.medians), 0),
                max_ns: round(Math.max(...c.medians), 0),
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
    { handlers: [0, 1, 10], processes: 3, repeats: 9, calls: 100000, warmup: 20000, child: false, dir: "", count: 0 },
    usage,
);
if (opts.child) {
    await child(opts);
} else {
    if (opts.handlers.length === 0) fail(`--handlers needs at least one count\n${usage}`);
    requirePositive(opts, ["processes", "repeats", "calls"], usage);
    parent(opts);
}
