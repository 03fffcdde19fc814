/*
 * WARNING: generated file, do not edit. It is generated from the Rust sources in abi/src/ffi
 * by scripts/gen-header.sh (the crate scripts/gen-header, configured by its cbindgen.toml).
 * Edit those and regenerate; `scripts/gen-header.sh --verify` and the gen-header tests fail
 * when this file is stale.
 */

/*
 * pi_hooks.h: the C ABI of pi-hooks native plugins, version 1
 * ============================================================
 *
 * A plugin is a shared library (.so, .dylib, .dll) that exports one function,
 * `pi_hooks_plugin_v1` (PI_HOOKS_ENTRY_SYMBOL), which returns a pointer to a static
 * PiPluginDescriptor: the ABI version the plugin was built for, its name and version, the
 * sizes of the ABI structs as it was compiled, and its init function. The macro
 * PI_HOOKS_PLUGIN(name, version, description, init, shutdown) writes both. The host checks
 * the descriptor before any other code of the plugin runs and refuses a plugin built for
 * another major, a newer minor or with other struct sizes.
 *
 * Getting this header: it comes with the pi-hooks binary (and the npm package pi-hooks, in
 * include/), no source tree needed. `pi-hooks sdk --print-include-dir` prints a folder holding
 * it and pi_hooks.hpp (cc -I"$(pi-hooks sdk --print-include-dir)" ...); `pi-hooks sdk --prefix
 * DIR` installs both with a pkg-config file (pkg-config --cflags pi-hooks) and a CMake package
 * (find_package(pi-hooks), target pi-hooks::headers); `pi-hooks new NAME --lang c` makes a
 * project whose Makefile and CMakeLists.txt find them either way.
 *
 * init(host, plugin) is then called once. `host` is a PiHostApi, a table of tables that stays
 * valid until the plugin is unloaded (keep the pointer in a static):
 *
 *     host->values    read event payloads and other host values      (PiValueApi)
 *     host->results   build the result of a handler, command or tool (PiResultApi)
 *     host->registry  register handlers, commands, tools, renderers, flags, shortcuts
 *                     (during init only) and cleanups                (PiRegistryApi)
 *     host->actions   messages, session entries, exec, timers, active tools, flags, log,
 *                     who the plugin is and its own folder (identity, data_dir; ABI 1.6)
 *                                                                     (PiActionsApi)
 *     host->context   the context of one call: cwd, mode, session, set_error (PiContextApi)
 *     host->ui        dialogs, notifications, status, widgets, editor (PiUiApi)
 *
 * `plugin` identifies this loaded instance: pass it to every registry and actions function.
 * Each table starts with its `struct_size` and only ever grows at its end: to call an entry
 * added in a later minor, check host->abi_minor (or the table's struct_size) first.
 *
 * Strings are PiStr {ptr, len}: UTF-8, pointer plus length. Build them with pi_str("text"),
 * pi_str_n(ptr, len), or PI_STR_LIT("text") in a static initialiser.
 *
 * Ownership
 * - What the host hands you is borrowed: event payloads, tool parameters, strings, and every
 *   PiValue reached from another through get/at/entry/pointer. It stays valid until your
 *   handler returns (or its owning value is freed). Never free it. Host strings are also
 *   NUL-terminated (ptr[len] == 0), so they may go to printf("%s") and strstr.
 * - A PiValue you receive through a `PiValue **out` parameter (exec, dialogs, session reads,
 *   parse) or from values->new_* and values->copy is owned by you: free it exactly once with
 *   host->values->free, unless you handed it to values->push or values->set, which take it.
 * - What you hand the host (strings, JSON text, definition structs) is copied before the call
 *   returns: you may free or reuse it right after. user_data pointers are kept as given; free
 *   them in a cleanup registered with host->registry->add_cleanup.
 * - The descriptor and its strings must stay valid while the library is loaded (statics).
 *
 * Threading
 * - The host never calls one plugin concurrently with itself: its handlers, commands, tools
 *   and timer callbacks are serialised, so plugin state needs no lock unless the plugin starts
 *   threads of its own. Host functions may be called from any thread, with one exception: a
 *   PiContext and a PiResult belong to one call and work only on the thread running that call
 *   (elsewhere, or after the call returned, they answer PI_ERR_INVALID_ARG). From a thread of
 *   your own, use the PiPlugin handle's actions.
 * - A host function never calls back into the plugin: actions that lead to events
 *   (send_user_message, a triggered turn, reload) are queued and run after the call returns.
 *
 * Status codes
 * - Every fallible function returns a PiStatus (int32_t): PI_OK (0) or a PI_ERR_* code.
 * - To fail a handler, describe the error with host->context->set_error(ctx, message) and
 *   return an error such as PI_ERR. The host reports it and calls the next handler; in
 *   `tool_call` any error blocks the tool (it fails closed).
 * - C++: an exception must never escape into the host (that is undefined behaviour); see
 *   pi_hooks::guard in pi_hooks.hpp.
 *
 * Example: a plugin that blocks `rm -rf` in bash tool calls. Build it with
 *     cc -std=c11 -shared -fPIC -I include -o libno_rm_rf.so no_rm_rf.c
 * and put the library where pi-hooks looks for plugins.
 *
 * -------- begin example: no_rm_rf.c --------
 * #include <string.h>
 * #include "pi_hooks.h"
 *
 * static const PiHostApi *host;
 *
 * static PiStatus on_tool_call(void *user_data, const PiValue *event, PiContext *ctx,
 *                              PiResult *result) {
 *     const PiValueApi *v = host->values;
 *     PiStr tool = {0}, command = {0};
 *     (void)user_data;
 *     (void)ctx;
 *     if (v->as_str(v->get(event, pi_str("toolName")), &tool) != PI_OK ||
 *         strcmp(tool.ptr, "bash") != 0)
 *         return PI_OK;
 *     if (v->as_str(v->pointer(event, pi_str("/input/command")), &command) != PI_OK ||
 *         strstr(command.ptr, "rm -rf") == NULL)
 *         return PI_OK;
 *     host->results->set_bool(result, pi_str("block"), true);
 *     host->results->set_string(result, pi_str("reason"), pi_str("rm -rf is not allowed"));
 *     return PI_OK;
 * }
 *
 * static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
 *     host = h;
 *     return host->registry->on(plugin, pi_str("tool_call"), on_tool_call, NULL);
 * }
 *
 * PI_HOOKS_PLUGIN("no-rm-rf", "0.1.0", "Blocks rm -rf in bash", init, NULL);
 * -------- end example --------
 *
 * The rest of this file: constants and types generated from abi/src/ffi (one section per
 * topic of the ABI), then the helpers for C and C++ authors (PI_HOOKS_PLUGIN and friends).
 *
 * Events (payload fields besides `type`; result; how results combine). The full
 * reference with types is docs/events.md; both come from abi/src/event_reference.rs.
 *
 *   session_directory (session): once at start-up, before the session file is opened, when no
 *     --session-dir was given (a later pi event)
 *     payload: cwd
 *     result: {sessionDir: string}
 *     combine: the last handler that returns a sessionDir wins
 *
 *   session_start (session): when a session starts: at start-up, after /reload, and after a
 *     new, resumed or forked session replaced the current one
 *     payload: reason, previousSessionFile
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   resources_discover (session): after session_start (reason "startup") and after /reload
 *     (reason "reload")
 *     payload: cwd, reason
 *     result: {skillPaths?: string[], promptPaths?: string[], themePaths?: string[]}
 *     combine: paths accumulate in load order, each tagged with its plugin
 *
 *   session_before_switch (session): before a new session (/new, ctx.newSession) or a resume
 *     (switch_session) replaces the current one
 *     payload: reason, targetSessionFile
 *     result: {cancel?: boolean}
 *     combine: the first {cancel: true} stops the chain and the switch; otherwise the last
 *       result
 *
 *   session_before_fork (session): before the session is forked at an entry (fork, ctx.fork)
 *     payload: entryId, position
 *     result: {cancel?: boolean} (skipConversationRestore is ignored, as pi 0.73.1 ignores it:
 *       the session always goes on from the forked file)
 *     combine: the first {cancel: true} stops the chain and the fork; otherwise the last
 *       result
 *
 *   session_before_compact (session): before a compaction (manual, by a plugin, or automatic
 *     at the context threshold)
 *     payload: preparation, branchEntries, customInstructions, reason, willRetry
 *     result: {cancel?: boolean, compaction?: CompactionResult}, or a plain string (the
 *       summary)
 *     combine: the first {cancel: true} stops the chain; otherwise the last result; a
 *       compaction (or string) replaces the model's summary
 *
 *   session_compact (session): after a compaction entry was written
 *     payload: compactionEntry, fromExtension, reason, willRetry
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   auto_compaction_start (session): when the host compacts by itself (oh-my-pi's event):
 *     after a run whose context passed the threshold, or after the provider refused an
 *     overflowing context; before session_before_compact
 *     payload: reason
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   auto_compaction_end (session): when an automatic compaction ended (oh-my-pi's event),
 *     after session_compact when it wrote one
 *     payload: reason, result, aborted, willRetry, errorMessage
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   auto_retry_start (session): when a run that failed with a transient model error (a rate
 *     limit, an overloaded or unreachable server) is about to be retried (settings.json
 *     retry), after its agent_end; the retry's agent_start follows the delay. pi prints it to
 *     its clients only; plugins get it as in oh-my-pi
 *     payload: attempt, maxAttempts, delayMs, errorMessage
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   auto_retry_end (session): when retrying ended: the first answer that is not an error
 *     (success: true, right after its message_end), the retries used up, or the wait cancelled
 *     by an abort or RPC abort_retry (finalError: "Retry cancelled")
 *     payload: success, attempt, finalError
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_before_tree (session): before the session's leaf moves to another entry
 *     (navigate_tree, ctx.navigateTree)
 *     payload: preparation
 *     result: {cancel?: boolean, summary?: {summary, details?}, customInstructions?,
 *       replaceInstructions?, label?}
 *     combine: the first {cancel: true} stops the chain; otherwise the last result
 *
 *   session_tree (session): after the leaf moved
 *     payload: newLeafId, oldLeafId, summaryEntry, fromExtension
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_shutdown (session): when a session ends: quit (stdin closed, end of a print run),
 *     /reload, or before a new, resumed or forked session replaces it
 *     payload: reason, targetSessionFile
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   model_select (session): when the model changes (set_model, cycling, or restored when a
 *     session resumes)
 *     payload: model, previousModel, source
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   thinking_level_select (session): when the thinking level changes; pi-hooks' own modes have
 *     no thinking levels (always "off") and never emit it: a plugin gets it inside pi, through
 *     the bridge
 *     payload: level, previousLevel
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_info_changed (session) [pi 0.80.3]: when the session's name changes (RPC
 *     set_session_name, pi's /name); pi-hooks' own modes emit it after RPC set_session_name
 *     payload: name
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_compact_failed (session) [pi 0.84.3]: when a compaction failed ("Nothing to
 *     compact", a summary that failed) or was cancelled by a session_before_compact handler,
 *     after auto_compaction_end for an automatic one
 *     payload: reason, errorMessage, aborted, willRetry, fromExtension
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   project_trust (session) [pi 0.79.0]: inside pi (through the bridge), when pi asks whether
 *     the project folder may run its code (.pi settings, extensions, packages), before project
 *     resources load; only user-level plugins are asked. pi-hooks' own modes use their own
 *     trust pin and do not emit it
 *     payload: cwd
 *     result: {trusted: "yes" | "no" | "undecided", remember?: boolean}
 *     combine: the first yes or no decides and stops the chain; undecided asks the next
 *       handler
 *
 *   input (input): for each prompt before it starts a run (not for slash commands of plugins,
 *     which run the command instead)
 *     payload: text, images, source, streamingBehavior
 *     result: {action: "continue"}, {action: "transform", text, images?}, {action: "handled"},
 *       or a plain string (a transform)
 *     combine: transforms chain; the first handled stops the chain and the prompt
 *
 *   user_bash (input): when the user runs a shell command with !cmd / !!cmd in the interactive
 *     mode (or in pi, through the bridge), before it runs; RPC's bash command does not fire it
 *     (nor does pi's)
 *     payload: command, excludeFromContext, cwd
 *     result: {result: BashResult} ({output, exitCode?, cancelled, truncated}: shown and
 *       recorded, the command does not run), or {command?, cwd?, env?} (run this command, in
 *       this folder, with these variables, instead); pi's {operations} form carries TypeScript
 *       functions and exists only in pi
 *     combine: the first handler with a result wins
 *
 *   before_agent_start (agent): once per prompt, after input, before the run
 *     payload: prompt, images, systemPrompt
 *     result: {message?: {customType, content, display, details?}, systemPrompt?: string};
 *       context->set_system_prompt works too
 *     combine: messages accumulate in order (each becomes a custom message after the prompt);
 *       systemPrompt chains, an empty one restores the base prompt
 *
 *   agent_start (agent): when a run starts
 *     payload: -
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   turn_start (agent): before each model request of a run
 *     payload: turnIndex, timestamp
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   context (agent): before each model request, with the messages about to be sent
 *     payload: messages
 *     result: {messages: AgentMessage[]}
 *     combine: chains: each handler sees the previous handler's messages; the last ones are
 *       sent (the session is not changed)
 *
 *   context_with_system (agent) [pi 0.87.0]: before each model request, after every context
 *     handler, with the whole transcript pi sends, its system messages included (pi 1.6);
 *     pi-hooks' own modes keep the system prompt out of the transcript, so there it holds the
 *     same conversation as context
 *     payload: messages
 *     result: {messages: AgentMessage[]}
 *     combine: chains: each handler sees the previous handler's messages; the last ones are
 *       sent as returned (in pi, a handler that drops the leading system message is reported)
 *
 *   message_start (agent): when a message (user, assistant, tool result, custom) starts
 *     payload: message
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   message_update (agent): for each streamed piece of an assistant message
 *     payload: message, assistantMessageEvent
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   message_end (agent): when a message is complete, before the session stores it (pi 1.6's
 *     order)
 *     payload: message
 *     result: {message?: AgentMessage}: replaces the message (same role only; else reported:
 *       message_end handlers must return a message with the same role); the session, the
 *       context and the clients get the replacement
 *     combine: chains: each handler sees the message as replaced so far
 *
 *   turn_end (agent): after each turn (the assistant message and its tool results, stored in
 *     the session); a boundary since pi 0.87.0
 *     payload: turnIndex, message, toolResults, messageEntryId, toolResultEntryIds, entries,
 *       continue, context, outcome
 *     result: {entries?: SessionBoundaryDraft[], continue?: boolean}: the entries to append
 *       after the handlers ran (the last entries given replaces the earlier ones), and whether
 *       to make one more model request. pi-hooks' own modes write custom and custom_message
 *       entries (a custom message joins the context) and report context_edit and compaction
 *       ones as not written; a continue without a context that can continue is reported (...
 *       requested continuation without runnable model context)
 *     combine: chains: each handler sees entries and continue as left by the ones before; a
 *       malformed entries is reported (Invalid boundary entries: ...) and then no entries are
 *       written and no request is made, unless a later handler gives valid ones
 *
 *   agent_end (agent): when a run ends (also after an abort or an error); not the end of the
 *     prompt: a retry, a compaction, agent_before_settle and agent_settled may follow
 *     payload: messages
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   agent_before_settle (agent) [pi 0.87.0]: after the prompt's last agent_end (and its
 *     retries and automatic compaction), before the agent settles; not after an abort. A
 *     continue starts one more run (agent_start ... agent_end) from the context as it is, then
 *     this event comes again; so does a message queued while the handlers ran (a client's
 *     follow_up, a plugin's send_user_message with deliverAs), as in pi 1.6
 *     payload: entries, continue, context, outcome
 *     result: {entries?: SessionBoundaryDraft[], continue?: boolean}: the entries to append
 *       after the handlers ran (the last entries given replaces the earlier ones), and whether
 *       to make one more model request. pi-hooks' own modes write custom and custom_message
 *       entries (a custom message joins the context) and report context_edit and compaction
 *       ones as not written; a continue without a context that can continue is reported (...
 *       requested continuation without runnable model context)
 *     combine: chains: each handler sees entries and continue as left by the ones before; a
 *       malformed entries is reported (Invalid boundary entries: ...) and then no entries are
 *       written and no request is made, unless a later handler gives valid ones
 *
 *   agent_settled (agent) [pi 0.80.4 (aborted 1.1.0)]: once per prompt, when the agent
 *     settled: no retry, compaction or continuation follows
 *     payload: aborted
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   ui_prompt_start (UI) [pi 0.84.4]: inside pi (through the bridge), when a blocking dialog
 *     (select, confirm, input, editor, custom) starts waiting for the user. The plugin that
 *     opens the dialog does not get it while its own call waits (a native plugin runs one call
 *     at a time): it sees both events after the dialog closed. pi-hooks' own modes do not emit
 *     it yet
 *     payload: reason, kind, title
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   ui_prompt_end (UI) [pi 0.84.4]: inside pi (through the bridge), when that dialog no longer
 *     waits (answered, cancelled, timed out); pi-hooks' own modes do not emit it yet
 *     payload: reason, kind, title
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   before_provider_request (provider): before each request to the model provider, with the
 *     request body
 *     payload: payload
 *     result: any value, even null: the new request body (returning nothing keeps it)
 *     combine: chains: each handler sees the previous handler's body
 *
 *   before_provider_headers (provider) [pi 0.80.4]: after a provider request's headers are
 *     assembled, before the HTTP call (pi 0.80.4): inside pi (through the bridge), and in
 *     pi-hooks' own OpenAI-compatible provider (header names in lower case; the scripted model
 *     sends no HTTP request)
 *     payload: headers
 *     result: {headers: {name: string | null}}: set these headers, null deletes one (pi's
 *       handlers change event.headers in place; a native handler returns the changes)
 *     combine: merged in order: each handler sees the headers as changed so far
 *
 *   after_provider_response (provider): when the provider's response headers arrive (pi-hooks'
 *     own scripted provider reports status 200 and no headers)
 *     payload: status, headers
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   tool_call (tools): before each tool runs, after its arguments were validated and coerced
 *     as pi 1.6 does (input is the coerced arguments; invalid arguments end the call before
 *     this event: docs/sessions.md, Tool arguments)
 *     payload: toolCallId, toolName, input, parentToolCallId
 *     result: {block: true, reason?: string, terminate?: boolean} or {input: object};
 *       terminate (pi 0.84.1) with a block asks the agent to stop after this tool batch: the
 *       run ends after the batch when every call of it was blocked with terminate
 *     combine: the first block wins: the tool does not run (its reason becomes the tool's
 *       error result) and later handlers, of this plugin and of plugins after it, are not
 *       called for this call; a handler error, panic or timeout also blocks (fail closed). An
 *       input replaces the call's arguments (pi's handlers mutate event.input in place): later
 *       handlers see it in their input, the tool runs with the last one given and
 *       tool_result's input is that one, while tool_execution_*'s args keep the model's
 *       arguments; it is not validated again; a block after it still wins, and an input that
 *       is not an object blocks the tool (fail closed). C: results->set_value(result,
 *       pi_str("input"), copy) after changing a values->copy of the payload's input, or
 *       set_field_json; C++: result.rewrite_input(json); Rust: ToolCallDecision::rewrite(json)
 *
 *   tool_execution_start (tools): when a tool starts running
 *     payload: toolCallId, toolName, args, parentToolCallId
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   tool_execution_update (tools): for each partial result of a running tool (the output as
 *     the tool streamed it: tool_result handlers do not patch it, in pi too; a client shows it
 *     while the tool runs, the model never sees it)
 *     payload: toolCallId, toolName, args, partialResult, parentToolCallId
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   tool_result (tools): after a tool ran (also when it failed), before its result reaches the
 *     model
 *     payload: toolCallId, toolName, input, content, details, isError, structuredContent,
 *       usage, parentToolCallId
 *     result: {content?, details?, isError?} (the fields to replace); inside pi also
 *       structuredContent? and usage? (replacing content without structuredContent drops it
 *       there)
 *     combine: patches chain: each handler sees the result as patched so far. A patch changes
 *       what the model sees and the session stores, not the tool_execution_update lines
 *       already streamed to the client (pi behaves the same): a redactor that must also keep a
 *       secret off the screen blocks the call in tool_call (a command that prints a key file,
 *       say), or provides the tool itself as a plugin tool that redacts each update before
 *       tool_update
 *
 *   tool_execution_end (tools): when a tool's final result is known (after tool_result)
 *     payload: toolCallId, toolName, result, isError, durationMs, parentToolCallId
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session (older hook API): beside the split session events, with a reason: start,
 *     before_switch, switch, clear (new session), before_branch, branch, shutdown
 *     payload: reason, entries, sessionFile, previousSessionFile, targetSessionFile,
 *       targetTurnIndex
 *     result: {cancel?: boolean} for the before_* reasons
 *     combine: the first {cancel: true} cancels; otherwise ignored
 *
 *   session_switch (older hook API): after a new or resumed session replaced the current one
 *     payload: reason, previousSessionFile
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_fork (older hook API): after a fork replaced the current session
 *     payload: previousSessionFile
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session_before_branch (older hook API): before a fork (the older name of
 *     session_before_fork)
 *     payload: entryId
 *     result: {cancel?: boolean}
 *     combine: the first {cancel: true} stops the chain and the fork
 *
 *   session_branch (older hook API): after a fork (the older name of session_fork)
 *     payload: previousSessionFile
 *     result: ignored
 *     combine: every handler runs; results are ignored
 *
 *   session.compacting (older hook API): before the model summarizes for a compaction
 *     payload: sessionId, messages
 *     result: {context?: string[], prompt?: string, preserveData?: any}
 *     combine: the last result wins: context lines are added to the summary request, prompt
 *       replaces its instructions, preserveData goes into the entry's details
 */


