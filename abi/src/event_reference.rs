//! The event reference: every event the host emits, when, with which payload fields, what a
//! handler may return and how results of several handlers combine. One table, used by the
//! host's unknown-event warning (`pi_hooks_host::plugin::event_names`), rendered into the header's comment
//! (`include/pi_hooks.h`) and into `docs/events.md` by `scripts/gen-header.sh`, so the three
//! cannot drift apart.
//!
//! Payload field names and shapes are pi's (1.6.0's; what came after 0.73.1 names the pi
//! version that introduced it). Every payload also has `type`, the event's
//! name. Types are written as in TypeScript: `string`, `number`, `boolean`, `T[]`, `T?` for a
//! field that may be missing, `A | B`, and pi's own shapes (`AgentMessage`, `SessionEntry`,
//! ...), which are JSON objects as pi's session file stores them.

/// One payload field.
#[derive(Debug, Clone, Copy)]
pub struct EventField {
    /// The field's name in the payload object.
    pub name: &'static str,
    /// Its type (TypeScript notation).
    pub ty: &'static str,
    /// What it holds.
    pub doc: &'static str,
}

/// One event.
#[derive(Debug, Clone, Copy)]
pub struct EventSpec {
    /// The name a plugin subscribes to.
    pub name: &'static str,
    /// The group it belongs to in the reference (`session`, `agent`, `tools`, `input`,
    /// `provider`, `older hook API`).
    pub group: &'static str,
    /// When it fires.
    pub when: &'static str,
    /// Its payload's fields (besides `type`).
    pub payload: &'static [EventField],
    /// What a handler may return (`ignored` for notifications).
    pub result: &'static str,
    /// How the results of several handlers combine.
    pub combine: &'static str,
}

const fn f(name: &'static str, ty: &'static str, doc: &'static str) -> EventField {
    EventField { name, ty, doc }
}

/// Handlers of a notification: every one runs, results are ignored.
const NOTIFY: &str = "every handler runs; results are ignored";

/// `parentToolCallId` of the tool events (pi 0.99.0).
const PARENT_TOOL_CALL_ID: EventField = f(
    "parentToolCallId",
    "string?",
    "pi 0.99, through the bridge: the call of the tool (a codemode script) that made this call, whose id is `<parent>/<n>`; pi-hooks' own tools make no nested calls",
);
/// The fields every boundary event (`turn_end`, `agent_before_settle`) has (pi 0.87.0).
const BOUNDARY_ENTRIES: EventField = f(
    "entries",
    "SessionBoundaryDraft[]",
    "the entries earlier handlers asked to append: `{type: \"custom\", customType, data?}`, `{type: \"custom_message\", customType, content, display, details?}`, `{type: \"context_edit\", targetId, replacement}`, `{type: \"compaction\", summary, firstKeptEntryId, details?}`",
);
const BOUNDARY_CONTINUE: EventField = f(
    "continue",
    "boolean",
    "whether earlier handlers asked for one more model request",
);
const BOUNDARY_CONTEXT: EventField = f(
    "context",
    "{contextEntries, contextMessages, llmMessages, pendingMessages, canContinue}",
    "the context the next request would send: the branch's entries, its messages, the messages as sent, the queued ones, and whether a request can follow (pi-hooks' own modes build it once per event, before the handlers; pi rebuilds it after each handler with the drafts applied)",
);
const BOUNDARY_OUTCOME: EventField = f(
    "outcome",
    "\"completed\" | \"aborted\" | \"error\"",
    "how the last model request ended",
);
const BOUNDARY_RESULT: &str = "`{entries?: SessionBoundaryDraft[], continue?: boolean}`: the entries to append after the handlers ran (the last `entries` given replaces the earlier ones), and whether to make one more model request. pi-hooks' own modes write `custom` and `custom_message` entries (a custom message joins the context) and report `context_edit` and `compaction` ones as not written; a `continue` without a context that can continue is reported (`... requested continuation without runnable model context`)";
const BOUNDARY_COMBINE: &str = "chains: each handler sees `entries` and `continue` as left by the ones before; a malformed `entries` is reported (`Invalid boundary entries: ...`) and then no entries are written and no request is made, unless a later handler gives valid ones";

/// The pi version that introduced an event (`pi-coding-agent` 0.74.0 and later, published as
/// `@earendil-works/pi-coding-agent`); events not listed were in pi 0.73.1.
pub const SINCE: &[(&str, &str)] = &[
    ("project_trust", "0.79.0"),
    ("session_info_changed", "0.80.3"),
    ("agent_settled", "0.80.4 (`aborted` 1.1.0)"),
    ("before_provider_headers", "0.80.4"),
    ("session_compact_failed", "0.84.3"),
    ("ui_prompt_start", "0.84.4"),
    ("ui_prompt_end", "0.84.4"),
    ("context_with_system", "0.87.0"),
    ("agent_before_settle", "0.87.0"),
];

