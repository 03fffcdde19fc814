// The bridge's side of the serve protocol (docs/serve-protocol.md in the pi-hooks
// repository): spawns `pi-hooks serve`, reads its `hello`, sends requests with ids and
// resolves them with `result` / `error` lines, hands `request` and `notification` lines to
// the bridge, and notices when the child dies (a native crash) so the bridge can fail
// closed and restart it.

import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** The `hello` line: what the native plugins registered. */
export interface Hello {
	protocol: number;
	pluginsHost: string;
	plugins: PluginInfo[];
	errors: { path: string; error: string }[];
	loadMessages?: string[];
}

/** One native plugin as `hello` describes it. */
export interface PluginInfo {
	name: string;
	version: string;
	path: string;
	events: string[];
	commands: { name: string; description?: string; completions?: boolean }[];
	tools: { name: string; label?: string; description?: string; parameters: unknown }[];
	flags: { name: string; type: "boolean" | "string"; description?: string; default?: boolean | string | null }[];
	renderers: string[];
}

/** What a `request` line from serve asks; the answer is its result (or a thrown error). */
export type RequestHandler = (method: string, params: any) => Promise<unknown>;

/** A line serve sends that waits for nothing (`notification`, `extension_error`). */
export type NoticeHandler = (line: any) => void;

/** How the child ended when nobody asked it to. */
export interface Crash {
	/** `SIGSEGV`, or `exit code 3`. */
	how: string;
	/** What serve was handling: `tool_call`, `command /deploy`, ... or `no request`. */
	during: string;
	/** The last lines it wrote on stderr. */
	stderr: string[];
}

/** The protocol version this bridge speaks. */
export const PROTOCOL = 1;

interface Pending {
	what: string;
	resolve: (value: any) => void;
	reject: (error: Error) => void;
	onUpdate?: (partial: unknown) => void;
}

/** One running `pi-hooks serve` child. */
export class ServeClient {
	private child: ChildProcess;
	private nextId = 1;
	private pending = new Map<number, Pending>();
	private stopping = false;
	private stderrTail: string[] = [];
	/** Resolves with the `hello` line, rejects when the child cannot start. */
	readonly hello: Promise<Hello>;
	/** Resolves when the child is gone: with the crash, or `undefined` after `stop()`. */
	readonly exited: Promise<Crash | undefined>;

	constructor(
		bin: string,
		args: string[],
		private onRequest: RequestHandler,
		private onNotice: NoticeHandler,
		env: Record<string, string> = {},
	) {
		this.child = spawn(bin, ["serve", ...args], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
		let gotHello: (hello: Hello) => void;
		let failed: (error: Error) => void;
		this.hello = new Promise<Hello>((resolve, reject) => {
			gotHello = resolve;
			failed = reject;
		});
		// A late rejection nobody awaits must not become an unhandled rejection in pi.
		this.hello.catch(() => {});
		let helloSeen = false;
		this.child.on("error", (error) => failed(new Error(`cannot start "${bin} serve": ${error.message}`)));
		// A closed pipe (the child died) is seen by `exit`; writes after it are dropped.
		this.child.stdin?.on("error", () => {});
		createInterface({ input: this.child.stderr! }).on("line", (line) => {
			this.stderrTail.push(line);
			if (this.stderrTail.length > 20) this.stderrTail.shift();
		});
		createInterface({ input: this.child.stdout! }).on("line", (text) => {
			let line: any;
			try {
				line = JSON.parse(text);
			} catch {
				return;
			}
			if (!helloSeen) {
				helloSeen = true;
				if (line.type === "hello" && line.protocol === PROTOCOL) gotHello(line);
				else failed(new Error(`"${bin} serve" speaks protocol ${line.protocol}; this bridge speaks ${PROTOCOL}: install matching versions`));
				return;
			}
			this.take(line);
		});
		this.exited = new Promise((resolve) => {
			this.child.on("exit", (code, signal) => {
				const during = [...this.pending.values()][0]?.what ?? "no request";
				const how = signal ?? `exit code ${code}`;
				const error = new Error(`pi-hooks serve ${signal ? `crashed (${signal})` : `exited (${how})`} while handling ${during}`);
				for (const pending of this.pending.values()) pending.reject(error);
				this.pending.clear();
				if (!helloSeen) failed(new Error(`"${bin} serve" ended before its hello (${how}): ${this.stderrTail.join(" | ")}`));
				resolve(this.stopping ? undefined : { how, during, stderr: [...this.stderrTail] });
			});
		});
	}

	/** Whether the process was started at all (false: the binary could not be spawned). */
	get spawned(): boolean {
		return this.child.pid !== undefined;
	}

	/** Sends a request (`event`, `command`, `tool`, ...) and waits for its result. */
	request(type: string, fields: Record<string, unknown>, what: string, onUpdate?: (partial: unknown) => void): Promise<any> {
		const id = this.nextId++;
		return new Promise((resolve, reject) => {
			if (this.child.exitCode !== null || this.child.signalCode !== null) {
				reject(new Error("pi-hooks serve is not running"));
				return;
			}
			this.pending.set(id, { what, resolve, reject, onUpdate });
			this.write({ type, id, ...fields });
		});
	}

	/** Ends the child: stdin closes, serve shuts its plugins down and exits. */
	stop(): void {
		this.stopping = true;
		this.child.stdin?.end();
		// A child that does not leave on its own is killed.
		const timer = setTimeout(() => this.child.kill("SIGKILL"), 5000);
		timer.unref();
		this.child.on("exit", () => clearTimeout(timer));
	}

	private write(line: unknown): void {
		this.child.stdin?.write(`${JSON.stringify(line)}\n`);
	}

	private take(line: any): void {
		switch (line.type) {
			case "result":
			case "error": {
				const pending = this.pending.get(line.id);
				if (!pending) return;
				this.pending.delete(line.id);
				if (line.type === "result") pending.resolve(line.result);
				else pending.reject(new Error(line.error));
				return;
			}
			case "tool_update":
				this.pending.get(line.id)?.onUpdate?.(line.partial);
				return;
			case "request":
				this.onRequest(line.method, line.params ?? {}).then(
					(result) => this.write({ type: "response", id: line.id, result: result ?? null }),
					(error) => this.write({ type: "response", id: line.id, error: error instanceof Error ? error.message : String(error) }),
				);
				return;
			default:
				this.onNotice(line);
		}
	}
}
