// serve's `request` and `notification` lines answered with pi's own API: dialogs and the
// status line through `ctx.ui`, messages and entries through `pi`, session reads through
// `ctx.sessionManager`, session operations through the command context. The table of
// methods is the one in docs/serve-protocol.md ("Requests from serve to the client").

import type { ExtensionAPI, ExtensionCommandContext, ExtensionContext } from "@mariozechner/pi-coding-agent";

/** The pi side of the bridge: the context of the call in flight and what plugins set. */
export class PiSide {
	/** The context of the latest handler or command call (dialogs need one). */
	ctx: ExtensionContext | undefined;
	/** Set while a native command runs: session operations wait until it returns. */
	commandCtx: ExtensionCommandContext | undefined;
	/** Session operations a command asked for, run once it returned (as pi-hooks does). */
	private deferred: (() => Promise<void>)[] = [];
	/** Status and widget keys the native plugins set (cleared on `ui_reset`). */
	private statusKeys = new Set<string>();
	private widgetKeys = new Set<string>();

	constructor(private pi: ExtensionAPI) {}

	/** Runs the session operations a command deferred. */
	async runDeferred(): Promise<void> {
		const ops = this.deferred;
		this.deferred = [];
		for (const op of ops) await op();
	}

	private need(): ExtensionContext {
		if (!this.ctx) throw new Error("no pi context yet (no event has reached the bridge)");
		return this.ctx;
	}

	/** Answers one `request` line of serve. */
	async answer(method: string, params: any): Promise<unknown> {
		const pi = this.pi;
		switch (method) {
			case "ui":
				return this.dialog(params);
			case "send_message":
				pi.sendMessage(params.message, params.options ?? {});
				return null;
			case "send_user_message":
				pi.sendUserMessage(params.content ?? params.text, params.deliverAs && params.deliverAs !== "default" ? { deliverAs: params.deliverAs } : undefined);
				return null;
			case "append_entry":
				pi.appendEntry(params.customType, params.data ?? undefined);
				return null;
			case "session_entries":
				return this.need().sessionManager.getEntries();
			case "session_branch":
				return this.need().sessionManager.getBranch();
			case "session_leaf_id":
				return this.need().sessionManager.getLeafId() ?? null;
			case "session_name":
				return pi.getSessionName() ?? null;
			case "set_session_name":
				pi.setSessionName(params.name);
				return null;
			case "set_label":
				pi.setLabel(params.entryId, params.label ?? undefined);
				return null;
			case "active_tools":
				return pi.getActiveTools();
			case "all_tools":
				return pi.getAllTools().map((t: any) => ({ name: t.name, description: t.description, parameters: t.parameters }));
			case "set_active_tools":
				pi.setActiveTools(params.names ?? []);
				return null;
			case "is_idle":
				return this.ctx ? this.ctx.isIdle() : true;
			case "is_aborted":
				return this.ctx?.signal?.aborted ?? false;
			// ABI 1.7 (pi 1.6's ctx): pi's own answers.
			case "is_project_trusted":
				return (this.ctx as any)?.isProjectTrusted?.() ?? false;
			case "system_prompt_options":
				return (this.commandCtx as any)?.getSystemPromptOptions?.() ?? null;
			case "thinking_level":
				return (this.ctx as any)?.thinkingLevel ?? pi.getThinkingLevel?.() ?? "off";
			case "has_pending_messages":
				return this.ctx ? this.ctx.hasPendingMessages() : false;
			case "model":
				return this.ctx?.model ?? null;
			case "context_usage":
				return this.ctx?.getContextUsage() ?? null;
			case "set_model": {
				const model = this.need().modelRegistry.find(params.provider, params.id);
				return model ? pi.setModel(model) : false;
			}
			case "wait_for_idle":
				await this.waitForIdle();
				return null;
			case "session_op":
				return this.sessionOp(params);
			default:
				throw new Error(`the pi bridge does not know the request "${method}"`);
		}
	}

	/** Handles one `notification` line (fire-and-forget UI, abort, shutdown). */
	notice(method: string, params: any): void {
		const ctx = this.ctx;
		if (!ctx) return;
		switch (method) {
			case "ui":
				this.fire(ctx, params);
				return;
			case "ui_reset":
				for (const key of this.statusKeys) ctx.ui.setStatus(key, undefined);
				for (const key of this.widgetKeys) ctx.ui.setWidget(key, undefined);
				this.statusKeys.clear();
				this.widgetKeys.clear();
				return;
			case "abort":
				ctx.abort();
				return;
			case "shutdown":
				ctx.shutdown();
				return;
		}
	}

	private async dialog(params: any): Promise<unknown> {
		const ui = this.need().ui;
		const opts = typeof params.timeout === "number" ? { timeout: params.timeout } : undefined;
		const answer = (value: string | undefined) => (value === undefined ? { cancelled: true } : { value });
		switch (params.method) {
			case "confirm":
				return { confirmed: await ui.confirm(params.title ?? "", params.message ?? "", opts) };
			case "select":
				return answer(await ui.select(params.title ?? "", params.options ?? [], opts));
			case "input":
				return answer(await ui.input(params.title ?? "", params.placeholder, opts));
			case "editor":
				return answer(await ui.editor(params.title ?? "", params.prefill));
			default:
				throw new Error(`unknown dialog "${params.method}"`);
		}
	}

	private fire(ctx: ExtensionContext, params: any): void {
		switch (params.method) {
			case "notify":
				ctx.ui.notify(params.message, params.notifyType ?? "info");
				return;
			case "setStatus":
				this.statusKeys.add(params.statusKey);
				ctx.ui.setStatus(params.statusKey, params.statusText ?? undefined);
				return;
			case "setWidget":
				this.widgetKeys.add(params.widgetKey);
				ctx.ui.setWidget(params.widgetKey, params.widgetLines ?? undefined, params.widgetPlacement ? { placement: params.widgetPlacement } : undefined);
				return;
			case "setTitle":
				ctx.ui.setTitle(params.title);
				return;
			case "set_editor_text":
				ctx.ui.setEditorText(params.text);
				return;
		}
	}

	private async waitForIdle(): Promise<void> {
		if (this.commandCtx) return this.commandCtx.waitForIdle();
		while (this.ctx && !this.ctx.isIdle()) await new Promise((r) => setTimeout(r, 20));
	}

	/** A session operation: accepted now, run when the command that asked returns (a
	 * command context is needed for all but `compact`). */
	private sessionOp(params: any): null {
		if (params.op === "compact") {
			this.need().compact({ customInstructions: params.customInstructions ?? undefined });
			return null;
		}
		const ctx = this.commandCtx;
		if (!ctx) throw new Error(`session operation "${params.op}" is only available in a command`);
		const run = async () => {
			switch (params.op) {
				case "new":
					await ctx.newSession(params.parentSession ? { parentSession: params.parentSession } : undefined);
					return;
				case "switch":
					await ctx.switchSession(params.sessionPath);
					return;
				case "fork":
					await ctx.fork(params.entryId);
					return;
				case "tree":
					await ctx.navigateTree(params.targetId, {
						summarize: params.summarize ?? undefined,
						customInstructions: params.customInstructions ?? undefined,
						replaceInstructions: params.replaceInstructions ?? undefined,
						label: params.label ?? undefined,
					});
					return;
				case "reload":
					await ctx.reload();
					return;
			}
		};
		this.deferred.push(run);
		return null;
	}
}