/// The pi version that introduced `name`, when it came after pi 0.73.1.
pub fn since(name: &str) -> Option<&'static str> {
    SINCE.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}

/// Every event the host emits, in the order of the reference.
pub const EVENTS: &[EventSpec] = &[
    // Session.
    EventSpec {
        name: "session_directory",
        group: "session",
        when: "once at start-up, before the session file is opened, when no --session-dir was given (a later pi event)",
        payload: &[f("cwd", "string", "the working directory")],
        result: "`{sessionDir: string}`",
        combine: "the last handler that returns a `sessionDir` wins",
    },
    EventSpec {
        name: "session_start",
        group: "session",
        when: "when a session starts: at start-up, after /reload, and after a new, resumed or forked session replaced the current one",
        payload: &[
            f(
                "reason",
                "\"startup\" | \"reload\" | \"new\" | \"resume\" | \"fork\"",
                "why it starts",
            ),
            f(
                "previousSessionFile",
                "string?",
                "the session file before a new/resume/fork",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "resources_discover",
        group: "session",
        when: "after `session_start` (reason \"startup\") and after /reload (reason \"reload\")",
        payload: &[
            f("cwd", "string", "the working directory"),
            f("reason", "\"startup\" | \"reload\"", "why"),
        ],
        result: "`{skillPaths?: string[], promptPaths?: string[], themePaths?: string[]}`",
        combine: "paths accumulate in load order, each tagged with its plugin",
    },
    EventSpec {
        name: "session_before_switch",
        group: "session",
        when: "before a new session (/new, `ctx.newSession`) or a resume (`switch_session`) replaces the current one",
        payload: &[
            f("reason", "\"new\" | \"resume\"", "what is about to happen"),
            f("targetSessionFile", "string?", "the session to resume"),
        ],
        result: "`{cancel?: boolean}`",
        combine: "the first `{cancel: true}` stops the chain and the switch; otherwise the last result",
    },
    EventSpec {
        name: "session_before_fork",
        group: "session",
        when: "before the session is forked at an entry (`fork`, `ctx.fork`)",
        payload: &[
            f("entryId", "string", "the entry the fork starts from"),
            f(
                "position",
                "\"before\" | \"at\"",
                "fork before the entry or at it",
            ),
        ],
        result: "`{cancel?: boolean}` (`skipConversationRestore` is ignored, as pi 0.73.1 ignores it: the session always goes on from the forked file)",
        combine: "the first `{cancel: true}` stops the chain and the fork; otherwise the last result",
    },
    EventSpec {
        name: "session_before_compact",
        group: "session",
        when: "before a compaction (manual, by a plugin, or automatic at the context threshold)",
        payload: &[
            f(
                "preparation",
                "CompactionPreparation",
                "what pi would summarize and keep (cut point, messages, file lists)",
            ),
            f("branchEntries", "SessionEntry[]", "the current branch"),
            f(
                "customInstructions",
                "string?",
                "instructions given with /compact",
            ),
            f(
                "reason",
                "\"manual\" | \"threshold\" | \"overflow\"",
                "what started it (pi 0.79.10)",
            ),
            f(
                "willRetry",
                "boolean",
                "the refused run is retried after it (overflow recovery)",
            ),
        ],
        result: "`{cancel?: boolean, compaction?: CompactionResult}`, or a plain string (the summary)",
        combine: "the first `{cancel: true}` stops the chain; otherwise the last result; a `compaction` (or string) replaces the model's summary",
    },
    EventSpec {
        name: "session_compact",
        group: "session",
        when: "after a compaction entry was written",
        payload: &[
            f("compactionEntry", "CompactionEntry", "the entry"),
            f(
                "fromExtension",
                "boolean",
                "whether a plugin gave the summary",
            ),
            f(
                "reason",
                "\"manual\" | \"threshold\" | \"overflow\"",
                "what started it (pi 0.79.10)",
            ),
            f(
                "willRetry",
                "boolean",
                "the refused run is retried after it (overflow recovery)",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "auto_compaction_start",
        group: "session",
        when: "when the host compacts by itself (oh-my-pi's event): after a run whose context passed the threshold, or after the provider refused an overflowing context; before `session_before_compact`",
        payload: &[f(
            "reason",
            "\"threshold\" | \"overflow\"",
            "why it compacts",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "auto_compaction_end",
        group: "session",
        when: "when an automatic compaction ended (oh-my-pi's event), after `session_compact` when it wrote one",
        payload: &[
            f("reason", "\"threshold\" | \"overflow\"", "why it compacted"),
            f(
                "result",
                "{summary, firstKeptEntryId, tokensBefore, details}?",
                "the compaction, when it happened",
            ),
            f("aborted", "boolean", "a plugin cancelled it"),
            f(
                "willRetry",
                "boolean",
                "the refused run is retried from the compacted context (overflow)",
            ),
            f(
                "errorMessage",
                "string?",
                "why it failed (`Auto-compaction failed: ...`)",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "auto_retry_start",
        group: "session",
        when: "when a run that failed with a transient model error (a rate limit, an overloaded or unreachable server) is about to be retried (settings.json `retry`), after its `agent_end`; the retry's `agent_start` follows the delay. pi prints it to its clients only; plugins get it as in oh-my-pi",
        payload: &[
            f("attempt", "number", "this retry's number, from 1"),
            f("maxAttempts", "number", "`retry.maxRetries`"),
            f(
                "delayMs",
                "number",
                "the wait before it: `retry.baseDelayMs * 2^(attempt - 1)`",
            ),
            f("errorMessage", "string", "the error of the failed run"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "auto_retry_end",
        group: "session",
        when: "when retrying ended: the first answer that is not an error (`success: true`, right after its `message_end`), the retries used up, or the wait cancelled by an abort or RPC `abort_retry` (`finalError: \"Retry cancelled\"`)",
        payload: &[
            f("success", "boolean", "whether a retry got an answer"),
            f("attempt", "number", "the retries made"),
            f(
                "finalError",
                "string?",
                "why it gave up (absent on success)",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_before_tree",
        group: "session",
        when: "before the session's leaf moves to another entry (`navigate_tree`, `ctx.navigateTree`)",
        payload: &[f(
            "preparation",
            "{targetId, oldLeafId, commonAncestorId, entriesToSummarize, userWantsSummary, customInstructions?, replaceInstructions?, label?}",
            "the move and what would be summarized",
        )],
        result: "`{cancel?: boolean, summary?: {summary, details?}, customInstructions?, replaceInstructions?, label?}`",
        combine: "the first `{cancel: true}` stops the chain; otherwise the last result",
    },
    EventSpec {
        name: "session_tree",
        group: "session",
        when: "after the leaf moved",
        payload: &[
            f("newLeafId", "string | null", "the new leaf"),
            f("oldLeafId", "string | null", "the old leaf"),
            f(
                "summaryEntry",
                "BranchSummaryEntry?",
                "the branch summary written, if any",
            ),
            f(
                "fromExtension",
                "boolean?",
                "whether a plugin gave the summary",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_shutdown",
        group: "session",
        when: "when a session ends: quit (stdin closed, end of a print run), /reload, or before a new, resumed or forked session replaces it",
        payload: &[
            f(
                "reason",
                "\"quit\" | \"reload\" | \"new\" | \"resume\" | \"fork\"",
                "why it ends",
            ),
            f(
                "targetSessionFile",
                "string?",
                "the session that replaces it",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "model_select",
        group: "session",
        when: "when the model changes (`set_model`, cycling, or restored when a session resumes)",
        payload: &[
            f("model", "Model", "the new model `{id, provider, ...}`"),
            f("previousModel", "Model?", "the one before"),
            f(
                "source",
                "\"set\" | \"cycle\" | \"restore\"",
                "what changed it",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "thinking_level_select",
        group: "session",
        when: "when the thinking level changes; pi-hooks' own modes have no thinking levels (always \"off\") and never emit it: a plugin gets it inside pi, through the bridge",
        payload: &[
            f(
                "level",
                "ThinkingLevel",
                "the new level (`\"off\"`, `\"minimal\"`, `\"low\"`, `\"medium\"`, `\"high\"`, `\"xhigh\"`, `\"max\"`)",
            ),
            f("previousLevel", "ThinkingLevel", "the one before"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_info_changed",
        group: "session",
        when: "when the session's name changes (RPC `set_session_name`, pi's /name); pi-hooks' own modes emit it after RPC `set_session_name`",
        payload: &[f(
            "name",
            "string?",
            "the new name, trimmed; absent when it was cleared",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_compact_failed",
        group: "session",
        when: "when a compaction failed (\"Nothing to compact\", a summary that failed) or was cancelled by a `session_before_compact` handler, after `auto_compaction_end` for an automatic one",
        payload: &[
            f(
                "reason",
                "\"manual\" | \"threshold\" | \"overflow\"",
                "what started the compaction",
            ),
            f(
                "errorMessage",
                "string?",
                "why it failed (absent when it was cancelled)",
            ),
            f("aborted", "boolean", "it was cancelled or aborted"),
            f(
                "willRetry",
                "boolean",
                "the refused run would have been retried after it (overflow)",
            ),
            f(
                "fromExtension",
                "boolean",
                "the failing summary came from a `session_before_compact` handler",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "project_trust",
        group: "session",
        when: "inside pi (through the bridge), when pi asks whether the project folder may run its code (`.pi` settings, extensions, packages), before project resources load; only user-level plugins are asked. pi-hooks' own modes use their own trust pin and do not emit it",
        payload: &[f("cwd", "string", "the project folder")],
        result: "`{trusted: \"yes\" | \"no\" | \"undecided\", remember?: boolean}`",
        combine: "the first `yes` or `no` decides and stops the chain; `undecided` asks the next handler",
    },
    // Input.
    EventSpec {
        name: "input",
        group: "input",
        when: "for each prompt before it starts a run (not for slash commands of plugins, which run the command instead)",
        payload: &[
            f("text", "string", "the prompt"),
            f("images", "ImageContent[]?", "attached images"),
            f(
                "source",
                "\"interactive\" | \"rpc\" | \"extension\"",
                "who sent it (`extension`: a plugin's `send_user_message`)",
            ),
            f(
                "streamingBehavior",
                "\"steer\" | \"followUp\"?",
                "how the input is delivered while the agent streams (pi 0.77.0; absent when idle): a plugin's `send_user_message` with a `deliverAs` during a run; RPC `steer` / `follow_up` in pi",
            ),
        ],
        result: "`{action: \"continue\"}`, `{action: \"transform\", text, images?}`, `{action: \"handled\"}`, or a plain string (a transform)",
        combine: "transforms chain; the first `handled` stops the chain and the prompt",
    },
    EventSpec {
        name: "user_bash",
        group: "input",
        when: "when the user runs a shell command with `!cmd` / `!!cmd` in the interactive mode (or in pi, through the bridge), before it runs; RPC's `bash` command does not fire it (nor does pi's)",
        payload: &[
            f("command", "string", "the command"),
            f(
                "excludeFromContext",
                "boolean",
                "`!!`: its output stays out of the model's context",
            ),
            f("cwd", "string", "where it runs"),
        ],
        result: "`{result: BashResult}` (`{output, exitCode?, cancelled, truncated}`: shown and recorded, the command does not run), or `{command?, cwd?, env?}` (run this command, in this folder, with these variables, instead); pi's `{operations}` form carries TypeScript functions and exists only in pi",
        combine: "the first handler with a result wins",
    },
    // Agent.
    EventSpec {
        name: "before_agent_start",
        group: "agent",
        when: "once per prompt, after `input`, before the run",
        payload: &[
            f("prompt", "string", "the prompt text"),
            f("images", "ImageContent[]?", "its images"),
            f(
                "systemPrompt",
                "string",
                "the system prompt so far (after earlier handlers)",
            ),
        ],
        result: "`{message?: {customType, content, display, details?}, systemPrompt?: string}`; `context->set_system_prompt` works too",
        combine: "messages accumulate in order (each becomes a custom message after the prompt); `systemPrompt` chains, an empty one restores the base prompt",
    },
    EventSpec {
        name: "agent_start",
        group: "agent",
        when: "when a run starts",
        payload: &[],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "turn_start",
        group: "agent",
        when: "before each model request of a run",
        payload: &[
            f("turnIndex", "number", "0 for the first turn of the run"),
            f("timestamp", "number", "milliseconds since the epoch"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "context",
        group: "agent",
        when: "before each model request, with the messages about to be sent",
        payload: &[f("messages", "AgentMessage[]", "the conversation (a copy)")],
        result: "`{messages: AgentMessage[]}`",
        combine: "chains: each handler sees the previous handler's messages; the last ones are sent (the session is not changed)",
    },
    EventSpec {
        name: "context_with_system",
        group: "agent",
        when: "before each model request, after every `context` handler, with the whole transcript pi sends, its system messages included (pi 1.6); pi-hooks' own modes keep the system prompt out of the transcript, so there it holds the same conversation as `context`",
        payload: &[f(
            "messages",
            "AgentMessage[]",
            "the messages about to be sent",
        )],
        result: "`{messages: AgentMessage[]}`",
        combine: "chains: each handler sees the previous handler's messages; the last ones are sent as returned (in pi, a handler that drops the leading system message is reported)",
    },
    EventSpec {
        name: "message_start",
        group: "agent",
        when: "when a message (user, assistant, tool result, custom) starts",
        payload: &[f("message", "AgentMessage", "the message")],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "message_update",
        group: "agent",
        when: "for each streamed piece of an assistant message",
        payload: &[
            f("message", "AgentMessage", "the message so far"),
            f(
                "assistantMessageEvent",
                "AssistantMessageEvent",
                "the piece (`text_delta`, `toolcall_start`, ...)",
            ),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "message_end",
        group: "agent",
        when: "when a message is complete, before the session stores it (pi 1.6's order)",
        payload: &[f("message", "AgentMessage", "the message")],
        result: "`{message?: AgentMessage}`: replaces the message (same `role` only; else reported: `message_end handlers must return a message with the same role`); the session, the context and the clients get the replacement",
        combine: "chains: each handler sees the message as replaced so far",
    },
    EventSpec {
        name: "turn_end",
        group: "agent",
        when: "after each turn (the assistant message and its tool results, stored in the session); a boundary since pi 0.87.0",
        payload: &[
            f("turnIndex", "number", "the turn"),
            f("message", "AgentMessage", "the assistant message"),
            f("toolResults", "ToolResultMessage[]", "its tool results"),
            f("messageEntryId", "string", "the session entry of `message`"),
            f(
                "toolResultEntryIds",
                "string[]",
                "the session entries of `toolResults`",
            ),
            BOUNDARY_ENTRIES,
            BOUNDARY_CONTINUE,
            BOUNDARY_CONTEXT,
            BOUNDARY_OUTCOME,
        ],
        result: BOUNDARY_RESULT,
        combine: BOUNDARY_COMBINE,
    },
    EventSpec {
        name: "agent_end",
        group: "agent",
        when: "when a run ends (also after an abort or an error); not the end of the prompt: a retry, a compaction, `agent_before_settle` and `agent_settled` may follow",
        payload: &[f(
            "messages",
            "AgentMessage[]",
            "the messages the run added",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "agent_before_settle",
        group: "agent",
        when: "after the prompt's last `agent_end` (and its retries and automatic compaction), before the agent settles; not after an abort. A `continue` starts one more run (`agent_start` ... `agent_end`) from the context as it is, then this event comes again; so does a message queued while the handlers ran (a client's `follow_up`, a plugin's `send_user_message` with `deliverAs`), as in pi 1.6",
        payload: &[
            BOUNDARY_ENTRIES,
            BOUNDARY_CONTINUE,
            BOUNDARY_CONTEXT,
            BOUNDARY_OUTCOME,
        ],
        result: BOUNDARY_RESULT,
        combine: BOUNDARY_COMBINE,
    },
    EventSpec {
        name: "agent_settled",
        group: "agent",
        when: "once per prompt, when the agent settled: no retry, compaction or continuation follows",
        payload: &[f(
            "aborted",
            "boolean",
            "the run ended because it was aborted (Esc, RPC `abort`, a plugin's `abort`)",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    // UI.
    EventSpec {
        name: "ui_prompt_start",
        group: "UI",
        when: "inside pi (through the bridge), when a blocking dialog (select, confirm, input, editor, custom) starts waiting for the user. The plugin that opens the dialog does not get it while its own call waits (a native plugin runs one call at a time): it sees both events after the dialog closed. pi-hooks' own modes do not emit it yet",
        payload: &[
            f("reason", "\"ui_prompt\"", "always `ui_prompt`"),
            f(
                "kind",
                "\"select\" | \"confirm\" | \"input\" | \"editor\" | \"custom\"",
                "the dialog",
            ),
            f("title", "string?", "its title"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "ui_prompt_end",
        group: "UI",
        when: "inside pi (through the bridge), when that dialog no longer waits (answered, cancelled, timed out); pi-hooks' own modes do not emit it yet",
        payload: &[
            f("reason", "\"ui_prompt\"", "always `ui_prompt`"),
            f(
                "kind",
                "\"select\" | \"confirm\" | \"input\" | \"editor\" | \"custom\"",
                "the dialog",
            ),
            f("title", "string?", "its title"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    // Provider.
    EventSpec {
        name: "before_provider_request",
        group: "provider",
        when: "before each request to the model provider, with the request body",
        payload: &[f("payload", "any", "the request body")],
        result: "any value, even null: the new request body (returning nothing keeps it)",
        combine: "chains: each handler sees the previous handler's body",
    },
    EventSpec {
        name: "before_provider_headers",
        group: "provider",
        when: "after a provider request's headers are assembled, before the HTTP call (pi 0.80.4): inside pi (through the bridge), and in pi-hooks' own OpenAI-compatible provider (header names in lower case; the scripted model sends no HTTP request)",
        payload: &[f(
            "headers",
            "Record<string, string | null>",
            "the request headers (a header an earlier handler deleted is `null`)",
        )],
        result: "`{headers: {name: string | null}}`: set these headers, `null` deletes one (pi's handlers change `event.headers` in place; a native handler returns the changes)",
        combine: "merged in order: each handler sees the headers as changed so far",
    },
    EventSpec {
        name: "after_provider_response",
        group: "provider",
        when: "when the provider's response headers arrive (pi-hooks' own scripted provider reports status 200 and no headers)",
        payload: &[
            f("status", "number", "the HTTP status"),
            f("headers", "Record<string, string>", "the response headers"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    // Tools.
    EventSpec {
        name: "tool_call",
        group: "tools",
        when: "before each tool runs, after its arguments were validated and coerced as pi 1.6 does (`input` is the coerced arguments; invalid arguments end the call before this event: docs/sessions.md, Tool arguments)",
        payload: &[
            f("toolCallId", "string", "the call's id"),
            f(
                "toolName",
                "string",
                "`bash`, `read`, `edit`, `write`, `grep`, `find`, `ls`, or a plugin tool",
            ),
            f(
                "input",
                "object",
                "the arguments (`bash`: `{command, timeout?}`; `write`: `{path, content}`; `edit`: `{path, edits}`; `read`: `{path, offset?, limit?}`)",
            ),
            PARENT_TOOL_CALL_ID,
        ],
        result: "`{block: true, reason?: string, terminate?: boolean}` or `{input: object}`; `terminate` (pi 0.84.1) with a block asks the agent to stop after this tool batch: the run ends after the batch when every call of it was blocked with `terminate`",
        combine: "the first block wins: the tool does not run (its reason becomes the tool's error result) and later handlers, of this plugin and of plugins after it, are not called for this call; a handler error, panic or timeout also blocks (fail closed). An `input` replaces the call's arguments (pi's handlers mutate `event.input` in place): later handlers see it in their `input`, the tool runs with the last one given and `tool_result`'s `input` is that one, while `tool_execution_*`'s `args` keep the model's arguments; it is not validated again; a block after it still wins, and an `input` that is not an object blocks the tool (fail closed). C: `results->set_value(result, pi_str(\"input\"), copy)` after changing a `values->copy` of the payload's `input`, or `set_field_json`; C++: `result.rewrite_input(json)`; Rust: `ToolCallDecision::rewrite(json)`",
    },
    EventSpec {
        name: "tool_execution_start",
        group: "tools",
        when: "when a tool starts running",
        payload: &[
            f("toolCallId", "string", "the call's id"),
            f("toolName", "string", "the tool"),
            f("args", "object", "its arguments"),
            PARENT_TOOL_CALL_ID,
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "tool_execution_update",
        group: "tools",
        when: "for each partial result of a running tool (the output as the tool streamed it: `tool_result` handlers do not patch it, in pi too; a client shows it while the tool runs, the model never sees it)",
        payload: &[
            f("toolCallId", "string", "the call's id"),
            f("toolName", "string", "the tool"),
            f("args", "object", "its arguments"),
            f("partialResult", "object", "`{content, details?}` so far"),
            PARENT_TOOL_CALL_ID,
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "tool_result",
        group: "tools",
        when: "after a tool ran (also when it failed), before its result reaches the model",
        payload: &[
            f("toolCallId", "string", "the call's id"),
            f("toolName", "string", "the tool"),
            f("input", "object", "its arguments"),
            f(
                "content",
                "(TextContent | ImageContent)[]",
                "the result: `{type: \"text\", text}` and `{type: \"image\", data, mimeType}` blocks",
            ),
            f(
                "details",
                "any",
                "the tool's details (`bash`: `{truncation?, fullOutputPath?}`), or undefined",
            ),
            f("isError", "boolean", "whether it failed"),
            f(
                "structuredContent",
                "any?",
                "pi 0.99, through the bridge: the tool's structured result (pi-hooks' own tools give none)",
            ),
            f(
                "usage",
                "Usage?",
                "pi 0.81, through the bridge: model usage the tool reported",
            ),
            PARENT_TOOL_CALL_ID,
        ],
        result: "`{content?, details?, isError?}` (the fields to replace); inside pi also `structuredContent?` and `usage?` (replacing `content` without `structuredContent` drops it there)",
        combine: "patches chain: each handler sees the result as patched so far. A patch changes what the model sees and the session stores, not the `tool_execution_update` lines already streamed to the client (pi behaves the same): a redactor that must also keep a secret off the screen blocks the call in `tool_call` (a command that prints a key file, say), or provides the tool itself as a plugin tool that redacts each update before `tool_update`",
    },
    EventSpec {
        name: "tool_execution_end",
        group: "tools",
        when: "when a tool's final result is known (after `tool_result`)",
        payload: &[
            f("toolCallId", "string", "the call's id"),
            f("toolName", "string", "the tool"),
            f("result", "object", "`{content, details?}`"),
            f("isError", "boolean", "whether it failed"),
            f(
                "durationMs",
                "number?",
                "milliseconds the tool ran (pi 1.1.0); absent when it did not run (blocked, unknown)",
            ),
            PARENT_TOOL_CALL_ID,
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    // The older hook API, still emitted beside the events above.
    EventSpec {
        name: "session",
        group: "older hook API",
        when: "beside the split session events, with a `reason`: `start`, `before_switch`, `switch`, `clear` (new session), `before_branch`, `branch`, `shutdown`",
        payload: &[
            f("reason", "string", "what happened"),
            f("entries", "SessionEntry[]", "the session's entries"),
            f("sessionFile", "string | null", "the session file"),
            f(
                "previousSessionFile",
                "string | null",
                "the file before a switch",
            ),
            f(
                "targetSessionFile",
                "string?",
                "the file to switch to (`before_switch`)",
            ),
            f(
                "targetTurnIndex",
                "number?",
                "the turn of a branch (`before_branch`, `branch`)",
            ),
        ],
        result: "`{cancel?: boolean}` for the `before_*` reasons",
        combine: "the first `{cancel: true}` cancels; otherwise ignored",
    },
    EventSpec {
        name: "session_switch",
        group: "older hook API",
        when: "after a new or resumed session replaced the current one",
        payload: &[
            f("reason", "\"new\" | \"resume\"", "what happened"),
            f("previousSessionFile", "string | null", "the session before"),
        ],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_fork",
        group: "older hook API",
        when: "after a fork replaced the current session",
        payload: &[f(
            "previousSessionFile",
            "string | null",
            "the session before",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session_before_branch",
        group: "older hook API",
        when: "before a fork (the older name of `session_before_fork`)",
        payload: &[f("entryId", "string", "the entry the fork starts from")],
        result: "`{cancel?: boolean}`",
        combine: "the first `{cancel: true}` stops the chain and the fork",
    },
    EventSpec {
        name: "session_branch",
        group: "older hook API",
        when: "after a fork (the older name of `session_fork`)",
        payload: &[f(
            "previousSessionFile",
            "string | null",
            "the session before",
        )],
        result: "ignored",
        combine: NOTIFY,
    },
    EventSpec {
        name: "session.compacting",
        group: "older hook API",
        when: "before the model summarizes for a compaction",
        payload: &[
            f("sessionId", "string", "the session's id"),
            f("messages", "AgentMessage[]", "the messages to summarize"),
        ],
        result: "`{context?: string[], prompt?: string, preserveData?: any}`",
        combine: "the last result wins: `context` lines are added to the summary request, `prompt` replaces its instructions, `preserveData` goes into the entry's details",
    },
];

/// Host entries that are declared in the header but do not do everything yet, with what they
/// do now (rendered into the header and docs/events.md).
pub const NOT_YET: &[(&str, &str)] = &[];

/// The event named `name`, if the host emits it.
pub fn find(name: &str) -> Option<&'static EventSpec> {
    EVENTS.iter().find(|e| e.name == name)
}

/// The reference as Markdown (`docs/events.md`).
pub fn markdown() -> String {
    let mut out = String::from(
        "# Event reference\n\n\
         Generated from `abi/src/event_reference.rs` by `scripts/gen-header.sh` (which also puts a\n\
         short form into `include/pi_hooks.h`); edit the table there, not this file.\n\n\
         Every payload is a JSON object with `type` (the event's name) and the fields below, with\n\
         pi's names and shapes; read them with `values->get` / `values->pointer` in C,\n\
         `event.get(\"...\")` in Rust. Types are written as in TypeScript (`T?`: may be missing).\n\
         Handlers run in load order, then registration order, one at a time.\n\n\
         pi-hooks follows pi 1.6.0's hooks (`@earendil-works/pi-coding-agent`). An event new\n\
         since pi 0.73.1 says the pi version that introduced it. Some exist only where pi has the\n\
         moment (provider streams, project trust, thinking levels): a native plugin gets them\n\
         inside pi through the pi bridge, and its entry says that pi-hooks' own modes do not\n\
         emit them. Fields marked \"through the bridge\" likewise come only from pi. Results\n\
         pi 1.6 added (`turn_end` and `agent_before_settle` `{entries, continue}`, `tool_call`\n\
         `terminate`, `message_end` `{message}`, `context_with_system`, `before_provider_headers`,\n\
         `project_trust`) are honoured in both places.\n",
    );
    let mut group = "";
    for event in EVENTS {
        if event.group != group {
            group = event.group;
            out.push_str(&format!("\n## {}\n", capitalized(group)));
        }
        out.push_str(&format!(
            "\n### `{}`\n\n{}.\n\n",
            event.name,
            capitalized(event.when)
        ));
        if let Some(version) = since(event.name) {
            out.push_str(&format!("New in pi {version}.\n\n"));
        }
        if event.payload.is_empty() {
            out.push_str("Payload: no fields besides `type`.\n\n");
        } else {
            out.push_str("| field | type | |\n|---|---|---|\n");
            for field in event.payload {
                out.push_str(&format!(
                    "| `{}` | `{}` | {} |\n",
                    field.name,
                    field.ty.replace('|', "\\|"),
                    field.doc.replace('|', "\\|")
                ));
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "Result: {}. Combination: {}.\n",
            event.result, event.combine
        ));
    }
    if !NOT_YET.is_empty() {
        out.push_str("\n## Not implemented yet\n\n");
        for (entry, note) in NOT_YET {
            out.push_str(&format!("- `{entry}`: {note}.\n"));
        }
    }
    out
}

/// The reference as the lines of a C comment block (without the comment markers), for the
/// header: one entry per event with its fields and result, wrapped at 92 columns.
pub fn header_lines() -> Vec<String> {
    let mut lines = vec![
        "Events (payload fields besides `type`; result; how results combine). The full".to_owned(),
        "reference with types is docs/events.md; both come from abi/src/event_reference.rs."
            .to_owned(),
    ];
    for event in EVENTS {
        let fields: Vec<&str> = event.payload.iter().map(|f| f.name).collect();
        let fields = if fields.is_empty() {
            "-".to_owned()
        } else {
            fields.join(", ")
        };
        lines.push(String::new());
        let since = since(event.name)
            .map(|v| format!(" [pi {v}]"))
            .unwrap_or_default();
        wrap(
            &mut lines,
            &format!("{} ({}){since}: {}", event.name, event.group, event.when),
            "  ",
            "    ",
        );
        wrap(&mut lines, &format!("payload: {fields}"), "    ", "      ");
        wrap(
            &mut lines,
            &format!("result: {}", event.result),
            "    ",
            "      ",
        );
        wrap(
            &mut lines,
            &format!("combine: {}", event.combine),
            "    ",
            "      ",
        );
    }
    if !NOT_YET.is_empty() {
        lines.push(String::new());
        lines.push("Not implemented yet:".to_owned());
        for (entry, note) in NOT_YET {
            wrap(&mut lines, &format!("{entry}: {note}"), "  ", "    ");
        }
    }
    lines
}

/// Appends `text` (backticks dropped) as lines of at most 92 columns: the first with `first`
/// in front, the others with `rest`.
fn wrap(lines: &mut Vec<String>, text: &str, first: &str, rest: &str) {
    const WIDTH: usize = 92;
    let text = text.replace('`', "");
    let mut line = first.to_owned();
    let mut empty = true;
    for word in text.split_whitespace() {
        if !empty && line.len() + 1 + word.len() > WIDTH {
            lines.push(std::mem::replace(&mut line, rest.to_owned()));
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    lines.push(line);
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_event_says_when_and_what() {
        for (i, event) in EVENTS.iter().enumerate() {
            assert!(
                EVENTS[..i].iter().all(|e| e.name != event.name),
                "{} twice",
                event.name
            );
            assert!(
                !event.when.is_empty() && !event.result.is_empty() && !event.combine.is_empty()
            );
        }
        assert_eq!(find("tool_call").unwrap().payload[0].name, "toolCallId");
        for (name, _) in SINCE {
            assert!(find(name).is_some(), "{name} has a version but no entry");
        }
        assert!(find("toolCall").is_none());
    }

    #[test]
    fn header_lines_never_close_the_comment() {
        assert!(header_lines().iter().all(|l| !l.contains("*/")));
    }
}