#ifndef PI_HOOKS_H
#define PI_HOOKS_H

#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/**
 * Log level: debugging detail.
 */
#define PI_LOG_DEBUG 0

/**
 * Log level: information.
 */
#define PI_LOG_INFO 1

/**
 * Log level: something looks wrong.
 */
#define PI_LOG_WARN 2

/**
 * Log level: something failed.
 */
#define PI_LOG_ERROR 3

/**
 * `send_user_message` / `send_message` delivery: the default of the call (see there).
 */
#define PI_DELIVER_DEFAULT 0

/**
 * Deliver while the agent is streaming, interrupting it after the current tool.
 */
#define PI_DELIVER_STEER 1

/**
 * Deliver after the agent finishes its current run.
 */
#define PI_DELIVER_FOLLOW_UP 2

/**
 * (`send_message` only) attach to the next user prompt; never triggers a turn.
 */
#define PI_DELIVER_NEXT_TURN 3

/**
 * (`PiExecRequest::flags`, ABI 1.3) Also stop the program when the agent's current run is
 * aborted (Esc in the terminal, RPC `abort`), as pi's `exec` with `signal: ctx.signal`:
 * SIGTERM, then SIGKILL 5 s later, and the result has `"killed": true`. Outside a run the
 * flag changes nothing.
 */
#define PI_EXEC_CANCEL_ON_ABORT 1

/**
 * Mode: print mode (`-p`), plain text out, no UI.
 */
#define PI_MODE_PRINT 1

/**
 * Mode: JSON event stream out, no UI.
 */
#define PI_MODE_JSON 2

/**
 * Mode: RPC over stdin/stdout; dialogs go to the client.
 */
#define PI_MODE_RPC 3

/**
 * Mode: interactive terminal.
 */
#define PI_MODE_INTERACTIVE 4

/**
 * Mode: a tool such as `pi-hooks inspect` loaded the plugin without a session.
 */
#define PI_MODE_INSPECT 5

/**
 * A boolean flag: `--name` sets it to true.
 */
#define PI_FLAG_BOOLEAN 1

/**
 * A string flag: `--name value`.
 */
#define PI_FLAG_STRING 2

/**
 * `notify` level: information.
 */
#define PI_NOTIFY_INFO 0

/**
 * `notify` level: warning.
 */
#define PI_NOTIFY_WARNING 1

/**
 * `notify` level: error.
 */
#define PI_NOTIFY_ERROR 2

/**
 * `set_widget` placement: above the editor, said so (RPC's `widgetPlacement:
 * "aboveEditor"`).
 */
