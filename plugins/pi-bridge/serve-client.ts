// The bridge's side of the serve protocol (docs/serve-protocol.md in the pi-hooks
// repository): spawns `pi-hooks serve`, reads its `hello`, sends requests with ids and
// resolves them with `result` / `error` lines, hands `request` and `notification` lines to
// the bridge, and notices when the child dies (a native crash) so the bridge can fail
// closed and restart it.
//
// Two transports carry the same JSON objects: lines over serve's stdin and stdout (the pipe),
// or frames in a pair of shared-memory rings (`serve --ring-fd 3`, Linux) through the bridge's
// Node-API addon (plugins/pi-bridge/addon, `libpi_hooks_node_ring.so` beside the pi-hooks
// binary, or PI_HOOKS_BRIDGE_RING_ADDON=PATH). With the ring a request is one synchronous call
// of the addon that writes it and reads until its answer, at most `PI_HOOKS_BRIDGE_RING_WAIT_US`
// (1500 µs): a plugin slower than that leaves the request pending, and its answer comes when
// serve rings its doorbell (a blank line on its stdout), so pi's event loop is never held
// longer. The ring is chosen whenever the addon is found; PI_HOOKS_BRIDGE_TRANSPORT=pipe|ring
// forces one.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { delimiter, dirname, join } from "node:path";
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

/** What the addon's calls return (plugins/pi-bridge/addon/src/lib.rs, `Read`). */
interface RingRead {
	/** The frames read, each a JSON object, joined by line feeds. */
	frames: string;
	answered: boolean;
	/** Frames are still unread: drain again soon. */
	more: boolean;
}

/** The addon's end of the rings (plugins/pi-bridge/addon/src/lib.rs, `NodeRing`). */
interface NodeRing {
	readonly childFd: number;
	releaseChildFd(): void;
	call(frame: string, id: number, boundUs: number): RingRead;
	send(frame: string): RingRead;
	drain(): RingRead;
	getReady(): void;
	close(): void;
}

/** The addon's file name (Linux only: the rings are a Linux transport). */
const ADDON_FILE = "libpi_hooks_node_ring.so";

/** The addons loaded, by path (a process loads each once: node refuses a second dlopen of
 * one Node-API module in the same context less gracefully than this). */
const addons = new Map<string, { NodeRing: new () => NodeRing }>();

/** Where the ring addon is for the binary `bin`: PI_HOOKS_BRIDGE_RING_ADDON, else beside the
 * binary (as it is found on PATH, and as its real path when it is a link); `undefined`: none. */
export function ringAddonPath(bin: string): string | undefined {
	const forced = process.env.PI_HOOKS_BRIDGE_RING_ADDON;
	if (forced) return forced;
	let found = bin;
	if (!bin.includes("/")) {
		found = "";
		for (const dir of (process.env.PATH ?? "").split(delimiter)) {
			if (dir && existsSync(join(dir, bin))) {
				found = join(dir, bin);
				break;
			}
		}
		if (!found) return undefined;
	}
	const candidates = [join(dirname(found), ADDON_FILE)];
	try {
		candidates.push(join(dirname(realpathSync(found)), ADDON_FILE));
	} catch {
		// A binary that does not exist is said by its spawn.
	}
	return candidates.find((candidate) => existsSync(candidate));
}

/** The transport to use with `bin`: `{ring}` with the addon loaded, `{pipe}`, or `{error}` when
 * PI_HOOKS_BRIDGE_TRANSPORT names one that cannot be had. */
export function chooseTransport(bin: string): { ring: new () => NodeRing } | { pipe: true } | { error: string } {
	const forced = process.env.PI_HOOKS_BRIDGE_TRANSPORT;
	if (forced === "pipe") return { pipe: true };
	if (forced !== undefined && forced !== "" && forced !== "ring") {
		return { error: `PI_HOOKS_BRIDGE_TRANSPORT=${forced} is neither "pipe" nor "ring"` };
	}
	const want = forced === "ring";
	if (process.platform !== "linux") {
		return want ? { error: "PI_HOOKS_BRIDGE_TRANSPORT=ring: the ring transport is only offered on Linux" } : { pipe: true };
	}
	const path = ringAddonPath(bin);
	if (!path) {
		return want
			? { error: `PI_HOOKS_BRIDGE_TRANSPORT=ring: the ring addon ${ADDON_FILE} is not beside ${bin} (build it with "cargo build -p pi-hooks-node-ring", or set PI_HOOKS_BRIDGE_RING_ADDON to its path)` }
			: { pipe: true };
	}
	try {
		let addon = addons.get(path);
		if (!addon) {
			const module = { exports: {} as any };
			process.dlopen(module, path);
			addon = module.exports as { NodeRing: new () => NodeRing };
			if (typeof addon.NodeRing !== "function") throw new Error("it exports no NodeRing");
			addons.set(path, addon);
		}
		return { ring: addon.NodeRing };
	} catch (error) {
		return want ? { error: `PI_HOOKS_BRIDGE_TRANSPORT=ring: cannot load the ring addon ${path}: ${(error as Error).message}` } : { pipe: true };
	}
}

/** How long a request waits for its answer in the addon's synchronous call (µs). */
function ringWaitUs(): number {
	const value = Number(process.env.PI_HOOKS_BRIDGE_RING_WAIT_US);
	return Number.isInteger(value) && value >= 0 && value <= 100_000 ? value : 1500;
}

interface Pending {
	what: string;
	resolve: (value: any) => void;
	reject: (error: Error) => void;
	onUpdate?: (partial: unknown) => void;
}

