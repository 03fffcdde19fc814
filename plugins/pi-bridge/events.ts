// Events between pi and serve: the payload pi gives a handler becomes the `event` request's
// payload, and serve's combined decision becomes what the handler returns to pi. Serve has
// already applied pi-hooks' combination rules across the native plugins; this file only
// changes shapes where pi's handler results differ from the protocol's results.

/** The events whose payload pi 1.6 (0.87.0) gives the whole boundary context preview
 * (`context: {contextEntries, contextMessages, llmMessages, pendingMessages, canContinue}`:
 * the session three times over, 30 KB to megabytes on every turn). */
export const BOUNDARY_EVENTS = new Set(["turn_end", "agent_before_settle"]);

/** Whether the boundary events go to serve with their whole `context`
 * (`PI_HOOKS_BOUNDARY_CONTEXT=1` in pi's environment); otherwise only `context.canContinue`
 * crosses the pipe, see `payloadFor`. */
export function wholeBoundaryContext(env: Record<string, string | undefined> = process.env): boolean {
	return env.PI_HOOKS_BOUNDARY_CONTEXT === "1";
}

/** The event's fields for serve, every field pi gave (serve passes them to the plugins as
 * they are): `type` is the request's `name`; an AbortSignal (of `session_before_compact` /
 * `session_before_tree`) cannot cross a pipe. The boundary events' `context` preview is cut
 * down to `{canContinue}` unless `wholeContext` (item 7 of issue 33: the arrays repeat the
 * session a plugin can read through its context's session calls, and copying them to serve
 * and converting them for the plugins costs milliseconds per megabyte on every turn). */
export function payloadFor(event: Record<string, unknown>, wholeContext = wholeBoundaryContext()): Record<string, unknown> {
	const { type, signal: _signal, ...payload } = event;
	if (!wholeContext && typeof type === "string" && BOUNDARY_EVENTS.has(type)) {
		const context = payload.context as { canContinue?: unknown } | null | undefined;
		if (context !== null && typeof context === "object") {
			payload.context = "canContinue" in context ? { canContinue: context.canContinue } : {};
		}
	}
	return payload;
}

/** What the bridge's handler returns to pi for serve's `result` of the event `name`.
 * `index` is the handler's place among the bridge's handlers of that event (only
 * `before_agent_start` has more than one: pi takes one message per handler). */
export function decisionFor(name: string, result: any, index = 0): unknown {
	if (result === null || result === undefined) return undefined;
	switch (name) {
		case "tool_call":
			if (!result.block) return undefined;
			// pi 1.6: `terminate` stops the agent after the batch when every result has it.
			return result.terminate ? { block: true, reason: result.reason, terminate: true } : { block: true, reason: result.reason };
		case "tool_result": {
			// pi 1.6 (0.81 / 0.99): `structuredContent` and `usage` too; new `content` given
			// without `structuredContent` drops pi's (serve applied that rule already, so the
			// structured content it returns is the one that goes with the content).
			const decision: Record<string, unknown> = { content: result.content, details: result.details ?? undefined, isError: result.isError };
			if (result.structuredContent !== undefined && result.structuredContent !== null) decision.structuredContent = result.structuredContent;
			if (result.usage !== undefined && result.usage !== null) decision.usage = result.usage;
			return decision;
		}
		case "user_bash":
			return userBashDecision(result);
		case "input":
			if (result.action === "transform") {
				return { action: "transform", text: result.text, images: result.images ?? undefined };
			}
			return result.action === "handled" ? { action: "handled" } : undefined;
		case "context":
			return { messages: result.messages };
		case "before_agent_start": {
			const message = result.messages?.[index];
			const systemPrompt = index === 0 && typeof result.systemPrompt === "string" ? result.systemPrompt : undefined;
			if (message === undefined && systemPrompt === undefined) return undefined;
			return { message, systemPrompt };
		}
		case "before_provider_request":
			return result.payload;
		case "resources_discover":
			return {
				skillPaths: (result.skillPaths ?? []).map((p: { path: string }) => p.path),
				promptPaths: (result.promptPaths ?? []).map((p: { path: string }) => p.path),
				themePaths: (result.themePaths ?? []).map((p: { path: string }) => p.path),
			};
		// pi 1.6's results (issue 33, item 4), combined by serve across the native plugins.
		case "turn_end":
		case "agent_before_settle":
			// Boundaries: serve's chain started from pi's `entries` and `continue`.
			return { entries: result.entries, continue: result.continue };
		case "message_end":
			return result.message ? { message: result.message } : undefined;
		case "context_with_system":
			return { messages: result.messages };
		case "before_provider_headers":
			// pi ignores the return value: applyHeaders has changed `event.headers` in place.
			return undefined;
		case "project_trust":
			return result.trusted === "yes" || result.trusted === "no" ? result : undefined;
		default:
			// session_before_*: the combined result as pi expects it.
			return result;
	}
}

