// Events between pi and serve: the payload pi gives a handler becomes the `event` request's
// payload, and serve's combined decision becomes what the handler returns to pi. Serve has
// already applied pi-hooks' combination rules across the native plugins; this file only
// changes shapes where pi's handler results differ from the protocol's results.

/** The event's fields for serve: `type` is the request's `name`; an AbortSignal (of
 * `session_before_compact` / `session_before_tree`) cannot cross a pipe. */
export function payloadFor(event: Record<string, unknown>): Record<string, unknown> {
	const { type: _type, signal: _signal, ...payload } = event;
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
		case "tool_result":
			return { content: result.content, details: result.details ?? undefined, isError: result.isError };
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
			// user_bash and session_before_*: the combined result as pi expects it.
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