#define PI_WIDGET_ABOVE_EDITOR 0

/**
 * `set_widget` placement: below the editor.
 */
#define PI_WIDGET_BELOW_EDITOR 1

/**
 * (ABI 1.7) `set_widget` placement: none given, as pi's `setWidget(key, lines)` without
 * options. The widget is drawn above the editor, and RPC's `setWidget` request carries no
 * `widgetPlacement` (pi leaves it out then). A host older than 1.7 refuses it
 * (`PI_ERR_INVALID_ARG`); the C++ and Rust helpers pass it when no placement is given.
 */
#define PI_WIDGET_DEFAULT 2

/**
 * Kind of a NULL pointer (an absent field).
 */
#define PI_VALUE_ABSENT 0

/**
 * JSON `null`.
 */
#define PI_VALUE_NULL 1

/**
 * `true` or `false`.
 */
#define PI_VALUE_BOOL 2

/**
 * A number (read it with `as_int` or `as_float`).
 */
#define PI_VALUE_NUMBER 3

/**
 * A string.
 */
#define PI_VALUE_STRING 4

/**
 * An array.
 */
#define PI_VALUE_ARRAY 5

/**
 * An object (keys keep their order).
 */
#define PI_VALUE_OBJECT 6

/**
 * ABI major version. A plugin whose major differs from the host's is refused: the entry
 * symbol carries the major in its name (`pi_hooks_plugin_v1`), so a plugin for another major
 * is not even found. The major changes only for a break that cannot be made by appending.
 */
#define PI_HOOKS_ABI_MAJOR 1

/**
 * ABI minor version. A minor adds fields and functions at the end of structs and tables,
 * never anything else. A host of minor N loads plugins built for minors 0..=N; a plugin built
 * for a minor newer than the host's is refused (it may call entries the host lacks).
 *
 * Minor 1 appended `PiActionsApi::set_model`; minor 2 appended the value builders to
 * `PiValueApi` (`new_object` ... `json_quote`) and `PiResultApi::set_from_value`; minor 3
 * appended `PiValueApi::replace_text` and gave `PiExecRequest`'s reserved field its use as
 * `flags` (`PI_EXEC_CANCEL_ON_ABORT`); minor 4 appended `PiContextApi::is_aborted` and
 * `PiActionsApi::send_user_message_content` and `exec_cancel`; minor 5 added the status
 * `PI_ERR_DENIED` (a confined plugin's grant refused an action); minor 6 appended
 * `PiActionsApi::identity` and `data_dir` (who the plugin is, and its own folder); minor 7
 * (pi 1.6's hook surface) appended `PiContextApi::is_project_trusted`,
 * `system_prompt_options` and `thinking_level`, and added the widget placement
 * `PI_WIDGET_DEFAULT` (no placement given).
 */
#define PI_HOOKS_ABI_MINOR 7

/**
 * An opaque context, valid until the handler, command, tool, timer or callback it was given
 * to returns, on the thread running that call. Do not keep it, nor hand it to another
 * thread; keep the `PiPlugin` handle instead. The host checks every context it is given: one
 * kept past its call (used in a later event), used from another thread, or never handed out
 * answers `PI_ERR_INVALID_ARG` (or an empty string / false / NULL where a function returns no
 * status), never a crash.
 */
typedef struct PiContext PiContext;

/**
 * An opaque handle for one loaded instance of a plugin, handed to `init`. Valid until the
 * plugin's shutdown returns; pass it to registrations and actions (also from timers and
 * threads the plugin started). After the plugin is retired, calls through it answer
 * `PI_ERR_CANCELLED`; a pointer the host never handed out answers `PI_ERR_INVALID_ARG`.
 */
typedef struct PiPlugin PiPlugin;

/**
 * An opaque result under construction, owned by the host and valid until the call returns.
 * Unlike the other host functions, the setters are not thread-safe: use a result only from
 * the thread that runs the handler it was given to. A result used from another thread, after
 * its call returned, or one the host never handed out answers `PI_ERR_INVALID_ARG`.
 *
 * It starts out as "no result" (the handler returned nothing). Either give it a whole JSON
 * document with `set_json`, or set fields one by one, which makes it an object. For example a
 * `tool_call` handler blocks a tool with
 * `set_bool(r, pi_str("block"), true); set_string(r, pi_str("reason"), pi_str("why"));`.
 */
typedef struct PiResult PiResult;

/**
 * An opaque, read-only value owned by the host: null, bool, number, string, array or object.
 *
 * Two kinds of pointer reach a plugin:
 * - **borrowed**: event payloads, tool parameters, and every value reached from another value
 *   through `get`, `at`, `entry` or `pointer`. Valid until the handler returns (or until the
 *   owning value is freed); never free them.
 * - **owned**: values a host function hands back through a `PiValue **out` parameter (exec
 *   results, dialog answers, session reads, `parse`), and (ABI 1.2) those `new_*` and `copy`
 *   return. Free each exactly once with `values->free`, unless you gave it to `push` or
 *   `set`.
 *
 * Every accessor accepts NULL and then answers as for an absent value, so lookups can be
 * chained without checks: `v->get(v->get(event, pi_str("input")), pi_str("command"))`.
 *
 * Since ABI 1.2 a plugin can also **build** owned values (`new_object`, `new_array`,
 * `new_string`, ..., `copy`) and change them (`push`, `set`); see `PiValueApi`. Only an owned
 * value can be changed: borrowed ones stay read-only.
 */
typedef struct PiValue PiValue;

/**
 * A status code: `PI_OK` or one of the `PI_ERR_*` values.
 */
typedef int32_t PiStatus;

/**
 * A borrowed UTF-8 string: `len` bytes at `ptr`.
 *
 * - `ptr` may be NULL only when `len` is 0. Where a function documents that a NULL `ptr`
 *   means "absent" (for example "clear this status"), `{NULL, 0}` and `{"", 0}` differ.
 * - Strings the **host** hands out are also NUL-terminated (`ptr[len] == 0`), so C code may
 *   pass `ptr` to `printf("%s")`; they may still contain interior NULs if the data does.
 * - Strings a **plugin** hands the host need no terminator; the host copies them before the
 *   call returns, so the plugin may free or reuse the memory right after.
 * - The host checks UTF-8 and answers `PI_ERR_UTF8` when it is not.
 *
 * In C, `pi_str("text")` builds one from a NUL-terminated string and `PI_STR_LIT("text")`
 * initialises one from a literal in a static initialiser.
 */
typedef struct PiStr {
    /**
     * First byte, or NULL when `len` is 0.
     */
    const char *ptr;
    /**
     * Length in bytes, without any terminating NUL.
     */
    size_t len;
} PiStr;

/**
 * A program to run with `exec`: no shell is involved. Strings are copied during the call.
 */
typedef struct PiExecRequest {
    /**
     * `sizeof(PiExecRequest)`.
     */
    uint32_t struct_size;
    /**
     * `PI_EXEC_*` flags (ABI 1.3; before, this field was reserved and 0, which is still
     * "no flags"). An unknown flag is refused with `PI_ERR_INVALID_ARG`.
     */
    uint32_t flags;
    /**
     * The program, found through `PATH` when it has no slash.
     */
    struct PiStr program;
    /**
     * `arg_count` arguments (NULL when 0).
     */
    const struct PiStr *args;
    /**
     * Number of `args`.
     */
    size_t arg_count;
    /**
     * Working directory; empty for the session's cwd.
     */
    struct PiStr cwd;
    /**
     * Time limit in milliseconds, 0 for none. When it runs out the process gets SIGTERM, then
     * SIGKILL 5 s later, and the result has `"killed": true`.
     */
    uint64_t timeout_ms;
} PiExecRequest;

/**
 * A timer callback. `ctx` is a context for this call, valid until the callback returns.
 * An error status is reported like a handler error.
 */
typedef PiStatus (*PiTimerFn)(void *user_data, uint64_t timer_id, struct PiContext *ctx);

/**
 * A callback for the shared event bus (`events_on`). `channel` (NUL-terminated) and `data`
 * (the emitted JSON as a value; `null` for empty data) are borrowed until it returns. There is
 * no context: the callback runs outside any event. An error status is reported by the host as
 * `Extension error (<path>): Event handler error (<channel>): ...` and the other subscribers
 * still run.
 */
typedef PiStatus (*PiBusHandler)(void *user_data, struct PiStr channel, const struct PiValue *data);

/**
 * Actions. Each takes the plugin handle from `init`. During `init` only `log`, `get_flag`,
 * `events_emit`, `events_on`, `identity` and `data_dir` work; the others answer `PI_ERR_UNAVAILABLE`, as they do in a
 * mode that lacks the service.
 * Actions that lead to events (`send_user_message`, a triggered turn) are queued and run after
 * the current handler returns: a plugin never re-enters itself.
 */
