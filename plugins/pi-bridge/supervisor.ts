// Keeps one `pi-hooks serve` child running for the bridge: starts it, and when it dies
// without being asked (a native plugin crashed) reports that once in pi's UI, marks the
// native plugins down (tool calls fail closed meanwhile, see events.ts) and restarts the
// child with backoff. A restarted child gets the flag values and a `session_start` with
// reason "reload", so its plugins rebuild their state from the session's entries.

import type { ExtensionContext } from "@mariozechner/pi-coding-agent";
import type { PiSide } from "./client-requests.ts";
import { type Crash, type Hello, ServeClient } from "./serve-client.ts";

/** The first wait before a restart; doubled after each crash, up to `MAX_DELAY_MS`. */
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 10_000;
/** A child that ran this long without crashing resets the backoff and the report. */
const STABLE_MS = 30_000;

/** pi's `ctx.mode` (pi 0.78.1 and later; 1.6: `"tui" | "rpc" | "json" | "print"`) as the
 * `PI_MODE_*` native plugins read in `context->mode`. */
const PI_MODES: Record<string, number> = { print: 1, json: 2, rpc: 3, tui: 4 };

/** The context serve applies before a request (docs/serve-protocol.md, "context"): the
 * session file, whether there is a UI, and the mode pi runs in. A pi without `ctx.mode`
 * (0.73.1) sends none, and serve derives it from `hasUI` (RPC with a UI, print without). */
export function contextOf(ctx: ExtensionContext): { sessionFile: string | null; hasUI: boolean; mode?: number } {
	const context: { sessionFile: string | null; hasUI: boolean; mode?: number } = { sessionFile: ctx.sessionManager.getSessionFile() ?? null, hasUI: ctx.hasUI };
	const mode = (ctx as { mode?: unknown }).mode;
	if (typeof mode === "string" && mode in PI_MODES) context.mode = PI_MODES[mode];
	return context;
}

/** Shows a line to pi's user: a notification where pi has a UI (its TUI, an RPC client), on
 * stderr in pi's print and JSON modes, where `ctx.ui.notify` shows nothing; there with
 * control, bidirectional and invisible characters (from a plugin's text) made visible as
 * `pi_hooks_host::guards::display::escape` does, so none reaches the terminal. */
export function tell(ctx: ExtensionContext | undefined, message: string, level: "info" | "warning" | "error"): void {
	if (ctx?.hasUI) ctx.ui.notify(message, level);
	else process.stderr.write(`${escapeForTerminal(message)}\n`);
}

/** `text` with every control character (C0, DEL, C1) and every bidirectional or invisible
 * format character written as a visible escape (`\n`, `\r`, `\t`, `\e`, `\u{202e}`). */
