// pi-hooks bridge: runs pi-hooks native plugins (`.so` / `.dylib` / `.dll`) inside pi.
//
// pi loads this extension; it spawns `pi-hooks serve` (found through $PI_HOOKS_BIN, then
// the `pi-hooks.json` that `pi-hooks bridge install` writes beside this file, then the
// prebuilt binary of the npm package it came in, then PATH),
// which discovers and loads the native plugins as pi-hooks does (`~/.pi/agent/extensions`
// and the project's `.pi/extensions`, where pi passes over `.so` files; the `hooks` folders
// too, though pi stops at start-up while one exists; trust rules included; the native
// packages in pi's `packages`, wherever pi or pi-hooks installed them) and speaks the serve protocol (docs/serve-protocol.md in the pi-hooks
// repository). The bridge subscribes in pi to exactly the events the native plugins want,
// forwards each and applies serve's decision, registers their commands, tools, flags and
// message renderers, and answers their UI and session calls with pi's own API.
//
// pi's /reload, /new, /resume and /fork create a new instance of this extension: the old
// one forwards `session_shutdown` and stops its child, the new one starts a fresh child
// that loads the plugins' current builds.
//
// Uses nothing beyond node and what pi ships.

import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { Text } from "@mariozechner/pi-tui";
import { PiSide } from "./client-requests.ts";
import { applyHeaders, applyToolInput, type BashOperations, decisionFor, payloadFor, setLocalBash, whileDown } from "./events.ts";
import type { Hello } from "./serve-client.ts";
import { contextOf, problemsOf, Supervisor } from "./supervisor.ts";

/** Appends a start-up mark (`{"mark", "at_ms", "pid"}`, ms since this process started) to the
 * file PI_HOOKS_BRIDGE_MARKS names, for scripts/bench-pi-start.sh; nothing without it. */
function mark(what: string): void {
	const file = process.env.PI_HOOKS_BRIDGE_MARKS;
	if (!file) return;
	try {
		appendFileSync(file, `${JSON.stringify({ mark: what, at_ms: Math.round(performance.now() * 10) / 10, pid: process.pid })}\n`);
	} catch {
		// A mark that cannot be written is not worth failing pi's start for.
	}
}
mark(`bridge module evaluated (${__filename})`);

/** The npm package's binary lookup (platform-binary.cjs), loaded through jiti's require. */
const platformBinary: {
	findBinary(root: string): string;
	isPiHooksPackage(root: string): boolean;
} = require("./platform-binary.cjs");

/** Where `pi-hooks` is: $PI_HOOKS_BIN, the installed `pi-hooks.json`, the prebuilt binary of
 * the npm package this bridge came in (`pi install npm:pi-hooks`, or a native package that
 * depends on it), or PATH. */
function serveBinary(): string {
	if (process.env.PI_HOOKS_BIN) return process.env.PI_HOOKS_BIN;
	// pi loads extensions through jiti, as CommonJS: __dirname is this file's folder.
	const config = join(__dirname, "pi-hooks.json");
	if (existsSync(config)) {
		try {
			const bin = JSON.parse(readFileSync(config, "utf8")).bin;
			if (typeof bin === "string" && bin.length > 0) return bin;
		} catch (error) {
			throw new Error(`pi-hooks bridge: ${config} is not valid JSON (${(error as Error).message}); run "pi-hooks bridge install" again`);
		}
	}
	const npmPackage = dirname(__dirname);
	if (platformBinary.isPiHooksPackage(npmPackage)) {
		try {
			return platformBinary.findBinary(npmPackage);
		} catch (error) {
			throw new Error(`pi-hooks bridge: ${(error as Error).message}`);
		}
	}
	return "pi-hooks";
}