typedef struct PiActionsApi {
    /**
     * `sizeof(PiActionsApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * Writes a line to the host's log, tagged with the plugin. `level` is a `PI_LOG_*`.
     */
    void (*log)(struct PiPlugin *plugin, uint32_t level, struct PiStr message);
    /**
     * Sends a custom message. `message_json` is
     * `{"customType", "content" (string or content array), "display" (bool), "details"?}`;
     * `options_json` is empty or `{"triggerTurn"?: bool, "deliverAs"?: "steer" | "followUp" |
     * "nextTurn"}`. Delivered as pi 1.6 delivers it: `nextTurn` goes with the next prompt;
     * while the agent runs (handlers of its events, `agent_end` included), a message steers
     * the run (or follows up) and continues it, unless `triggerTurn` is false: then it waits
     * for the end of the turn (after `turn_end`'s handlers) or of the run, before it settles,
     * and starts nothing; while idle, `triggerTurn: true` starts a run, else it is appended
     * at once.
     */
    PiStatus (*send_message)(struct PiPlugin *plugin,
                             struct PiStr message_json,
                             struct PiStr options_json);
    /**
     * Sends text as if the user typed it (the `input` event fires with source "extension").
     * `deliver_as` is a `PI_DELIVER_*`; while the agent is busy, `PI_DELIVER_DEFAULT` fails.
     */
    PiStatus (*send_user_message)(struct PiPlugin *plugin, struct PiStr text, uint32_t deliver_as);
    /**
     * Appends a `custom` entry (`customType`, `data` from JSON text, empty for none) to the
     * session file. The entry is on disk when the call returns. The model never sees it;
     * plugins read it back from the session to rebuild their state.
     */
    PiStatus (*append_entry)(struct PiPlugin *plugin,
                             struct PiStr custom_type,
                             struct PiStr data_json);
    /**
     * Runs a program and waits for it (the calling thread blocks; call it from a handler, a
     * timer callback or a thread of the plugin's own). `*out` receives an owned object
     * `{"stdout", "stderr", "code", "killed"}`, plus `"signal"` when a signal ended the
     * program (free it with `values->free`). stdin is closed; stdout and stderr keep at most
     * 10 MiB each, the rest is discarded and a line `[output truncated at 10 MiB; N more
     * bytes discarded]` ends the stream. `code` is 0 when a signal ended the program (as in
     * pi). A program that cannot be started (not found, not executable, a cwd that does not
     * exist) gives `code` 1 and the reason in `stderr`, with `PI_OK`. The program runs in a
     * process group of its own; on timeout, or when the plugin is retired, the group gets
     * SIGTERM, then SIGKILL 5 s later. A reload retires the old version only once the call
     * that runs the program has returned, or after 2 s; the end of the session does not
     * wait. `PI_ERR_INVALID_ARG` for a NULL or too small request, an empty program or a
     * NULL `out`. `PI_ERR_DENIED` when the plugin runs confined and its grant's `exec` does
     * not name the program: nothing runs, and `*out` receives an owned object
     * `{"error": "<why>"}` (free it as a result).
     */
    PiStatus (*exec)(struct PiPlugin *plugin,
                     const struct PiExecRequest *request,
                     struct PiValue **out);
    /**
     * Starts a timer that calls `callback` after `delay_ms`, then every `interval_ms` if that
     * is not 0. Its id goes to `*timer_id` (may be NULL); ids count up from 1 per plugin
     * instance. Timers stop when the plugin is retired; a callback never runs concurrently
     * with another call into the plugin, runs under `hookTimeout` like a handler (an overrun
     * or an error status is reported, with the event name `timer`), and may call any action.
     * An interval skips ticks that come while its callback still runs. At most 10 000 timers
     * per plugin run at once (`PI_ERR` past that); a NULL `callback` is `PI_ERR_INVALID_ARG`.
     */
    PiStatus (*timer_start)(struct PiPlugin *plugin,
                            uint64_t delay_ms,
                            uint64_t interval_ms,
                            PiTimerFn callback,
                            void *user_data,
                            uint64_t *timer_id);
    /**
     * Stops a timer. `PI_ERR_NOT_FOUND` when it is not running (any more): an unknown id, a
     * cancelled timer, or a one-shot timer that has fired (also from its own callback).
     */
    PiStatus (*timer_cancel)(struct PiPlugin *plugin, uint64_t timer_id);
    /**
     * The names of the active tools as an owned array of strings in `*out`.
     */
    PiStatus (*get_active_tools)(struct PiPlugin *plugin, struct PiValue **out);
    /**
     * All tools as an owned array of `{"name", "description", "parameters"}` in `*out`.
     */
    PiStatus (*get_all_tools)(struct PiPlugin *plugin, struct PiValue **out);
    /**
     * Sets the active tools by name (unknown names are ignored); takes effect on the next turn.
     */
    PiStatus (*set_active_tools)(struct PiPlugin *plugin, const struct PiStr *names, size_t count);
    /**
     * The value of a flag this plugin registered, as an owned value in `*out` (NULL when
     * unset). `PI_ERR_NOT_FOUND` when this plugin did not register `name`.
     */
    PiStatus (*get_flag)(struct PiPlugin *plugin, struct PiStr name, struct PiValue **out);
    /**
     * Sets the session's display name.
     */
    PiStatus (*set_session_name)(struct PiPlugin *plugin, struct PiStr name);
    /**
     * The session's display name as an owned string value in `*out` (NULL when none).
     */
    PiStatus (*get_session_name)(struct PiPlugin *plugin, struct PiValue **out);
    /**
     * Sets (or, with a NULL `label.ptr`, clears) the label of a session entry.
     */
    PiStatus (*set_label)(struct PiPlugin *plugin, struct PiStr entry_id, struct PiStr label);
    /**
     * Emits `data_json` (JSON text, copied; empty for `null`) on the shared event bus channel
     * `channel` (pi's `pi.events.emit`). Every handler subscribed to `channel` at this moment,
     * of every plugin (the emitting one included), is called in subscription order after the
     * current call returns: emissions are queued and delivered one at a time in emission
     * order, so an emit from inside a bus handler is delivered after that handler returns.
     * A channel nobody subscribed to: `PI_OK`, nothing happens. `PI_ERR_INVALID_ARG` for a
     * channel with a NUL or data that is not JSON; `PI_ERR` while 10 000 emissions wait for
     * delivery. Works during `init` too (a subscriber still in its init is skipped).
     */
    PiStatus (*events_emit)(struct PiPlugin *plugin, struct PiStr channel, struct PiStr data_json);
    /**
     * Subscribes `handler` (called with `user_data`) to the shared event bus channel `channel`
     * (pi's `pi.events.on`). Works during `init` and later; subscribing twice gives two calls
     * per emission. The subscription ends when the plugin is retired (reload, end of the run);
     * there is no other unsubscribe. `PI_ERR_INVALID_ARG` for a NULL handler or a channel with
     * a NUL; `PI_ERR` past 10 000 subscriptions of one plugin.
     */
    PiStatus (*events_on)(struct PiPlugin *plugin,
                          struct PiStr channel,
                          PiBusHandler handler,
                          void *user_data);
    /**
     * (ABI 1.1) Selects the model `provider`/`model_id` among those the host's provider
     * offers (pi's `pi.setModel`). `*found` (may be NULL) is set to whether it is offered;
     * an unknown model is not an error (`PI_OK`, `*found` false), as pi's `setModel`
     * resolves to false. The model is used from the next model call on; the session gets a
     * `model_change` entry and plugins `model_select {model, previousModel, source:"set"}`
     * once the current call has returned. `PI_ERR_UNAVAILABLE` before a session runs
     * (during `init`, in `pi-hooks inspect`).
     */
    PiStatus (*set_model)(struct PiPlugin *plugin,
                          struct PiStr provider,
                          struct PiStr model_id,
                          bool *found);
    /**
     * (ABI 1.4) `send_user_message` with content blocks, as pi's `sendUserMessage` takes
     * `(TextContent | ImageContent)[]`: `content` (borrowed or owned, copied during the call)
     * is an array of `{"type":"text","text":…}` and `{"type":"image","data":<base64>,
     * "mimeType":…}` blocks. The texts, joined with newlines, are the `input` event's `text`,
     * the images its `images`, and the user message has them all. Delivery and errors as
     * `send_user_message`; `PI_ERR_INVALID_ARG` for content that is not such an array.
     */
    PiStatus (*send_user_message_content)(struct PiPlugin *plugin,
                                          const struct PiValue *content,
                                          uint32_t deliver_as);
    /**
     * (ABI 1.4) Stops every program this plugin's `exec` calls are running now, as an abort
     * stops one started with `PI_EXEC_CANCEL_ON_ABORT`: SIGTERM, SIGKILL 5 s later, and each
     * result has `"killed": true`. `exec` blocks its caller, so this is called from another
     * thread of the plugin (one it started, say, to stop a long handler's program when the
     * handler sees `context->is_aborted`). Programs started after it are not affected.
     */
    PiStatus (*exec_cancel)(struct PiPlugin *plugin);
    /**
     * (ABI 1.6) Who this plugin is, as everything the host keys by plugin knows it (its
     * grant, its `${data}` folder, its records): `*out` receives `package:<name>` for the
     * plugin of an installed package (its package name, `package:@acme/gate`, however it was
     * installed) or `library:<path>` for a plain library file (its canonical path,
     * `library:/home/u/plugins/libgate.so`). The text before the first `:` tells which;
     * nothing else starts either way. The string is borrowed from the host,
     * NUL-terminated, and stays valid and unchanged until the plugin is unloaded (do not free
     * it). Works during `init` too, and from any thread. `PI_ERR_INVALID_ARG` for a NULL
     * `out`, `PI_ERR_UTF8` for a library path that is not UTF-8 (`*out` untouched).
     * A plugin built for an older minor checks `struct_size` (or `host->abi_minor >= 6`)
     * first.
     */
    PiStatus (*identity)(struct PiPlugin *plugin, struct PiStr *out);
    /**
     * (ABI 1.6) This plugin's own folder, the absolute path `${data}` stands for in its
     * grant: `<agentDir>/pi-hooks/data/<one component for its identity>`, the same folder
     * in process, isolated (`--isolate`) and confined, and for a package the same however
     * it was installed. The host creates it on the first ask (mode 0700; a symlink, or
     * anything but a folder, in its place is refused with `PI_ERR`, not followed).
     * `*out` is borrowed as `identity`'s (NUL-terminated, valid until the plugin is
     * unloaded, not to be freed). Works during `init` too. `PI_ERR_INVALID_ARG` for a NULL
     * `out`; `PI_ERR_DENIED` for a confined plugin whose grant lets it neither read nor
     * write `${data}` (nothing is created); `PI_ERR` when the folder cannot be created
     * (the host logs why); `PI_ERR_UTF8` for a path that is not UTF-8.
     */
    PiStatus (*data_dir)(struct PiPlugin *plugin, struct PiStr *out);
} PiActionsApi;

/**
 * Functions on a `PiContext`. Strings returned by value are borrowed from the context and
 * NUL-terminated. Session-control functions (marked "command only") work only in a command
 * handler's context and answer `PI_ERR_UNAVAILABLE` elsewhere.
 */
