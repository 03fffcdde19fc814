// One `turn_end` of pi 1.6's shape through `pi-hooks serve`, as the pi bridge sends it
// (plugins/pi-bridge/events.ts `payloadFor`, imported as it is: node 22 strips its types):
// with the whole `context` preview (what pi gives the bridge, and what it sent before issue
// 33's item 7) and cut down to `{canContinue}` (what it sends now). Times the round trip from
// the bridge's JSON.stringify of the request to serve's result, per payload size.
//
// Usage: node bench.mjs --pi-hooks PATH --plugin LIB [--sizes 0.1,1,8] [--rounds 30]
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { payloadFor } from "../../plugins/pi-bridge/events.ts";

const args = Object.fromEntries(
	process.argv.slice(2).reduce((pairs, arg, i, all) => (arg.startsWith("--") ? [...pairs, [arg.slice(2), all[i + 1]]] : pairs), []),
);
const sizes = (args.sizes ?? "0.1,1,8").split(",").map(Number);
const rounds = Number(args.rounds ?? 30);

/** A message of about 2 KB of text, as a session's user and assistant messages are. */
function message(i) {
	const text = `message ${i}: ${"lorem ipsum dolor sit amet ".repeat(75)}`;
	return i % 2 === 0
		? { role: "user", content: [{ type: "text", text }], timestamp: 1_700_000_000_000 + i }
		: { role: "assistant", content: [{ type: "text", text }], api: "openai-completions", provider: "fake", model: "fake-model", usage: { input: 10, output: 10, cacheRead: 0, cacheWrite: 0, totalTokens: 20, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } }, stopReason: "stop", timestamp: 1_700_000_000_000 + i };
}

/** pi 1.6's turn_end (`TurnEndEvent`: BoundaryState plus the turn's fields) whose context
 * preview holds `count` messages three times (entries, messages, LLM messages). */
function turnEnd(count) {
	const messages = Array.from({ length: count }, (_, i) => message(i));
	const entries = messages.map((m, i) => ({ type: "message", id: `e${i}`, parentId: i ? `e${i - 1}` : null, timestamp: "2026-11-27T00:00:00.000Z", message: m }));
	return {
		type: "turn_end",
		turnIndex: 3,
		message: messages.at(-1),
		toolResults: [],
		messageEntryId: `e${count - 1}`,
		toolResultEntryIds: [],
		entries: [],
		continue: false,
		context: { contextEntries: entries, contextMessages: messages, llmMessages: messages, pendingMessages: [], canContinue: false },
		outcome: "completed",
	};
}

const child = spawn(args["pi-hooks"], ["serve", "--no-hooks", "-e", args.plugin], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: child.stdout });
const waiting = new Map();
let hello;
const helloSeen = new Promise((resolve) => (hello = resolve));
lines.on("line", (text) => {
	const line = JSON.parse(text);
	if (line.type === "hello") return hello(line);
	if (line.type === "result" || line.type === "error") waiting.get(line.id)?.(line);
});
const seen = await helloSeen;
if (!seen.plugins.some((p) => p.events.includes("turn_end"))) throw new Error(`the plugin does not subscribe to turn_end: ${JSON.stringify(seen)}`);

let id = 0;
/** One bridge-side request: payloadFor, stringify, write, wait for the result. */
function roundTrip(event, whole) {
	const request = ++id;
	const start = process.hrtime.bigint();
	return new Promise((resolve, reject) => {
		waiting.set(request, (line) => {
			waiting.delete(request);
			if (line.type === "error") reject(new Error(line.error));
			else resolve(Number(process.hrtime.bigint() - start) / 1e6);
		});
		const payload = payloadFor(event, whole);
		child.stdin.write(`${JSON.stringify({ type: "event", id: request, name: "turn_end", payload, context: { sessionFile: null, hasUI: false } })}\n`);
	});
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log("| turn_end payload | messages | whole context: median ms | cut to {canContinue}: median ms | bytes sent whole / cut |");
console.log("|---|---|---|---|---|");
for (const mb of sizes) {
	// About 6 KB of JSON per message (three copies of 2 KB).
	const count = Math.max(1, Math.round((mb * 1_000_000) / 6_300));
	const event = turnEnd(count);
	const bytes = (whole) => JSON.stringify(payloadFor(event, whole)).length;
	// Each form on its own (3 rounds of warm-up), so that freeing one form's payload in serve
	// after its answer never lands in the other form's time.
	const times = { true: [], false: [] };
	for (const whole of [true, false]) {
		for (let r = 0; r < rounds + 3; r++) {
			const ms = await roundTrip(event, whole);
			if (r >= 3) times[whole].push(ms);
		}
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
	console.log(`| ${(bytes(true) / 1e6).toFixed(2)} MB | ${count} | ${median(times.true).toFixed(2)} | ${median(times.false).toFixed(2)} | ${bytes(true)} / ${bytes(false)} |`);
}
child.stdin.end();