/** One running `pi-hooks serve` child. */
export class ServeClient {
	private child: ChildProcess;
	/** The rings, with the ring transport (closed once the child has gone). */
	private ring: NodeRing | undefined;
	private readonly ringWait = ringWaitUs();
	private drainQueued = false;
	/** The request sent over the ring and not answered yet. */
	private inFlight: number | undefined;
	/** Requests behind it, in order. */
	private waiting: { frame: string; id: number }[] = [];
	/** The transport in use. */
	readonly transport: "pipe" | "ring";
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
		let gotHello: (hello: Hello) => void;
		let failed: (error: Error) => void;
		this.hello = new Promise<Hello>((resolve, reject) => {
			gotHello = resolve;
			failed = reject;
		});
		const chosen = chooseTransport(bin);
		// A transport forced and not to be had is said instead of silently using the other.
		if ("error" in chosen) throw new Error(`pi-hooks bridge: ${chosen.error}`);
		if ("ring" in chosen) {
			try {
				this.ring = new chosen.ring();
			} catch (error) {
				if (process.env.PI_HOOKS_BRIDGE_TRANSPORT === "ring") {
					throw new Error(`pi-hooks bridge: PI_HOOKS_BRIDGE_TRANSPORT=ring: cannot create the rings: ${(error as Error).message}`);
				}
			}
		}
		this.transport = this.ring ? "ring" : "pipe";
		if (this.ring) {
			// The rings' memfd goes to serve as its fd 3 (node's spawn puts it there).
			this.child = spawn(bin, ["serve", ...args, "--ring-fd", "3"], { stdio: ["pipe", "pipe", "pipe", this.ring.childFd], env: { ...process.env, ...env } });
			this.ring.releaseChildFd();
		} else {
			this.child = spawn(bin, ["serve", ...args], { stdio: ["pipe", "pipe", "pipe"], env: { ...process.env, ...env } });
		}
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
			// With the ring, stdout brings the hello, then only doorbells: serve published
			// frames while nothing read.
			if (helloSeen && this.ring) {
				this.drain();
				return;
			}
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
				// What serve published before it ended is still read (an answer, its last notices).
				if (this.ring) {
					this.drain();
					this.ring.close();
					this.ring = undefined;
				}
				const during = [...this.pending.values()][0]?.what ?? "no request";
				const how = signal ?? `exit code ${code}`;
				const error = new Error(`pi-hooks serve ${signal ? `crashed (${signal})` : `exited (${how})`} while handling ${during}`);
				for (const pending of this.pending.values()) pending.reject(error);
				this.pending.clear();
				this.waiting = [];
				this.inFlight = undefined;
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
			const frame = JSON.stringify({ type, id, ...fields });
			if (!this.ring) this.child.stdin?.write(`${frame}\n`);
			// Serve answers one request at a time: behind one still unanswered (a plugin slower
			// than the wait, a dialog open) a request waits here, not in the ring, and goes once
			// that answer is in, so a large one never waits (synchronously) for room.
			else if (this.inFlight !== undefined) this.waiting.push({ frame, id });
			else {
				this.inFlight = id;
				this.ringCall(frame, id);
			}
		});
	}

	/** Tells serve a request is likely soon (the ring only: its reader, if it sleeps, wakes and
	 * spins a few milliseconds for it). */
	getReady(): void {
		this.ring?.getReady();
	}

	/** One request over the ring: sent, and its answer read if it comes within the wait. */
	private ringCall(frame: string, id: number): void {
		this.ringDo((ring) => ring.call(frame, id, this.ringWait));
	}

	/** Sends the first request waiting behind an answered one. */
	private sendNext(): void {
		if (this.inFlight !== undefined || !this.ring) return;
		const next = this.waiting.shift();
		if (!next) return;
		this.inFlight = next.id;
		this.ringCall(next.frame, next.id);
	}

	/** Reads what serve published (its doorbell rang, or a read left frames unread). */
	private drain(): void {
		this.drainQueued = false;
		this.ringDo((ring) => ring.drain());
	}

	/** Runs one operation of the addon and routes the frames it read; a broken ring (serve
	 * garbled it, or did not read while it was full) ends serve, which the supervisor restarts. */
	private ringDo(operation: (ring: NodeRing) => RingRead): void {
		const ring = this.ring;
		if (!ring) return;
		let read: RingRead;
		try {
			read = operation(ring);
		} catch (error) {
			const message = (error as Error).message;
			if (message.startsWith("broken:")) {
				this.stderrTail.push(`pi-hooks bridge: the ring to serve is unusable (${message.slice(8)}); ending serve`);
				this.child.kill("SIGKILL");
			}
			return;
		}
		if (read.frames.length > 0) {
			for (const text of read.frames.split("\n")) {
				let line: any;
				try {
					line = JSON.parse(text);
				} catch {
					continue;
				}
				this.take(line);
			}
		}
		if (read.more && !this.drainQueued) {
			this.drainQueued = true;
			setImmediate(() => this.drain());
		}
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
		if (this.ring) this.ringDo((ring) => ring.send(JSON.stringify(line)));
		else this.child.stdin?.write(`${JSON.stringify(line)}\n`);
	}

	private take(line: any): void {
		switch (line.type) {
			case "result":
			case "error": {
				if (line.id === this.inFlight) {
					this.inFlight = undefined;
					// After the frames of this read are routed, the next request goes.
					if (this.waiting.length > 0) queueMicrotask(() => this.sendNext());
				}
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