typedef struct PiContextApi {
    /**
     * `sizeof(PiContextApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The plugin this call belongs to.
     */
    struct PiPlugin *(*plugin)(struct PiContext *ctx);
    /**
     * The session's working directory.
     */
    struct PiStr (*cwd)(struct PiContext *ctx);
    /**
     * Whether dialogs reach a user (interactive and RPC modes). Without UI, dialogs return
     * their defaults at once: select -1, confirm false, input and editor NULL.
     */
    bool (*has_ui)(struct PiContext *ctx);
    /**
     * The mode, one of `PI_MODE_*`.
     */
    uint32_t (*mode)(struct PiContext *ctx);
    /**
     * The session file's path; `{NULL, 0}` when the session is not saved.
     */
    struct PiStr (*session_file)(struct PiContext *ctx);
    /**
     * Describes the error the current call is about to return; the host reports the text.
     */
    void (*set_error)(struct PiContext *ctx, struct PiStr message);
    /**
     * The current system prompt (in `before_agent_start`, as chained so far).
     */
    struct PiStr (*get_system_prompt)(struct PiContext *ctx);
    /**
     * Replaces the system prompt for this agent run (`before_agent_start` only; elsewhere
     * `PI_ERR_UNAVAILABLE`). Same effect as returning `{"systemPrompt": ...}`.
     */
    PiStatus (*set_system_prompt)(struct PiContext *ctx, struct PiStr prompt);
    /**
     * Whether the agent is idle (not streaming).
     */
    bool (*is_idle)(struct PiContext *ctx);
    /**
     * Aborts the current agent run (queued; takes effect after this call returns).
     */
    PiStatus (*abort)(struct PiContext *ctx);
    /**
     * Whether steering or follow-up messages are waiting.
     */
    bool (*has_pending_messages)(struct PiContext *ctx);
    /**
     * All session entries, in file order, as an owned array in `*out`.
     */
    PiStatus (*session_entries)(struct PiContext *ctx, struct PiValue **out);
    /**
     * The entries of the current branch, root first, as an owned array in `*out`.
     */
    PiStatus (*session_branch)(struct PiContext *ctx, struct PiValue **out);
    /**
     * The id of the current leaf entry as an owned string in `*out` (NULL when empty).
     */
    PiStatus (*session_leaf_id)(struct PiContext *ctx, struct PiValue **out);
    /**
     * The current model as an owned object `{"provider", "id", ...}` in `*out` (NULL if none).
     */
    PiStatus (*model)(struct PiContext *ctx, struct PiValue **out);
    /**
     * Context window usage as an owned object `{"tokens", "contextWindow", "percent"}`
     * (pi's `getContextUsage`: tokens of the current context, estimated from the last
     * assistant usage and 4 characters a token after it). NULL before the first model call.
     */
    PiStatus (*context_usage)(struct PiContext *ctx, struct PiValue **out);
    /**
     * (tool execute only) Streams a partial result, JSON text shaped like a tool result;
     * emitted as `tool_execution_update`.
     */
    PiStatus (*tool_update)(struct PiContext *ctx, struct PiStr partial_json);
    /**
     * Asks the host to shut down (pi's `ctx.shutdown()`): in RPC mode, once the current
     * command is over, `session_shutdown {reason:"quit"}` goes to the plugins and the process
     * exits 0; print and JSON modes end after their prompts anyway (no change there).
     */
    PiStatus (*shutdown)(struct PiContext *ctx);
    /**
     * Asks for a compaction; `options_json` is empty or `{"customInstructions"?}`
     * (`PI_ERR_INVALID_ARG` otherwise). Works from any call; the compaction runs once the
     * current prompt or command is over: `session_before_compact` (cancel, or a custom
     * `compaction`), the summary, a `compaction` entry, `session_compact`. A failure ("Nothing
     * to compact", "Already compacted", cancelled) is reported as this plugin's error with
     * event "compact".
     */
    PiStatus (*compact)(struct PiContext *ctx, struct PiStr options_json);
    /**
     * (command only) Waits until the agent is idle: at once when it is, else until the
     * current run has ended (RPC mode runs a command sent during a run at once, as pi
     * does). While it waits, the plugin's other calls (its handlers for the run's events,
     * its timers) are not made: each is refused with "a command of the plugin is waiting
     * for the agent to be idle" (a `tool_call` it would gate is blocked, as for any refused
     * call), because native code cannot be entered twice and the run cannot wait for the
     * command that waits for it. Session operations asked for after the wait run once the
     * command returns.
     */
    PiStatus (*wait_for_idle)(struct PiContext *ctx);
    /**
     * (command only; `PI_ERR_UNAVAILABLE` elsewhere) Asks for a new session;
     * `options_json` is empty or `{"parentSession"?}` (`PI_ERR_INVALID_ARG` otherwise).
     *
     * Session operations (`new_session`, `fork`, `navigate_tree`, `switch_session`) are
     * performed once the command handler has returned, never during this call (their
     * `session_before_*` handlers may be this plugin's own), in the order asked.
     * `*cancelled` (may be NULL) is therefore always set to false: a cancellation is seen by
     * the `session_before_*` handler that makes it. A failure (an unknown entry, a file that
     * cannot be opened) is reported as this plugin's error, with the operation's name as
     * the event.
     *
     * New session, resume and fork run as pi 0.73.1 replaces its session:
     * `session_before_switch {reason:"new"|"resume", targetSessionFile?}` or
     * `session_before_fork {entryId, position}` can cancel; then `session_shutdown {reason,
     * targetSessionFile}`, the switch, `session_start {reason, previousSessionFile}` and
     * `resources_discover {reason:"startup"}`; then, for plugins written against pi's older hook API,
     * `session_switch {reason, previousSessionFile}` or `session_fork
     * {previousSessionFile}`. The plugins stay loaded (pi re-creates its extensions).
     */
    PiStatus (*new_session)(struct PiContext *ctx, struct PiStr options_json, bool *cancelled);
    /**
     * (command only) Forks the session before the user message `entry_id`: a new session
     * file holding the branch up to that message's parent (its text is what pi puts in the
     * editor). See `new_session` for when it happens and the events.
     */
    PiStatus (*fork)(struct PiContext *ctx, struct PiStr entry_id, bool *cancelled);
    /**
     * (command only) Moves the session's leaf to entry `target_id` of the same file (pi's
     * `navigateTree`); `options_json` is empty or `{"summarize"?, "customInstructions"?,
     * "replaceInstructions"?, "label"?}`. `session_before_tree {preparation, signal}` can
     * cancel or give the summary; with `summarize`, the branch left behind is summarized
     * into a `branch_summary` entry; then `session_tree {newLeafId, oldLeafId,
     * summaryEntry?, fromExtension?}`. See `new_session` for when it happens.
     */
    PiStatus (*navigate_tree)(struct PiContext *ctx,
                              struct PiStr target_id,
                              struct PiStr options_json,
                              bool *cancelled);
    /**
     * (command only) Resumes the session saved at `path`; its last model is selected again
     * when offered (`model_select {source:"restore"}`). See `new_session`.
     */
    PiStatus (*switch_session)(struct PiContext *ctx, struct PiStr path, bool *cancelled);
    /**
     * (command only) Reloads every plugin once the command handler has returned (pi's
     * `ctx.reload()`, which pi's commands await as their last step): `session_shutdown
     * {reason:"reload"}` on the old instances, a fresh load of every plugin (this one
     * included), `session_start` and `resources_discover {reason:"reload"}` on the new
     * ones. A plugin whose new version fails keeps running as it was.
     */
    PiStatus (*reload)(struct PiContext *ctx);
    /**
     * (ABI 1.4) Whether the agent's current run was aborted (Esc in the terminal, RPC
     * `abort`, a plugin's `abort`): pi's `ctx.signal.aborted`, so a long handler can stop
     * early. False outside a run and for a NULL or stale context. A plugin run by
     * `pi-hooks serve` gets the answer from the serve client: the host under `--isolate`,
     * pi's own `ctx.signal` through the pi bridge (pi hands extensions its events from a
     * queue, so a handler of an event pi delivers after the run ended reads false there, as a
     * pi extension would). The `signal` of `session_before_compact` and
     * `session_before_tree` payloads is `{aborted: false}`: this host cannot abort a
     * compaction or a tree move once it started.
     */
    bool (*is_aborted)(struct PiContext *ctx);
    /**
     * (ABI 1.7) Whether project-local trust is active for this session (pi 0.79.1's
     * `ctx.isProjectTrusted()`): inside pi, through the pi bridge, pi's own answer (its
     * `trust.json`, `defaultProjectTrust`, `--approve` / `--no-approve`); in pi-hooks' own
     * modes, whether the host trusts the working directory's project (false unless it says
     * so). False for a NULL or stale context.
     */
    bool (*is_project_trusted)(struct PiContext *ctx);
    /**
     * (ABI 1.7; command only, as in pi: `PI_ERR_UNAVAILABLE` elsewhere) The options the
     * base system prompt is built from (pi 0.78.1's `ctx.getSystemPromptOptions()`), as an
     * owned object in `*out`: `{cwd, selectedTools?, customPrompt?, appendSystemPrompt?,
     * promptGuidelines?, toolSnippets?, contextFiles?, skills?, ...}`. pi-hooks' own modes give
     * `{cwd, selectedTools}` (the active tools); through the bridge it is pi's object.
     */
    PiStatus (*system_prompt_options)(struct PiContext *ctx, struct PiValue **out);
    /**
     * (ABI 1.7) The current thinking level (pi's `ctx.thinkingLevel`): `"off"`,
     * `"minimal"`, `"low"`, `"medium"`, `"high"`, `"xhigh"` or `"max"`, borrowed from the
     * context. pi-hooks' own modes have no thinking levels and answer `"off"`; through the
     * bridge it is pi's level. An empty string for a NULL or stale context.
     */
    struct PiStr (*thinking_level)(struct PiContext *ctx);
} PiContextApi;

/**
 * Accessors for `PiValue`. All functions accept NULL values; none of them calls the plugin.
 */
typedef struct PiValueApi {
    /**
     * `sizeof(PiValueApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The kind of `value`: one of `PI_VALUE_*` (`PI_VALUE_ABSENT` for NULL).
     */
    uint32_t (*kind)(const struct PiValue *value);
    /**
     * The field `key` of an object, borrowed from `value`; NULL when `value` is not an object
     * or has no such field.
     */
    const struct PiValue *(*get)(const struct PiValue *value, struct PiStr key);
    /**
     * The value at a JSON Pointer (RFC 6901) such as `"/input/command"` or `"/content/0"`;
     * `""` is `value` itself. NULL when nothing is there.
     */
    const struct PiValue *(*pointer)(const struct PiValue *value, struct PiStr path);
    /**
     * The number of elements of an array or of fields of an object; 0 for anything else.
     */
    size_t (*len)(const struct PiValue *value);
    /**
     * Element `index` of an array, borrowed; NULL when out of range or not an array.
     */
    const struct PiValue *(*at)(const struct PiValue *value, size_t index);
    /**
     * Field number `index` of an object, borrowed, with its key in `*key_out` (borrowed as
     * long as the value); NULL when out of range or not an object.
     */
    const struct PiValue *(*entry)(const struct PiValue *value, size_t index, struct PiStr *key_out);
    /**
     * The string in `value` into `*out` (borrowed as long as the value, NUL-terminated).
     * `PI_ERR_WRONG_TYPE` when it is not a string.
     */
    PiStatus (*as_str)(const struct PiValue *value, struct PiStr *out);
    /**
     * The number in `value` as a 64-bit integer. `PI_ERR_WRONG_TYPE` when it is not a number
     * or not a whole number in range.
     */
    PiStatus (*as_int)(const struct PiValue *value, int64_t *out);
    /**
     * The number in `value` as a double. `PI_ERR_WRONG_TYPE` when it is not a number.
     */
    PiStatus (*as_float)(const struct PiValue *value, double *out);
    /**
     * The boolean in `value`. `PI_ERR_WRONG_TYPE` when it is not a boolean.
     */
    PiStatus (*as_bool)(const struct PiValue *value, bool *out);
    /**
     * The whole value as compact JSON text into `*out` (borrowed as long as the value,
     * NUL-terminated). A NULL value gives `PI_ERR_INVALID_ARG`.
     */
    PiStatus (*to_json)(const struct PiValue *value, struct PiStr *out);
    /**
     * Parses JSON text into a new owned value in `*out` (free it with `free`).
     * `PI_ERR_INVALID_ARG` when the text is not valid JSON.
     */
    PiStatus (*parse)(struct PiStr json, struct PiValue **out);
    /**
     * Frees an owned value (one handed out through a `PiValue **out` parameter, or made by
     * `new_*` or `copy`), with everything in it. NULL is ignored. Never pass a borrowed
     * value: the host ignores one (and a second free of the same value), but a plugin that
     * does so has a bug.
     */
    void (*free)(struct PiValue *value);
    /**
     * **Added in ABI 1.2**, as every entry below up to `json_quote`. A plugin built against
     * this header declares its ABI minor and a host older than that refuses to load it, so
     * they are there whenever its code runs.
     *
     * A new, empty owned object (`{}`). Like every `new_*` and `copy`, it returns a new owned
     * value (free it with `free`, or hand it to `push` or `set`, which take it over), or NULL
     * when it cannot be made. They nest:
     *
     * ```c
     * PiValue *block = v->new_object();
     * v->set(block, pi_str("type"), v->new_string(pi_str("text")));
     * v->set(block, pi_str("text"), v->new_string(pi_str("hello")));
     * v->push(content, block);   // content, an owned array, now owns block
     * ```
     *
     * A change (`push`, `set`) invalidates what was read from the changed value before: the
     * pointers `get`, `at`, `entry` and `pointer` gave, and the strings `as_str`, `entry` and
     * `to_json` gave. Read again after a change. An owned value is not thread-safe: use it
     * from one thread at a time.
     */
    struct PiValue *(*new_object)(void);
    /**
     * A new, empty owned array (`[]`).
     */
    struct PiValue *(*new_array)(void);
    /**
     * A new owned string holding a copy of `text`; NULL when `text` is not UTF-8 (or its
     * pointer is NULL with a length). Interior NULs are kept.
     */
    struct PiValue *(*new_string)(struct PiStr text);
    /**
     * A new owned number holding `value`.
     */
    struct PiValue *(*new_int)(int64_t value);
    /**
     * A new owned number holding `value`; NaN and the infinities give JSON `null` (as in
     * JSON, which has no such numbers).
     */
    struct PiValue *(*new_float)(double value);
    /**
     * A new owned `true` or `false`.
     */
    struct PiValue *(*new_bool)(bool value);
    /**
     * A new owned JSON `null`.
     */
    struct PiValue *(*new_null)(void);
    /**
     * A deep copy of `value` (borrowed or owned; a payload, a field of one, an exec result)
     * as a new owned value that can then be changed; NULL for NULL. This is how a plugin
     * edits part of a payload: copy it, change the copy, give the copy to the result.
     */
    struct PiValue *(*copy)(const struct PiValue *value);
    /**
     * Appends `item` to the owned array `array`, taking `item` over: afterwards `item`
     * belongs to the array (do not use or free it; read it back with `at`).
     * - `PI_ERR_INVALID_ARG`: `array` is NULL or not an owned value (a borrowed value, a
     *   value already given to another `push` or `set`, a freed one, a wild pointer), or
     *   `item` is NULL, not owned, or `array` itself.
     * - `PI_ERR_WRONG_TYPE`: `array` is not an array.
     *
     * On an error, `array` is unchanged and an owned `item` is freed (unless it is `array`),
     * so `push(a, new_string(s))` never leaks.
     */
    PiStatus (*push)(struct PiValue *array, struct PiValue *item);
    /**
     * Sets field `key` of the owned object `object` to `item`, taking `item` over as `push`
     * does. An existing field keeps its place and gets the new value (the old one is
     * freed); a new field is added at the end.
     * - `PI_ERR_INVALID_ARG`: as for `push` (`object` not owned, `item` NULL or not owned or
     *   `object` itself).
     * - `PI_ERR_WRONG_TYPE`: `object` is not an object.
     * - `PI_ERR_UTF8`: `key` is not UTF-8.
     *
     * On an error, `object` is unchanged and an owned `item` is freed (unless it is
     * `object`).
     */
    PiStatus (*set)(struct PiValue *object, struct PiStr key, struct PiValue *item);
    /**
     * Writes `text` as a JSON string literal, quotes included (`he said "hi"` becomes
     * `"he said \"hi\""`), into `buf` (`cap` bytes), NUL-terminated, when it fits. Returns
     * the length of the literal without the NUL, whether or not it fitted (as `snprintf`
     * does: call with `cap` 0 to learn the size, then with `len + 1`); nothing is written
     * unless the literal and its NUL fit. Returns 0 (a literal is at least 2 bytes) when
     * `text` is not UTF-8, or `buf` is NULL with a `cap`. Control characters become `\n`,
     * `\t`, `\u001b`, ...; other characters are kept as UTF-8.
     */
    size_t (*json_quote)(struct PiStr text, char *buf, size_t cap);
    /**
     * **Added in ABI 1.3.** Replaces every match of the regular expression `pattern` in the
     * text of `value` with `replacement`, and returns the result as a new owned value:
     * - `value` a string: the replaced string;
     * - `value` an array of content blocks (a `tool_result`'s or a message's `content`): a
     *   copy in which the string `text` field of every block (the text blocks) is replaced,
     *   and everything else (image blocks, other fields) is copied unchanged;
     * - any other value: an unchanged copy.
     *
     * `pattern` uses the syntax of Rust's `regex` crate (Perl-like: `\d`, `[A-Z]{16}`,
     * `(?i)` for case-insensitive, no look-around or back-references); it is compiled once
     * and cached by the host. In `replacement`, `$1` or `${name}` insert a capture group and
     * `$$` a literal `$`. `*replaced` (when `replaced` is not NULL) receives the number of
     * matches replaced, so a handler can leave the result alone when it is 0:
     *
     * ```c
     * size_t n = 0;
     * PiValue *content = v->replace_text(v->get(event, pi_str("content")),
     *                                    pi_str("AKIA[0-9A-Z]{16}"), pi_str("[REDACTED]"), &n);
     * PiStatus status = n ? host->results->set_value(result, pi_str("content"), content) : PI_OK;
     * v->free(content);
     * ```
     *
     * Returns NULL (and 0 replacements) when `value` is NULL or absent, or when `pattern` or
     * `replacement` is not UTF-8, or `pattern` is not a valid expression (the host then
     * prints a warning with the reason on stderr). `free` ignores NULL, so the example
     * above needs no check: with 0 replacements it sets nothing.
     */
    struct PiValue *(*replace_text)(const struct PiValue *value,
                                    struct PiStr pattern,
                                    struct PiStr replacement,
                                    size_t *replaced);
} PiValueApi;