/** Where the bridge that runs in this pi process is kept, for every copy of the bridge pi
 * loads: one per native package installed from npm (each depends on the `pi-hooks` package),
 * the `pi-hooks` package itself, a bridge put in place by `pi-hooks bridge install`. The
 * first to load starts the one `pi-hooks serve`, which loads the native plugins of every
 * package in pi's settings; the others find it here and do nothing. It is cleared when its
 * session ends (pi's /reload, /new, /resume and /fork load the extensions again). */
const ACTIVE = Symbol.for("pi-hooks.bridge");

/** Whether the bridge held in `globalThis` belongs to pi's current extensions (pi marks the
 * API of the ones a reload or a session switch replaced as stale: its calls throw). */
function runningBridge(): boolean {
	const active = (globalThis as any)[ACTIVE] as { pi: ExtensionAPI } | undefined;
	if (!active) return false;
	try {
		active.pi.getFlag("pi-hooks-bridge-probe");
		return true;
	} catch {
		return false;
	}
}

/** pi's local shell (`createLocalBashOperations`, in pi 0.73.1 and 1.6), which runs a native
 * `user_bash` rewrite (events.ts); `undefined` in a pi without it. pi's own module (aliased to
 * the running pi by its extension loader: 0.73.1, and 1.6 under the old name too) is imported
 * only here, when a native plugin wants `user_bash`: loading it through pi's loader costs a pi
 * start tens of milliseconds. */
async function piLocalBash(): Promise<(() => BashOperations) | undefined> {
	// (A name typed as a string: TypeScript resolves this dynamic import as ESM, where pi's
	// declarations are not found; pi's loader resolves it as the static import it was.)
	const piCodingAgent: unknown = await import("@mariozechner/pi-coding-agent" as string);
	const make = (piCodingAgent as { createLocalBashOperations?: unknown }).createLocalBashOperations;
	return typeof make === "function" ? () => make() : undefined;
}

export default async function piHooksBridge(pi: ExtensionAPI): Promise<void> {
	mark("bridge factory entered");
	if (runningBridge()) return;
	setLocalBash(undefined);
	const active = { pi };
	(globalThis as any)[ACTIVE] = active;
	const release = () => {
		if ((globalThis as any)[ACTIVE] === active) delete (globalThis as any)[ACTIVE];
	};
	const side = new PiSide(pi);
	let supervisor: Supervisor | undefined;
	let hello: Hello;
	try {
		supervisor = new Supervisor(serveBinary(), ["--cwd", process.cwd()], side);
		supervisor.projectTrust = trustOnCommandLine(process.argv);
		const started = supervisor.start();
		mark("serve spawned");
		hello = await started;
		mark(`serve's hello received (${hello.plugins.length} plugins)`);
		if (hello.plugins.some((plugin) => plugin.events.includes("user_bash"))) setLocalBash(await piLocalBash().catch(() => undefined));
	} catch (error) {
		// No restarts for a bridge that did not load.
		supervisor?.stop();
		release();
		const message = (error as Error).message;
		throw new Error(
			message.startsWith("pi-hooks bridge:")
				? message
				: `pi-hooks bridge: ${message}. Install pi-hooks ("pi install npm:pi-hooks", or from source and "pi-hooks bridge install"), or set PI_HOOKS_BIN to the pi-hooks binary.`,
		);
	}
	registerEvents(pi, side, supervisor, hello, release);
	registerCommands(pi, side, supervisor, hello);
	registerTools(pi, side, supervisor, hello);
	registerFlags(pi, supervisor, hello);
	registerRenderers(pi, supervisor, hello);
	mark("bridge registered its handlers");
}

/** pi's `--approve` / `-a` ("yes") or `--no-approve` / `-na` ("no") on its command line (pi
 * 0.79+), which decide project trust before anything else; `undefined` when neither is given.
 * The last one given wins, as in pi's argument parser. */
function trustOnCommandLine(argv: string[]): "yes" | "no" | undefined {
	let trust: "yes" | "no" | undefined;
	for (const arg of argv.slice(2)) {
		if (arg === "--") break;
		if (arg === "--approve" || arg === "-a") trust = "yes";
		else if (arg === "--no-approve" || arg === "-na") trust = "no";
	}
	return trust;
}