export function escapeForTerminal(text: string): string {
	return text.replace(/[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g, (c) => {
		switch (c) {
			case "\n":
				return "\\n";
			case "\r":
				return "\\r";
			case "\t":
				return "\\t";
			case "\u001b":
				return "\\e";
			default:
				return `\\u{${c.charCodeAt(0).toString(16)}}`;
		}
	});
}

/** The load problems, warnings and untrusted plugins a `hello` names, as lines for pi's user,
 * each once: `loadMessages` already holds every error of `errors` (as `Failed to load plugin
 * "PATH": ERROR`), so `errors` is read only from a serve that sends no `loadMessages`, and a
 * line repeated is said once. */
export function problemsOf(hello: Hello): string[] {
	const lines = hello.loadMessages ?? hello.errors.map((e) => `Failed to load plugin "${e.path}": ${e.error}`);
	return [...new Set(lines)];
}

export class Supervisor {
	private client: ServeClient | undefined;
	/** Why the native plugins are unavailable now (`undefined`: they run). */
	down: string | undefined;
	private delay = FIRST_DELAY_MS;
	private reported = false;
	private stopped = false;
	private startedAt = 0;
	/** The native plugins' flag values as pi parsed them (read at each session start and
	 * sent again to a restarted child). */
	flagValues: () => Record<string, boolean | string> = () => ({});
	/** The load problems already said to pi's user (each is said once, however often a
	 * restarted child names it again). */
	private said = new Set<string>();
	/** pi's project-trust decision as serve was started with it (`PI_HOOKS_PROJECT_TRUST`:
	 * "yes" or "no"; `undefined`: none given, serve reads pi's saved decision itself). */
	projectTrust: "yes" | "no" | undefined;

	constructor(
		private bin: string,
		private args: string[],
		private side: PiSide,
	) {}

	/** Starts the child and waits for its `hello`. */
	async start(): Promise<Hello> {
		const client = new ServeClient(
			this.bin,
			this.args,
			(method, params) => this.side.answer(method, params),
			(line) => this.notice(line),
			this.projectTrust === undefined ? {} : { PI_HOOKS_PROJECT_TRUST: this.projectTrust },
		);
		this.client = client;
		this.startedAt = Date.now();
		client.exited.then((crash) => this.exited(client, crash));
		return client.hello;
	}

	/** Says each of the load problems `lines` not said before, as a warning (on stderr in
	 * pi's print and JSON modes, where there is no UI): a native plugin that should guard
	 * but did not load must not go unseen, nor be said twice. */
	sayProblems(ctx: ExtensionContext | undefined, lines: string[]): void {
		for (const line of lines) {
			if (this.said.has(line)) continue;
			this.said.add(line);
			tell(ctx, `pi-hooks: ${line}`, "warning");
		}
	}

	/** A request to the running child; rejects with the reason while it is down. */
	request(type: string, fields: Record<string, unknown>, what: string, onUpdate?: (partial: unknown) => void): Promise<any> {
		if (this.down || !this.client) return Promise.reject(new Error(this.down ?? "pi-hooks serve is not running"));
		return this.client.request(type, fields, what, onUpdate);
	}

	/** The transport to the running child (`undefined`: none runs). */
	get transport(): "pipe" | "ring" | undefined {
		return this.client?.transport;
	}

	/** Tells the running child a request is likely soon (the ring transport only). */
	getReady(): void {
		if (!this.down) this.client?.getReady();
	}

	/** Sends the flag values pi parsed. */
	async sendFlags(): Promise<void> {
		const values = this.flagValues();
		if (Object.keys(values).length > 0) await this.request("flags", { values }, "flags");
	}

	/** Starts the child again with pi's project-trust decision `trust` (a project pi does
	 * not trust runs no project native plugin) and sends it the flag values; the new
	 * `hello`. The old child is stopped first: its plugins' state is not carried over (this
	 * happens before the session starts, so there is none yet). */
	async restartWithTrust(trust: "yes" | "no"): Promise<Hello> {
		this.projectTrust = trust;
		const old = this.client;
		this.client = undefined;
		old?.stop();
		const hello = await this.start();
		this.down = undefined;
		await this.sendFlags();
		return hello;
	}

	/** Stops the child for good (pi's session ends or reloads). */
	stop(): void {
		this.stopped = true;
		this.client?.stop();
	}

	private notice(line: any): void {
		if (line.type === "notification") {
			this.side.notice(line.method, line.params ?? {});
		} else if (line.type === "extension_error") {
			tell(this.side.ctx, `Extension error (${line.extensionPath}): ${line.error}`, "error");
		}
	}

	private exited(client: ServeClient, crash: Crash | undefined): void {
		if (client !== this.client || !crash || this.stopped) return;
		if (Date.now() - this.startedAt > STABLE_MS) {
			this.delay = FIRST_DELAY_MS;
			this.reported = false;
		}
		const what = crash.how.startsWith("SIG") ? `crashed (${crash.how})` : `exited (${crash.how})`;
		this.down = `native plugins unavailable: pi-hooks serve ${what} while handling ${crash.during}; restarting it`;
		if (!this.reported) {
			this.reported = true;
			const last = crash.stderr.length > 0 ? ` Last output: ${crash.stderr.slice(-3).join(" | ")}` : "";
			tell(this.side.ctx, `pi-hooks: serve ${what} while handling ${crash.during}; restarting in ${this.delay} ms.${last}`, "error");
		}
		const wait = this.delay;
		this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
		setTimeout(() => void this.restart(), wait).unref();
	}

	private async restart(): Promise<void> {
		if (this.stopped) return;
		try {
			const hello = await this.start();
			this.down = undefined;
			await this.sendFlags();
			const ctx = this.side.ctx;
			// A plugin the restarted child could not load (it crashed at its load, say) is
			// said, as at the start; one said before is not said again.
			this.sayProblems(ctx, problemsOf(hello));
			if (ctx) {
				await this.request("event", { name: "session_start", payload: { reason: "reload" }, context: contextOf(ctx) }, "session_start");
				tell(ctx, "pi-hooks: native plugins restarted", "info");
			}
		} catch {
			// A child that died before it was up is rescheduled by `exited`; one that could
			// not even be spawned (the binary went away) is tried again from here.
			if (!this.stopped && this.client && !this.client.spawned) {
				this.down ??= "native plugins unavailable: pi-hooks serve could not be started";
				const wait = this.delay;
				this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
				setTimeout(() => void this.restart(), wait).unref();
			}
		}
	}
}