/**
 * Setters for `PiResult`. Each copies what it is given. Each returns `PI_ERR_INVALID_ARG` for a
 * NULL result and `PI_ERR_UTF8` for text that is not UTF-8; a field setter on a result that
 * was set to a non-object JSON document answers `PI_ERR_WRONG_TYPE`.
 */
typedef struct PiResultApi {
    /**
     * `sizeof(PiResultApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * Replaces the whole result with a JSON document, which may be any JSON value (a plain
     * string is the alternative result form some events accept). `PI_ERR_INVALID_ARG` when
     * the text is not valid JSON; the result is then unchanged.
     */
    PiStatus (*set_json)(struct PiResult *result, struct PiStr json);
    /**
     * Sets field `key` to a string.
     */
    PiStatus (*set_string)(struct PiResult *result, struct PiStr key, struct PiStr value);
    /**
     * Sets field `key` to a boolean.
     */
    PiStatus (*set_bool)(struct PiResult *result, struct PiStr key, bool value);
    /**
     * Sets field `key` to an integer.
     */
    PiStatus (*set_int)(struct PiResult *result, struct PiStr key, int64_t value);
    /**
     * Sets field `key` to a double (NaN and infinities become null, as in JSON).
     */
    PiStatus (*set_float)(struct PiResult *result, struct PiStr key, double value);
    /**
     * Sets field `key` to a deep copy of `value` (a borrowed or owned value; NULL sets null).
     */
    PiStatus (*set_value)(struct PiResult *result, struct PiStr key, const struct PiValue *value);
    /**
     * Sets field `key` to the value parsed from JSON text. `PI_ERR_INVALID_ARG` when the
     * text is not valid JSON.
     */
    PiStatus (*set_field_json)(struct PiResult *result, struct PiStr key, struct PiStr json);
    /**
     * Appends `{"type":"text","text":text}` to the array field `content`, creating it when
     * missing: the usual way to give a tool result or a message its text.
     */
    PiStatus (*add_text)(struct PiResult *result, struct PiStr text);
    /**
     * Replaces the whole result with a deep copy of `value` (borrowed or owned; the caller
     * keeps it and frees an owned one as usual): the value form of `set_json`, for example
     * a string built with `values->new_string` as an `input` handler's plain-string result.
     * A NULL `value` makes the result JSON `null`. `set_value` sets one field the same way.
     */
    PiStatus (*set_from_value)(struct PiResult *result, const struct PiValue *value);
} PiResultApi;

/**
 * An event handler.
 *
 * - `user_data`: what was passed to `on`.
 * - `event`: the payload, borrowed until the handler returns; `values->get(event,
 *   pi_str("type"))` is the event name. Field names are pi's (`toolName`, `toolCallId`,
 *   `input` ...).
 * - `ctx`: the call's context (cwd, UI, session), valid until the handler returns.
 * - `result`: empty; set fields or a JSON document to return a result (for example
 *   `{"block":true,"reason":"..."}` from `tool_call`). Leave it empty to return nothing.
 *
 * Return `PI_OK`, or an error status (after `context->set_error(ctx, ...)`): the host reports
 * it and goes on with the next handler, except in `tool_call`, where any error blocks the
 * tool (fail closed). The host never calls one plugin from two threads at once.
 */
typedef PiStatus (*PiEventHandler)(void *user_data,
                                   const struct PiValue *event,
                                   struct PiContext *ctx,
                                   struct PiResult *result);

/**
 * A slash command's handler: `args` is the text after the command name (borrowed).
 * Command contexts also allow the session-control functions of `PiContextApi`.
 */
typedef PiStatus (*PiCommandHandler)(void *user_data, struct PiStr args, struct PiContext *ctx);

/**
 * Argument completions for a command: set `result` to a JSON array of
 * `{"value","label","description"?}` objects, or leave it empty for none. `prefix` is the
 * text typed after the command's name. Called when a front end asks: the interactive
 * mode's editor on each key typed after `/name `, pi's editor through the bridge, and RPC
 * clients with the `get_command_completions` command (a pi-hooks addition; pi's RPC has no
 * completion request). Gets the command's `user_data`; never called at the same time as
 * the handler.
 */
typedef PiStatus (*PiCompletionHandler)(void *user_data,
                                        struct PiStr prefix,
                                        struct PiResult *result);

/**
 * A slash command. Strings are copied during `register_command`.
 */
typedef struct PiCommandDef {
    /**
     * `sizeof(PiCommandDef)`.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The name without the slash, for example "todos".
     */
    struct PiStr name;
    /**
     * Shown in command lists (may be empty).
     */
    struct PiStr description;
    /**
     * Required.
     */
    PiCommandHandler handler;
    /**
     * Optional (NULL for none).
     */
    PiCompletionHandler complete;
    /**
     * Passed to `handler` and `complete`.
     */
    void *user_data;
} PiCommandDef;

/**
 * A tool's execute function. `params` are the arguments the model gave (borrowed), already
 * checked against the tool's schema by nobody: check what you need. Fill `result` with
 * `content` (`add_text`), optional `details` and optional `isError`; stream progress with
 * `context->tool_update`. Returning an error status makes an error tool result with the
 * message set through `set_error`.
 */
typedef PiStatus (*PiToolExecute)(void *user_data,
                                  struct PiStr tool_call_id,
                                  const struct PiValue *params,
                                  struct PiContext *ctx,
                                  struct PiResult *result);

/**
 * A tool the model may call. Strings are copied during `register_tool`. A tool with the name
 * of a built-in tool replaces it.
 */
typedef struct PiToolDef {
    /**
     * `sizeof(PiToolDef)`.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The name the model calls it by, for example "todo".
     */
    struct PiStr name;
    /**
     * A human label (may be empty: the name is used).
     */
    struct PiStr label;
    /**
     * The description the model reads.
     */
    struct PiStr description;
    /**
     * The parameters as a JSON Schema object, as JSON text. Empty means `{"type":"object"}`.
     */
    struct PiStr parameters_json;
    /**
     * Required.
     */
    PiToolExecute execute;
    /**
     * Passed to `execute`.
     */
    void *user_data;
} PiToolDef;

/**
 * A message renderer: `message` is the custom message (`customType`, `content`, `details`),
 * `options` is `{"expanded": bool}`. Set `result` to a JSON array of lines (strings), or leave
 * it empty to fall back to the default rendering.
 */
typedef PiStatus (*PiRenderHandler)(void *user_data,
                                    const struct PiValue *message,
                                    const struct PiValue *options,
                                    struct PiResult *result);

/**
 * A renderer for custom messages of one `customType`.
 */
typedef struct PiRendererDef {
    /**
     * `sizeof(PiRendererDef)`.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The `customType` it renders.
     */
    struct PiStr custom_type;
    /**
     * Required.
     */
    PiRenderHandler render;
    /**
     * Passed to `render`.
     */
    void *user_data;
} PiRendererDef;

/**
 * A command-line flag. The first plugin to register a name wins; read it with
 * `actions->get_flag`.
 */
typedef struct PiFlagDef {
    /**
     * `sizeof(PiFlagDef)`.
     */
    uint32_t struct_size;
    /**
     * `PI_FLAG_BOOLEAN` or `PI_FLAG_STRING`.
     */
    uint32_t kind;
    /**
     * The name without dashes.
     */
    struct PiStr name;
    /**
     * Shown in help (may be empty).
     */
    struct PiStr description;
    /**
     * The default as JSON text (`true`, `"text"`); empty for none.
     */
    struct PiStr default_json;
} PiFlagDef;

/**
 * A keyboard shortcut's handler.
 */
typedef PiStatus (*PiShortcutHandler)(void *user_data, struct PiContext *ctx);

/**
 * A keyboard shortcut of the interactive mode.
 */
typedef struct PiShortcutDef {
    /**
     * `sizeof(PiShortcutDef)`.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The key, for example "ctrl+shift+t".
     */
    struct PiStr key;
    /**
     * Shown in help (may be empty).
     */
    struct PiStr description;
    /**
     * Required.
     */
    PiShortcutHandler handler;
    /**
     * Passed to `handler`.
     */
    void *user_data;
} PiShortcutDef;

/**
 * A cleanup registered with `add_cleanup`, run once when the plugin is retired.
 */
typedef void (*PiCleanupFn)(void *data);

/**
 * Registration. Call these from `init` only; later they answer `PI_ERR_UNAVAILABLE`. Each
 * copies the strings and definitions it is given; `user_data` pointers are kept as they are
 * and handed back on every call. A duplicate name from the same plugin answers
 * `PI_ERR_DUPLICATE`; conflicts between plugins are resolved by the host (first wins) and
 * reported. A name (event, command, tool, custom type, flag, key) must not be blank nor
 * contain NUL (`PI_ERR_INVALID_ARG`). An event name the host never emits is accepted (a newer
 * plugin on an older host still loads) but reported at load with the nearest known name. A
 * plugin may make at most 10 000 registrations of all kinds together; past that each
 * registration answers `PI_ERR` and the load reports it.
 */
typedef struct PiRegistryApi {
    /**
     * `sizeof(PiRegistryApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * Subscribes `handler` to the event named `event` (for example "tool_call",
     * "session_start"). A plugin's handlers for one event run in the order registered.
     */
    PiStatus (*on)(struct PiPlugin *plugin,
                   struct PiStr event,
                   PiEventHandler handler,
                   void *user_data);
    /**
     * Registers a slash command.
     */
    PiStatus (*register_command)(struct PiPlugin *plugin, const struct PiCommandDef *def);
    /**
     * Registers a tool.
     */
    PiStatus (*register_tool)(struct PiPlugin *plugin, const struct PiToolDef *def);
    /**
     * Registers a message renderer. The first plugin to register a `customType` renders it.
     * It is called when a front end shows a custom message: the interactive mode draws the
     * lines in the conversation, RPC clients ask for them with the `render_message` command
     * (a pi-hooks addition to pi's protocol), pi asks through the bridge; print and JSON
     * modes print no messages, so they never call it.
     */
    PiStatus (*register_message_renderer)(struct PiPlugin *plugin, const struct PiRendererDef *def);
    /**
     * Registers a command-line flag.
     */
    PiStatus (*register_flag)(struct PiPlugin *plugin, const struct PiFlagDef *def);
    /**
     * Registers a keyboard shortcut, in pi's key format (`ctrl+shift+p`, `alt+x`, `f5`,
     * `pageDown`). The interactive mode calls the handler (with an event's context and the
     * UI) when the key is pressed at the editor. As in pi, Ctrl+C, Ctrl+D, Esc and Enter stay
     * the terminal's (such a shortcut is skipped with a warning), and of two plugins with the
     * same key the later one in load order wins. Other modes have no keys and never call it;
     * pi does not bind the shortcuts of bridged plugins either.
     */
    PiStatus (*register_shortcut)(struct PiPlugin *plugin, const struct PiShortcutDef *def);
    /**
     * Registers `cleanup(data)` to run once when the plugin is retired, after its shutdown:
     * the place to free `user_data`. Cleanups run in reverse order of registration. Unlike
     * the other entries, this one may also be called after init.
     */
    PiStatus (*add_cleanup)(struct PiPlugin *plugin, PiCleanupFn cleanup, void *data);
    /**
     * Describes why `init` is about to fail; the host shows the text in its error report.
     */
    void (*set_init_error)(struct PiPlugin *plugin, struct PiStr message);
} PiRegistryApi;