function registerEvents(pi: ExtensionAPI, side: PiSide, supervisor: Supervisor, hello: Hello, release: () => void): void {
	// How many native plugins want each event (before_agent_start takes one message per
	// pi handler, so it gets one bridge handler per plugin).
	const wanted = new Map<string, number>();
	for (const plugin of hello.plugins) {
		for (const event of plugin.events) wanted.set(event, (wanted.get(event) ?? 0) + 1);
	}
	const problems = problemsOf(hello);
	// The result of the event's first bridge handler, for its later ones (before_agent_start).
	const shared = new Map<string, Promise<any>>();

	const forward = async (name: string, index: number, event: any, ctx: ExtensionContext): Promise<unknown> => {
		side.ctx = ctx;
		if (index > 0) return decisionFor(name, await shared.get(name), index);
		if (supervisor.down) {
			shared.set(name, Promise.resolve(null));
			return whileDown(name, supervisor.down);
		}
		const request = supervisor.request("event", { name, payload: payloadFor(event), context: contextOf(ctx) }, name);
		shared.set(
			name,
			request.catch(() => null),
		);
		try {
			const result = await request;
			if (name === "tool_call") applyToolInput(event, result);
			if (name === "before_provider_headers") applyHeaders(event, result);
			return decisionFor(name, result, 0);
		} catch (error) {
			// A tool call the native plugins could not judge does not run.
			if (name === "tool_call") return { block: true, reason: (error as Error).message };
			throw error;
		}
	};

	// The bridge itself needs the session's start (flags, load problems) and end (its child).
	pi.on("session_start", async (event, ctx) => {
		mark("session_start");
		side.ctx = ctx;
		// pi 1.6 decides project trust after the extensions' factories ran (its `project_trust`
		// event, its prompt, trust.json, defaultProjectTrust): serve was started before that.
		// A project pi did not trust runs no project native plugin, so serve starts again with
		// pi's "no" (pi's "yes" leaves the decision to pi-hooks' own pin, as no decision does).
		const trusted = (ctx as { isProjectTrusted?: () => boolean }).isProjectTrusted?.();
		if (trusted === false && supervisor.projectTrust !== "no") {
			try {
				const again = await supervisor.restartWithTrust("no");
				problems.splice(0, problems.length, ...problemsOf(again));
			} catch (error) {
				problems.push(`native plugins unavailable: ${(error as Error).message}`);
			}
		}
		// Shown in every mode: a plugin that did not load (a guard missing) must not go unseen.
		supervisor.sayProblems(ctx, problems.splice(0));
		await supervisor.sendFlags();
		if (wanted.has("session_start")) await forward("session_start", 0, event, ctx);
	});
	pi.on("session_shutdown", async (event, ctx) => {
		try {
			if (wanted.has("session_shutdown")) await forward("session_shutdown", 0, event, ctx);
		} finally {
			supervisor.stop();
			release();
		}
	});
	// A tool call comes after the model's silence, when serve's reader sleeps: as soon as the
	// model has finished a tool call's arguments (the stream's `toolcall_end`), serve is told
	// to get ready, so the `tool_call` that follows finds its reader awake (the ring
	// transport; as pi-hooks' own agent does for an isolated plugin).
	if (wanted.has("tool_call") && supervisor.transport === "ring") {
		pi.on("message_update", (event: any) => {
			if (event?.assistantMessageEvent?.type === "toolcall_end") supervisor.getReady();
		});
	}
	for (const [name, count] of wanted) {
		if (name === "session_start" || name === "session_shutdown") continue;
		const handlers = name === "before_agent_start" ? count : 1;
		for (let index = 0; index < handlers; index++) {
			(pi.on as any)(name, (event: any, ctx: ExtensionContext) => forward(name, index, event, ctx));
		}
	}
}