/** A `tool_call` decision's new `input`: as a pi handler does, replace the fields of pi's
 * `event.input` in place, so later handlers and the tool see them (pi does not re-validate). */
export function applyToolInput(event: { input?: unknown }, result: any): void {
	const input = result?.input;
	if (result?.block || input === null || typeof input !== "object" || Array.isArray(input)) return;
	const target = event.input as Record<string, unknown> | undefined;
	if (target === null || typeof target !== "object") {
		event.input = input;
		return;
	}
	for (const key of Object.keys(target)) delete target[key];
	Object.assign(target, input);
}

/** What a handler returns while serve is down: `tool_call` fails closed, the rest waits. */
export function whileDown(name: string, reason: string): unknown {
	return name === "tool_call" ? { block: true, reason } : undefined;
}

/** pi's `BashOperations` (`dist/core/tools/bash.d.ts`, the same in 0.73.1 and 1.6). */
export interface BashOperations {
	exec: (
		command: string,
		cwd: string,
		options: { onData: (data: Buffer) => void; signal?: AbortSignal; timeout?: number; env?: NodeJS.ProcessEnv },
	) => Promise<{ exitCode: number | null }>;
}

/** pi's local shell, `createLocalBashOperations` (exported by pi 0.73.1 and 1.6), given by
 * index.ts; `undefined` where the running pi has none. */
let localBash: (() => BashOperations) | undefined;

/** Sets where a rewritten `user_bash` command runs (index.ts: pi's own local shell). */
export function setLocalBash(make: (() => BashOperations) | undefined): void {
	localBash = make;
}

/** A native `user_bash` result in pi's shapes. pi takes exactly one of `{operations}` or
 * `{result}` (pi 1.6 aborts the command on anything else; 0.73.1 ignored other fields);
 * pi-hooks' rewrite form `{command?, cwd?, env?}` becomes `{operations}` that run the
 * rewritten command in pi's own local shell, in the rewritten folder, with the extra
 * environment variables on top of pi's. */
export function userBashDecision(result: any): unknown {
	if (result === null || typeof result !== "object") return undefined;
	if (result.result !== undefined && result.result !== null) return { result: result.result };
	const rewrite = typeof result.command === "string" || typeof result.cwd === "string" || (result.env !== null && typeof result.env === "object");
	if (!rewrite) return undefined;
	if (!localBash) throw new Error("pi-hooks bridge: this pi has no createLocalBashOperations, so a native user_bash rewrite cannot run; update pi");
	const local = localBash();
	const operations: BashOperations = {
		exec: (command, cwd, options) =>
			local.exec(typeof result.command === "string" ? result.command : command, typeof result.cwd === "string" ? result.cwd : cwd, {
				...options,
				env: result.env && typeof result.env === "object" ? { ...(options.env ?? process.env), ...stringValues(result.env) } : options.env,
			}),
	};
	return { operations };
}

/** The string-valued entries of a rewrite's `env`. */
function stringValues(env: Record<string, unknown>): Record<string, string> {
	const values: Record<string, string> = {};
	for (const [key, value] of Object.entries(env)) if (typeof value === "string") values[key] = value;
	return values;
}

/** A `before_provider_headers` decision: as a pi handler does, change pi's `event.headers` in
 * place (serve's `headers` are the merged ones; a `null` value deletes that header in pi). */
export function applyHeaders(event: { headers?: unknown }, result: any): void {
	const headers = result?.headers;
	const target = event.headers as Record<string, unknown> | undefined;
	if (headers === null || typeof headers !== "object" || target === null || typeof target !== "object") return;
	for (const [name, value] of Object.entries(headers)) {
		if (target[name] !== value) target[name] = value;
	}
}