/**
 * Options for a dialog. Pass NULL for none.
 */
typedef struct PiDialogOptions {
    /**
     * `sizeof(PiDialogOptions)`.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * Milliseconds after which the dialog closes with its default answer; 0 for none.
     */
    uint64_t timeout_ms;
} PiDialogOptions;

/**
 * UI functions, all on a `PiContext`. The interactive mode (`pi-hooks`, `pi-hooks chat`)
 * draws every one of them in the terminal (dialogs in place of the editor, with a `(Ns)`
 * countdown when they have a timeout; statuses on the footer's last line, sorted by key;
 * widgets above or below the editor, at most 10 lines each); RPC mode sends them to the
 * client as pi's `extension_ui_request` lines; through the pi bridge, pi draws them.
 * Without a UI (print and JSON modes, `has_ui` false) the
 * dialogs return their default answer at once with `PI_OK`, and the setters do nothing. The
 * arguments are checked in every mode, as a UI checks them: NULL `options`, a dialog struct
 * smaller than this header's, an unknown notify level or widget placement, a blank or
 * NUL-containing key answer `PI_ERR_INVALID_ARG`; text that is not UTF-8 `PI_ERR_UTF8`. A
 * dialog blocks only the calling plugin; time spent in it does not count against the handler's
 * timeout.
 */
typedef struct PiUiApi {
    /**
     * `sizeof(PiUiApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * Lets the user pick one of `count` options; `*index` receives its index, or -1 when
     * cancelled, timed out or without UI.
     */
    PiStatus (*select)(struct PiContext *ctx,
                       struct PiStr title,
                       const struct PiStr *options,
                       size_t count,
                       const struct PiDialogOptions *dialog,
                       int64_t *index);
    /**
     * Asks a yes/no question; `*answer` is false when declined, cancelled or without UI.
     */
    PiStatus (*confirm)(struct PiContext *ctx,
                        struct PiStr title,
                        struct PiStr message,
                        const struct PiDialogOptions *dialog,
                        bool *answer);
    /**
     * Asks for one line of text; `*out` receives an owned string, or NULL when cancelled.
     */
    PiStatus (*input)(struct PiContext *ctx,
                      struct PiStr title,
                      struct PiStr placeholder,
                      const struct PiDialogOptions *dialog,
                      struct PiValue **out);
    /**
     * Opens a multi-line editor prefilled with `prefill`; `*out` as for `input`.
     */
    PiStatus (*editor)(struct PiContext *ctx,
                       struct PiStr title,
                       struct PiStr prefill,
                       struct PiValue **out);
    /**
     * Shows a notification; `level` is a `PI_NOTIFY_*` (in the terminal, as pi shows them:
     * info as a dim line in the conversation, `Warning: …` and `Error: …` lines).
     */
    PiStatus (*notify)(struct PiContext *ctx, struct PiStr message, uint32_t level);
    /**
     * Sets the footer status under `key`; a NULL `text.ptr` removes it. The footer shows
     * every status on one line, sorted by key, each with line breaks and tabs turned into
     * spaces, cut to the terminal's width.
     */
    PiStatus (*set_status)(struct PiContext *ctx, struct PiStr key, struct PiStr text);
    /**
     * Sets a widget of `count` lines under `key`; NULL `lines` removes it. `placement` is a
     * `PI_WIDGET_*`.
     */
    PiStatus (*set_widget)(struct PiContext *ctx,
                           struct PiStr key,
                           const struct PiStr *lines,
                           size_t count,
                           uint32_t placement);
    /**
     * Sets the terminal title.
     */
    PiStatus (*set_title)(struct PiContext *ctx, struct PiStr title);
    /**
     * Replaces the editor's text.
     */
    PiStatus (*set_editor_text)(struct PiContext *ctx, struct PiStr text);
    /**
     * The editor's text as an owned string in `*out`: what is typed in the interactive
     * mode's editor; "" in the other modes (as in pi's RPC mode) and without UI.
     */
    PiStatus (*get_editor_text)(struct PiContext *ctx, struct PiValue **out);
    /**
     * The current theme as an owned object `{"name", "colors": {name: ANSI escape}}`.
     */
    PiStatus (*theme)(struct PiContext *ctx, struct PiValue **out);
    /**
     * Sets (NULL `message.ptr`: resets) the message shown while the agent works. Shown by
     * the interactive mode; RPC, print and JSON modes ignore it, as pi's RPC mode does.
     */
    PiStatus (*set_working_message)(struct PiContext *ctx, struct PiStr message);
} PiUiApi;

/**
 * The host's services, grouped in one table per topic.
 *
 * Owned by the host; valid, with every table it points to, until the plugin is unloaded.
 * Each table starts with its `struct_size`: a plugin built for an older minor simply never
 * reads past its own size; a plugin that wants an entry added in a later minor checks
 * `struct_size` (or `abi_minor`) first. Every function of every table may be called from any
 * thread, also from threads the plugin started, unless its documentation says otherwise.
 */
typedef struct PiHostApi {
    /**
     * `sizeof(PiHostApi)` in the host.
     */
    uint32_t struct_size;
    /**
     * The host's ABI major (always `PI_HOOKS_ABI_MAJOR` for a plugin that was loaded).
     */
    uint32_t abi_major;
    /**
     * The host's ABI minor; at least the plugin's.
     */
    uint32_t abi_minor;
    /**
     * Reserved, 0.
     */
    uint32_t reserved;
    /**
     * The host program's version, for example "pi-hooks 0.1.0".
     */
    struct PiStr host_version;
    /**
     * Reading event payloads and other host values.
     */
    const struct PiValueApi *values;
    /**
     * Building handler results.
     */
    const struct PiResultApi *results;
    /**
     * Registering handlers, commands, tools, renderers, flags (during init).
     */
    const struct PiRegistryApi *registry;
    /**
     * Acting on the session: messages, entries, exec, timers, tools, flags, logging.
     */
    const struct PiActionsApi *actions;
    /**
     * Reading and acting on the context of a handler call.
     */
    const struct PiContextApi *context;
    /**
     * The user interface of the current mode.
     */
    const struct PiUiApi *ui;
} PiHostApi;

/**
 * The plugin's init function, called once after the host accepted the descriptor.
 *
 * `host` is the host's table of services; it and every table it points to stay valid until
 * the plugin is unloaded, so the plugin may keep the pointer. `plugin` is the handle that
 * identifies this plugin instance to the host: pass it to every registration and action. Init
 * registers handlers, commands, tools, renderers and flags (`host->registry`); actions that
 * need a running session (`send_message`, `exec` ...) answer `PI_ERR_UNAVAILABLE` during
 * init, except `log` and `get_flag`.
 *
 * Return `PI_OK`, or an error status after describing the problem with
 * `host->registry->set_init_error`; the host then reports the plugin as failed to load and
 * drops every registration it made.
 */
typedef PiStatus (*PiInitFn)(const struct PiHostApi *host, struct PiPlugin *plugin);

/**
 * Optional: called once before the plugin is retired (host exit, reload, unload), after its
 * timers and subprocesses were stopped and before the cleanups registered with
 * `add_cleanup` run. No host service may be called from it but `log`.
 */
typedef void (*PiShutdownFn)(struct PiPlugin *plugin);

/**
 * The plugin's descriptor, returned by the entry symbol `pi_hooks_plugin_v1`.
 *
 * The host reads it before any other code of the plugin runs and refuses the plugin, with a
 * message naming the file and both versions, when:
 * - `abi_major` is not the host's major;
 * - `abi_minor` is newer than the host's minor;
 * - `struct_size` or one of the `*_size` fields does not match what `abi_minor` defines
 *   (the plugin was built against a different header of the same version);
 * - `layout_fingerprint` is non-zero and differs from the host's for the same minor;
 * - `name` is empty or `init` is NULL.
 *
 * In C, `PI_HOOKS_PLUGIN(name, version, description, init, shutdown)` defines the entry symbol
 * and this descriptor; `PI_HOOKS_DESCRIPTOR(...)` with the same arguments fills just the
 * descriptor. The descriptor and the strings it points to must stay valid while the library
 * is loaded (use statics).
 * Fields are only ever appended.
 */
typedef struct PiPluginDescriptor {
    /**
     * `sizeof(PiPluginDescriptor)` as the plugin was compiled.
     */
    uint32_t struct_size;
    /**
     * `PI_HOOKS_ABI_MAJOR` of the header the plugin was built against.
     */
    uint32_t abi_major;
    /**
     * `PI_HOOKS_ABI_MINOR` of the header the plugin was built against.
     */
    uint32_t abi_minor;
    /**
     * Reserved, set to 0.
     */
    uint32_t flags;
    /**
     * `PI_HOOKS_LAYOUT_FINGERPRINT` of the header (0 = not checked).
     */
    uint64_t layout_fingerprint;
    /**
     * The plugin's name, shown in listings and error reports. Not empty.
     */
    struct PiStr name;
    /**
     * The plugin's own version, free form (for example "1.2.0").
     */
    struct PiStr version;
    /**
     * One line saying what the plugin does (may be empty).
     */
    struct PiStr description;
    /**
     * `sizeof(PiHostApi)` as the plugin was compiled.
     */
    uint32_t host_api_size;
    /**
     * `sizeof(PiValueApi)` as the plugin was compiled.
     */
    uint32_t value_api_size;
    /**
     * `sizeof(PiResultApi)` as the plugin was compiled.
     */
    uint32_t result_api_size;
    /**
     * `sizeof(PiRegistryApi)` as the plugin was compiled.
     */
    uint32_t registry_api_size;
    /**
     * `sizeof(PiActionsApi)` as the plugin was compiled.
     */
    uint32_t actions_api_size;
    /**
     * `sizeof(PiContextApi)` as the plugin was compiled.
     */
    uint32_t context_api_size;
    /**
     * `sizeof(PiUiApi)` as the plugin was compiled.
     */
    uint32_t ui_api_size;
    /**
     * Reserved, set to 0.
     */
    uint32_t reserved;
    /**
     * Required: see `PiInitFn`.
     */
    PiInitFn init;
    /**
     * Optional (NULL for none): see `PiShutdownFn`.
     */
    PiShutdownFn shutdown;
} PiPluginDescriptor;

/**
 * The signature of the entry symbol `pi_hooks_plugin_v1`: returns the plugin's descriptor,
 * never NULL, without side effects. Export it with `PI_HOOKS_EXPORT`.
 */
typedef const struct PiPluginDescriptor *(*PiEntryFn)(void);

/**
 * Success.
 */
#define PI_OK 0

/**
 * A generic failure; the message set with `set_error` says what went wrong.
 */
#define PI_ERR 1

/**
 * An argument was invalid: a NULL pointer where one is required, malformed JSON, an unknown
 * constant, a struct whose `struct_size` is too small.
 */
#define PI_ERR_INVALID_ARG 2

/**
 * The service exists in the ABI but is not available here (for example: in this mode, in this
 * version of the host, or during `init` where only registration is allowed).
 */
#define PI_ERR_UNAVAILABLE 3

/**
 * The value has another type than the accessor asked for (a string read as a number).
 */