function registerCommands(pi: ExtensionAPI, side: PiSide, supervisor: Supervisor, hello: Hello): void {
	const seen = new Set<string>();
	for (const plugin of hello.plugins) {
		for (const command of plugin.commands) {
			if (seen.has(command.name)) continue;
			seen.add(command.name);
			pi.registerCommand(command.name, {
				description: command.description,
				getArgumentCompletions:
					command.completions === false
						? undefined
						: async (prefix: string) => {
								try {
									const found = await supervisor.request("completions", { name: command.name, prefix }, `completions of /${command.name}`);
									return found.items ?? null;
								} catch {
									return null;
								}
							},
				handler: async (args, ctx) => {
					side.ctx = ctx;
					side.commandCtx = ctx;
					try {
						await supervisor.request("command", { name: command.name, args, context: contextOf(ctx) }, `command /${command.name}`);
					} finally {
						side.commandCtx = undefined;
					}
					// Session operations the command asked for run once it returned.
					await side.runDeferred();
				},
			});
		}
	}
}

function registerTools(pi: ExtensionAPI, side: PiSide, supervisor: Supervisor, hello: Hello): void {
	for (const plugin of hello.plugins) {
		for (const tool of plugin.tools) {
			pi.registerTool({
				name: tool.name,
				label: tool.label || tool.name,
				description: tool.description ?? "",
				parameters: tool.parameters as any,
				async execute(toolCallId, params, _signal, onUpdate, ctx) {
					side.ctx = ctx;
					const result = await supervisor.request(
						"tool",
						{ name: tool.name, toolCallId, params, context: contextOf(ctx) },
						`tool ${tool.name}`,
						(partial) => onUpdate?.(partial as any),
					);
					const content = result?.content ?? [];
					if (result?.isError) {
						throw new Error(content.map((c: any) => (c.type === "text" ? c.text : "")).join("\n") || `${tool.name} failed`);
					}
					return { content, details: result?.details };
				},
			});
		}
	}
}

function registerFlags(pi: ExtensionAPI, supervisor: Supervisor, hello: Hello): void {
	const names: string[] = [];
	for (const plugin of hello.plugins) {
		for (const flag of plugin.flags) {
			if (names.includes(flag.name)) continue;
			names.push(flag.name);
			// pi 1.6 types the options by kind and rejects a default of the other type.
			const options =
				flag.type === "boolean"
					? { type: "boolean" as const, description: flag.description, default: typeof flag.default === "boolean" ? flag.default : undefined }
					: { type: "string" as const, description: flag.description, default: typeof flag.default === "string" ? flag.default : undefined };
			pi.registerFlag(flag.name, options);
		}
	}
	// pi parses extension flags after loading: they are read when the session starts.
	supervisor.flagValues = () => {
		const values: Record<string, boolean | string> = {};
		for (const name of names) {
			const value = pi.getFlag(name);
			if (value !== undefined) values[name] = value;
		}
		return values;
	};
}

function registerRenderers(pi: ExtensionAPI, supervisor: Supervisor, hello: Hello): void {
	// pi renders synchronously; serve answers over a pipe. A message's lines are asked for
	// once and drawn from the next redraw on (the message's text until then).
	const cache = new Map<string, string[] | null>();
	const types = new Set(hello.plugins.flatMap((p) => p.renderers));
	for (const customType of types) {
		pi.registerMessageRenderer(customType, (message: any, options) => {
			const key = `${customType}\u0000${message.timestamp}\u0000${options.expanded}`;
			if (!cache.has(key)) {
				cache.set(key, null);
				supervisor
					.request("render", { message, expanded: options.expanded }, `render of ${customType}`)
					.then((found) => cache.set(key, found?.lines ?? null))
					.catch(() => {});
			}
			const fallback = typeof message.content === "string" ? message.content : "";
			return {
				render: (width: number) => new Text(cache.get(key)?.join("\n") ?? fallback, 0, 0).render(width),
				invalidate: () => {},
			} as any;
		});
	}
}