#define PI_ERR_WRONG_TYPE 4

/**
 * The named thing does not exist (an unknown timer id, an unregistered flag).
 */
#define PI_ERR_NOT_FOUND 5

/**
 * A string was not valid UTF-8.
 */
#define PI_ERR_UTF8 6

/**
 * Code panicked (Rust) or threw (C++) and the barrier caught it.
 */
#define PI_ERR_PANIC 7

/**
 * A time limit ran out.
 */
#define PI_ERR_TIMEOUT 8

/**
 * The operation was cancelled (the plugin is being unloaded, the user aborted).
 */
#define PI_ERR_CANCELLED 9

/**
 * Already registered: a second command, tool, flag or renderer of the same name from this
 * plugin.
 */
#define PI_ERR_DUPLICATE 10

/**
 * (ABI 1.5) Refused by the plugin's grant: the plugin runs confined (a package's accepted
 * capabilities, or a `sandbox` entry of the user's settings) and the action needs a
 * capability the grant does not hold. Where the action has an out value (`exec`), it
 * receives an owned object `{"error": "<which capability is missing>"}`; the host also
 * reports the refusal, naming the plugin, the action and the grant.
 */
#define PI_ERR_DENIED 11



#endif  /* PI_HOOKS_H */

/*
 * Helpers for C and C++ plugin authors. Written by scripts/gen-header (cbindgen.toml,
 * `trailer`), not derived from a Rust item; guarded on their own because they follow the
 * PI_HOOKS_H include guard.
 */
#ifndef PI_HOOKS_H_HELPERS
#define PI_HOOKS_H_HELPERS

/**
 * The layout fingerprint of the ABI types this header was generated from
 * (pi_hooks_abi::layout::LAYOUT_FINGERPRINT). PI_HOOKS_DESCRIPTOR puts it in the descriptor,
 * so that the host refuses a plugin built against an edited header of the same version.
 */
#define PI_HOOKS_LAYOUT_FINGERPRINT 0x66ff0e68cf381fd3ULL

/** The name of the entry symbol every v1 plugin exports (see PI_HOOKS_PLUGIN). */
#define PI_HOOKS_ENTRY_SYMBOL "pi_hooks_plugin_v1"

/**
 * The name of the data symbol holding the plugin's information block (see
 * PI_HOOKS_PLUGIN_INFO). Optional: a host reads it from the file without loading it.
 */
#define PI_HOOKS_INFO_SYMBOL "pi_hooks_plugin_info_v1"

/** Makes a function visible outside the shared library, also under -fvisibility=hidden. */
#if defined(_WIN32) || defined(__CYGWIN__)
#define PI_HOOKS_EXPORT __declspec(dllexport)
#elif defined(__GNUC__) || defined(__clang__)
#define PI_HOOKS_EXPORT __attribute__((visibility("default")))
#else
#define PI_HOOKS_EXPORT
#endif

/** `extern "C"` in C++ (no name mangling), nothing in C. */
#ifdef __cplusplus
#define PI_HOOKS_EXTERN_C extern "C"
#else
#define PI_HOOKS_EXTERN_C
#endif

/**
 * Initialiser of a PiStr from a string literal, for static initialisers in C and C++:
 * `static const PiStr greeting = PI_STR_LIT("hello");`. The argument must be a literal
 * (its length is taken with sizeof). In C, `(PiStr)PI_STR_LIT("x")` is an expression.
 */
#define PI_STR_LIT(literal) { (literal), sizeof(literal) - 1 }

/**
 * Whether the host's table `table` (a pointer to a `type`, such as `host->actions`, a
 * `PiActionsApi`) has the entry `field`. An entry appended in a later ABI minor (marked
 * "(ABI 1.N)") is there only on a host of that minor or newer; a plugin checks before it
 * calls one: `if (PI_HOOKS_HAS(PiActionsApi, host->actions, identity)) ...`.
 */
#define PI_HOOKS_HAS(type, table, field) \
    ((size_t)(table)->struct_size >= offsetof(type, field) + sizeof((table)->field))

/** A PiStr over a NUL-terminated string (not copied; the terminator is not counted).
 *  NULL gives {NULL, 0}. */
static inline PiStr pi_str(const char *s) {
    PiStr out;
    out.ptr = s;
    out.len = s != NULL ? strlen(s) : 0;
    return out;
}

/** A PiStr over `n` bytes at `s` (not copied; need not be NUL-terminated). */
static inline PiStr pi_str_n(const char *s, size_t n) {
    PiStr out;
    out.ptr = s;
    out.len = n;
    return out;
}

/*
 * C only (C99 and later; C++ registers through pi_hooks.hpp): a PiCommandDef or PiToolDef as
 * a compound literal with `struct_size` filled in, from designated initialisers, so that a
 * registration is one readable line. Fields left out are zero (no completions, NULL
 * user_data, the default `{"type":"object"}` parameters). Take its address:
 *
 *     host->registry->register_command(plugin,
 *         &PI_COMMAND(.name = pi_str("stats"), .description = pi_str("Show counts"),
 *                     .handler = on_stats));
 *     host->registry->register_tool(plugin,
 *         &PI_TOOL(.name = pi_str("now"), .description = pi_str("The current time"),
 *                  .parameters_json = pi_str("{\"type\":\"object\"}"), .execute = now));
 *
 * The literal lives until the end of the enclosing block; the host copies it during the call.
 */
#ifndef __cplusplus
/** A PiCommandDef with its struct_size, from designated initialisers (see above). */
#define PI_COMMAND(...) ((PiCommandDef){.struct_size = (uint32_t)sizeof(PiCommandDef), __VA_ARGS__})
/** A PiToolDef with its struct_size, from designated initialisers (see above). */
#define PI_TOOL(...) ((PiToolDef){.struct_size = (uint32_t)sizeof(PiToolDef), __VA_ARGS__})
#endif

/**
 * Initialiser of a PiPluginDescriptor for this header: struct sizes, ABI version and layout
 * fingerprint as compiled, flags and reserved 0. `name`, `version` and `description` must be
 * string literals (description may be ""); `init_fn` is a PiInitFn, `shutdown_fn` a
 * PiShutdownFn or NULL. Positional, in field order, so that it works in C11 static
 * initialisers and in C++17 (which lacks designated initialisers):
 * `static const PiPluginDescriptor d = PI_HOOKS_DESCRIPTOR("x", "1.0", "", init, NULL);`
 */
#define PI_HOOKS_DESCRIPTOR(name, version, description, init_fn, shutdown_fn) \
    {                                                                          \
        (uint32_t)sizeof(PiPluginDescriptor),                                  \
        PI_HOOKS_ABI_MAJOR,                                                    \
        PI_HOOKS_ABI_MINOR,                                                    \
        0,                                                                     \
        PI_HOOKS_LAYOUT_FINGERPRINT,                                           \
        PI_STR_LIT(name),                                                      \
        PI_STR_LIT(version),                                                   \
        PI_STR_LIT(description),                                               \
        (uint32_t)sizeof(PiHostApi),                                           \
        (uint32_t)sizeof(PiValueApi),                                          \
        (uint32_t)sizeof(PiResultApi),                                         \
        (uint32_t)sizeof(PiRegistryApi),                                       \
        (uint32_t)sizeof(PiActionsApi),                                        \
        (uint32_t)sizeof(PiContextApi),                                        \
        (uint32_t)sizeof(PiUiApi),                                             \
        0,                                                                     \
        (init_fn),                                                             \
        (shutdown_fn)                                                          \
    }

/** Turns a macro's value into a string literal (PI_HOOKS_STR_(PI_HOOKS_ABI_MINOR) is "N"). */
#define PI_HOOKS_STR_(x) PI_HOOKS_STR2_(x)
#define PI_HOOKS_STR2_(x) #x

/**
 * Defines the exported information block `pi_hooks_plugin_info_v1`: the plugin's name,
 * version, description and ABI version as one NUL-separated string in the library's
 * read-only data, which `pi-hooks inspect` and `pi-hooks install` read from the file without
 * running any of the plugin's code (not even its static constructors). PI_HOOKS_PLUGIN already
 * writes it; use this only with an entry function of your own, once per library, at file
 * scope, with the same string literals as the descriptor:
 * `PI_HOOKS_PLUGIN_INFO("my-plugin", "0.1.0", "What it does");`
 * Optional: a library without it loads all the same, but its name is then known only by
 * loading it. Format: "pi-hooks-info-1\0" MAJOR "\0" MINOR "\0" name "\0" version "\0"
 * description "\0".
 */
#define PI_HOOKS_PLUGIN_INFO(name, version, description)                                  \
    PI_HOOKS_EXTERN_C PI_HOOKS_EXPORT const char pi_hooks_plugin_info_v1[];               \
    PI_HOOKS_EXTERN_C PI_HOOKS_EXPORT const char pi_hooks_plugin_info_v1[] =              \
        "pi-hooks-info-1\0" PI_HOOKS_STR_(PI_HOOKS_ABI_MAJOR) "\0" PI_HOOKS_STR_(      \
            PI_HOOKS_ABI_MINOR) "\0" name "\0" version "\0" description

/**
 * Defines the plugin's exported entry function `pi_hooks_plugin_v1`, returning a static
 * descriptor built with PI_HOOKS_DESCRIPTOR, and its information block
 * (PI_HOOKS_PLUGIN_INFO). Use it once per library, at file scope, after
 * `init_fn` (and `shutdown_fn`) are declared, followed by a semicolon:
 * `PI_HOOKS_PLUGIN("my-plugin", "0.1.0", "What it does", init, NULL);`
 */
#define PI_HOOKS_PLUGIN(name, version, description, init_fn, shutdown_fn)                   \
    PI_HOOKS_PLUGIN_INFO(name, version, description);                                      \
    PI_HOOKS_EXTERN_C PI_HOOKS_EXPORT const PiPluginDescriptor *pi_hooks_plugin_v1(void);  \
    PI_HOOKS_EXTERN_C PI_HOOKS_EXPORT const PiPluginDescriptor *pi_hooks_plugin_v1(void) { \
        static const PiPluginDescriptor pi_hooks_descriptor_ =                              \
            PI_HOOKS_DESCRIPTOR(name, version, description, init_fn, shutdown_fn);          \
        return &pi_hooks_descriptor_;                                                       \
    }                                                                                       \
    struct pi_hooks_plugin_defined_

/* Compile-time layout checks: every size-prefixed struct starts with its struct_size. */
#if defined(__cplusplus) && (__cplusplus >= 201103L || (defined(_MSVC_LANG) && _MSVC_LANG >= 201103L))
#define PI_HOOKS_STATIC_ASSERT_(cond, message) static_assert(cond, message)
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define PI_HOOKS_STATIC_ASSERT_(cond, message) _Static_assert(cond, message)
#endif
#ifdef PI_HOOKS_STATIC_ASSERT_
PI_HOOKS_STATIC_ASSERT_(sizeof(PiStr) == sizeof(const char *) + sizeof(size_t),
                        "PiStr is a pointer and a length");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiExecRequest, struct_size) == 0,
                        "PiExecRequest starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiActionsApi, struct_size) == 0,
                        "PiActionsApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiContextApi, struct_size) == 0,
                        "PiContextApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiPluginDescriptor, struct_size) == 0,
                        "PiPluginDescriptor starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiHostApi, struct_size) == 0,
                        "PiHostApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiCommandDef, struct_size) == 0,
                        "PiCommandDef starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiToolDef, struct_size) == 0,
                        "PiToolDef starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiRendererDef, struct_size) == 0,
                        "PiRendererDef starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiFlagDef, struct_size) == 0,
                        "PiFlagDef starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiShortcutDef, struct_size) == 0,
                        "PiShortcutDef starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiRegistryApi, struct_size) == 0,
                        "PiRegistryApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiResultApi, struct_size) == 0,
                        "PiResultApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiDialogOptions, struct_size) == 0,
                        "PiDialogOptions starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiUiApi, struct_size) == 0,
                        "PiUiApi starts with struct_size");
PI_HOOKS_STATIC_ASSERT_(offsetof(PiValueApi, struct_size) == 0,
                        "PiValueApi starts with struct_size");
#undef PI_HOOKS_STATIC_ASSERT_
#endif

#endif /* PI_HOOKS_H_HELPERS */
