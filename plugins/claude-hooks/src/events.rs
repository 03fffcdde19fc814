//! The pi events, each running the Claude Code event that matches it:
//!
//! | pi event | Claude Code event |
//! |---|---|
//! | `session_start` (not after `/reload`), `session_compact` | `SessionStart` (`startup`, `clear`, `resume`, `compact`) |
//! | `input` | `UserPromptSubmit` |
//! | `before_agent_start` | (delivers the context `SessionStart` / `UserPromptSubmit` added) |
//! | `tool_call` | `PreToolUse` (and `Notification` before an `ask` dialog) |
//! | `tool_result` | `PostToolUse`, or `PostToolUseFailure` for a failed tool |
//! | `turn_end` of the run's last turn | `Stop` |
//! | `session_before_compact` | `PreCompact` |
//! | `session_shutdown` (not for `/reload`) | `SessionEnd` |

use std::collections::HashMap;
use std::io::BufRead as _;
use std::path::Path;

use pi_hooks_abi::ffi::{PI_MODE_INTERACTIVE, PI_MODE_RPC};
use pi_hooks_abi::sdk::LogLevel;
use pi_hooks_abi::sdk::prelude::*;
use serde_json::Map;

use crate::config::{Config, Severity};
use crate::limit::HandlerLimit;
use crate::outcome::{Answers, Permission};
use crate::run::{Ended, run_hooks};
use crate::tools::{claude_input, claude_name, claude_response, pi_input, text_of};
use crate::trust::{TrustStore, agent_dir, home_dir};

/// The custom message type of the context hooks add.
pub const CONTEXT_TYPE: &str = "claude-hooks";

#[derive(Default)]
struct State {
    config: Config,
    /// `CLAUDE_PROJECT_DIR`: the working directory the session started in.
    project_dir: String,
    /// The session file and id the last input was built for.
    session: Option<(Option<String>, String)>,
    /// Context from `SessionStart` and `UserPromptSubmit`, for the next prompt.
    pending_context: Vec<String>,
    /// `PreToolUse` context per tool call id, added to that call's result.
    tool_context: HashMap<String, Vec<String>>,
    /// The run goes on because a `Stop` hook blocked (`stop_hook_active`).
    stop_active: bool,
    /// An automatic compaction is under way (`PreCompact`'s `trigger`).
    auto_compaction: bool,
}

type Plugin = Shared<State>;

/// Registers the handlers and the `/claude-hooks` command.
pub fn register(pi: &mut Registrar) -> Result<()> {
    let plugin = Plugin::new(State::default());
    let p = plugin.clone();
    pi.on("session_start", move |event, ctx| {
        session_start(&p, event, ctx)
    })?;
    let p = plugin.clone();
    pi.on("session_compact", move |_event, ctx| {
        session_start_hooks(&p, ctx, "compact");
        Ok(())
    })?;
    let p = plugin.clone();
    pi.on("session_shutdown", move |event, ctx| {
        session_end(&p, event, ctx)
    })?;
    let p = plugin.clone();
    pi.on("input", move |event, ctx| {
        user_prompt_submit(&p, event, ctx)
    })?;
    let p = plugin.clone();
    pi.on("before_agent_start", move |_event, _ctx| {
        let context = std::mem::take(&mut p.lock().pending_context);
        Ok((!context.is_empty()).then(|| {
            serde_json::json!({"message": {
                "customType": CONTEXT_TYPE,
                "content": context.join("\n\n"),
                "display": false,
            }})
        }))
    })?;
    let p = plugin.clone();
    pi.on_tool_call(move |call, ctx| pre_tool_use(&p, call, ctx))?;
    let p = plugin.clone();
    pi.on("tool_result", move |event, ctx| {
        post_tool_use(&p, event, ctx)
    })?;
    let p = plugin.clone();
    pi.on("turn_end", move |event, ctx| stop(&p, event, ctx))?;
    let p = plugin.clone();
    pi.on("auto_compaction_start", move |_event, _ctx| {
        p.lock().auto_compaction = true;
        Ok(())
    })?;
    let p = plugin.clone();
    pi.on("session_before_compact", move |event, ctx| {
        pre_compact(&p, event, ctx)
    })?;
    let p = plugin;
    pi.command(
        "claude-hooks",
        "Claude Code hooks: `trust` runs this project's hooks; no argument shows the state",
        move |args, ctx| command(&p, args.trim(), ctx),
    )
}

/// Tells the user: a notification with a UI, a log line (warn, or info) without one. Hook
/// output and file contents are not the user's: control characters other than newline and
/// tab are shown escaped, so they cannot drive the terminal.
fn tell(ctx: &Context<'_>, level: Notify, text: &str) {
    let text = &escape_controls(text);
    if ctx.has_ui() {
        let _ = ctx.ui().notify(&format!("claude-hooks: {text}"), level);
    } else {
        let level = match level {
            Notify::Info => LogLevel::Info,
            Notify::Warning | Notify::Error => LogLevel::Warn,
        };
        ctx.plugin().log(level, text);
    }
}

/// Answers the user's `/claude-hooks` command: a notification with a UI; without one (print
/// and JSON modes, pi's `-p`) a line on stderr whatever the log level, since the user asked
/// for it (a log line at info would be hidden by default and trusting would look like it
/// failed).
fn reply(ctx: &Context<'_>, level: Notify, text: &str) {
    if ctx.has_ui() {
        tell(ctx, level, text);
    } else {
        eprintln!("claude-hooks: {}", escape_controls(text));
    }
}

fn escape_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// (Re)reads the configuration for the session's working directory and reports what is
/// wrong with it and which project files wait for trust, one line each.
fn load_config(plugin: &Plugin, ctx: &Context<'_>) {
    let project = Path::new(ctx.cwd());
    let mut problems = Vec::new();
    let store = match agent_dir().map(|dir| TrustStore::open(TrustStore::path_in(&dir))) {
        Some(Ok(store)) => Some(store),
        Some(Err(error)) => {
            problems.push((Severity::Warning, error));
            None
        }
        None => None,
    };
    let mut config = Config::load(project, home_dir().as_deref(), store.as_ref());
    problems.append(&mut config.problems);
    for source in config.untrusted() {
        problems.push((
            Severity::Warning,
            format!(
                "project hooks in {} are {}: they do not run until you trust them with /claude-hooks trust",
                source.path.display(),
                source.trust.describe()
            ),
        ));
    }
    for (severity, text) in &problems {
        let level = match severity {
            Severity::Warning => Notify::Warning,
            Severity::Info => Notify::Info,
        };
        tell(ctx, level, text);
    }
    let mut st = plugin.lock();
    st.config = config;
    st.project_dir = ctx.cwd().to_owned();
}

/// The id and transcript path of the session (the session file's header id; a fresh id
/// for a session without a file).
fn session_ids(st: &mut State, ctx: &Context<'_>) -> (String, String) {
    let file = ctx.session_file().map(str::to_owned);
    if let Some((known, id)) = &st.session
        && *known == file
    {
        return (id.clone(), file.unwrap_or_default());
    }
    let id = file
        .as_deref()
        .and_then(read_session_id)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    st.session = Some((file.clone(), id.clone()));
    (id, file.unwrap_or_default())
}

/// The `id` of a session file's header line, else the id in its name (`<time>_<id>.jsonl`).
fn read_session_id(path: &str) -> Option<String> {
    let from_header = std::fs::File::open(path).ok().and_then(|file| {
        let line = std::io::BufReader::new(file).lines().next()?.ok()?;
        let header: Json = serde_json::from_str(&line).ok()?;
        header.get("id")?.as_str().map(str::to_owned)
    });
    from_header.or_else(|| {
        let stem = Path::new(path).file_stem()?.to_str()?;
        stem.rsplit('_').next().map(str::to_owned)
    })
}

/// Whether any hook of `event` matches `subject`.
fn wanted(plugin: &Plugin, event: &str, subject: &str) -> bool {
    !plugin
        .lock()
        .config
        .matching(event, Some(subject))
        .is_empty()
}

/// Runs `event`'s hooks matching `subject` with the common fields and `fields` on stdin;
/// None when no hook matched. Warnings, non-blocking errors and `systemMessage`s are shown
/// here; the caller acts on the rest.
fn fire(
    plugin: &Plugin,
    ctx: &Context<'_>,
    event: &'static str,
    subject: Option<&str>,
    fields: Json,
) -> Option<Answers> {
    let (hooks, input, project_dir) = {
        let mut st = plugin.lock();
        let hooks = st.config.matching(event, subject);
        if hooks.is_empty() {
            return None;
        }
        let (session_id, transcript_path) = session_ids(&mut st, ctx);
        let mut input = Map::new();
        input.insert("session_id".into(), session_id.into());
        input.insert("transcript_path".into(), transcript_path.into());
        input.insert("cwd".into(), ctx.cwd().into());
        input.insert("permission_mode".into(), "default".into());
        input.insert("hook_event_name".into(), event.into());
        if let Json::Object(fields) = fields {
            input.extend(fields);
        }
        (hooks, Json::Object(input), st.project_dir.clone())
    };
    let handler = agent_dir().and_then(|agent| {
        HandlerLimit::of(
            event,
            &agent,
            Path::new(ctx.cwd()),
            std::time::Instant::now(),
        )
    });
    let mut runs = run_hooks(ctx.plugin(), &hooks, &input, &project_dir, handler.as_ref());
    // Stopped before any limit: say why, as the run's state tells it.
    for run in &mut runs {
        if run.ended == Ended::Stopped {
            run.ended = Ended::Killed {
                why: if ctx.is_aborted() {
                    "was stopped: the run was aborted".to_owned()
                } else {
                    "was stopped before its time limit: the session ended or the plugin was unloaded".to_owned()
                },
            };
        }
    }
    let answers = Answers::read(event, runs);
    for warning in &answers.warnings {
        tell(ctx, Notify::Warning, warning);
    }
    for error in answers.errors() {
        tell(ctx, Notify::Warning, &error);
    }
    for message in answers.system_messages() {
        tell(ctx, Notify::Warning, &message);
    }
    if !matches!(event, "UserPromptSubmit" | "SessionStart") {
        // Claude Code shows this stdout only in its verbose transcript.
        for text in answers.plain_texts() {
            ctx.plugin()
                .log(LogLevel::Debug, &format!("{event} hook output: {text}"));
        }
    }
    Some(answers)
}

fn session_start(plugin: &Plugin, event: Value<'_>, ctx: &Context<'_>) -> Result<()> {
    load_config(plugin, ctx);
    let source = match event.get("reason").as_str().unwrap_or("startup") {
        "reload" => return Ok(()),
        "new" => "clear",
        "resume" | "fork" => "resume",
        _ => "startup",
    };
    session_start_hooks(plugin, ctx, source);
    Ok(())
}

/// `SessionStart` with `source`: stdout and `additionalContext` become context for the next
/// prompt; exit 2 only shows stderr to the user.
fn session_start_hooks(plugin: &Plugin, ctx: &Context<'_>, source: &str) {
    let Some(answers) = fire(
        plugin,
        ctx,
        "SessionStart",
        Some(source),
        serde_json::json!({"source": source}),
    ) else {
        return;
    };
    for text in answers.blocking() {
        tell(
            ctx,
            Notify::Warning,
            &format!("SessionStart hook error: {text}"),
        );
    }
    if let Some(reason) = answers.stop() {
        tell(ctx, Notify::Warning, &reason);
    }
    let mut context = answers.plain_texts();
    context.extend(answers.additional_context());
    plugin.lock().pending_context.extend(context);
}

fn session_end(plugin: &Plugin, event: Value<'_>, ctx: &Context<'_>) -> Result<()> {
    let reason = match event.get("reason").as_str().unwrap_or("quit") {
        "reload" => return Ok(()),
        "new" => "clear",
        "quit" if matches!(ctx.mode(), PI_MODE_INTERACTIVE | PI_MODE_RPC) => "prompt_input_exit",
        _ => "other",
    };
    if let Some(answers) = fire(
        plugin,
        ctx,
        "SessionEnd",
        Some(reason),
        serde_json::json!({"reason": reason}),
    ) {
        for text in answers.blocking() {
            tell(
                ctx,
                Notify::Warning,
                &format!("SessionEnd hook error: {text}"),
            );
        }
    }
    Ok(())
}

/// `UserPromptSubmit`: exit 2, `decision: "block"` or `continue: false` drop the prompt (the
/// reason is shown to the user, not the model); stdout and `additionalContext` are added to
/// the prompt's context.
fn user_prompt_submit(
    plugin: &Plugin,
    event: Value<'_>,
    ctx: &Context<'_>,
) -> Result<Option<Json>> {
    let text = event.get("text").as_str().unwrap_or_default();
    // A new prompt: a later Stop is not a continuation of an earlier one's.
    plugin.lock().stop_active = false;
    let Some(answers) = fire(
        plugin,
        ctx,
        "UserPromptSubmit",
        None,
        serde_json::json!({"prompt": text}),
    ) else {
        return Ok(None);
    };
    let handled = || Ok(Some(serde_json::json!({"action": "handled"})));
    if let Some(reason) = answers.stop() {
        tell(ctx, Notify::Warning, &reason);
        return handled();
    }
    let mut blocked = answers.blocking();
    blocked.extend(answers.decision_blocks());
    if !blocked.is_empty() {
        for reason in blocked {
            tell(
                ctx,
                Notify::Warning,
                &format!("UserPromptSubmit hook blocked the prompt: {reason}"),
            );
        }
        return handled();
    }
    let mut context = answers.plain_texts();
    context.extend(answers.additional_context());
    plugin.lock().pending_context.extend(context);
    Ok(None)
}

/// `PreToolUse`: exit 2 blocks with stderr as the reason; `permissionDecision` `deny` blocks,
/// `ask` asks the user (blocks without a UI), `allow` lets it run; `updatedInput` replaces
/// the arguments; `additionalContext` is added to the tool's result.
fn pre_tool_use(
    plugin: &Plugin,
    call: ToolCall<'_>,
    ctx: &Context<'_>,
) -> Result<ToolCallDecision> {
    let pi_tool = call.tool_name();
    let name = claude_name(pi_tool);
    if !wanted(plugin, "PreToolUse", name) {
        // The common case stays cheap: no copy of the arguments when no hook matches.
        return Ok(ToolCallDecision::Allow);
    }
    let tool_input = claude_input(pi_tool, &call.input().to_serde(), Path::new(ctx.cwd()));
    let Some(answers) = fire(
        plugin,
        ctx,
        "PreToolUse",
        Some(name),
        serde_json::json!({
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": call.tool_call_id(),
        }),
    ) else {
        return Ok(ToolCallDecision::Allow);
    };
    if let Some(reason) = answers.stop() {
        tell(ctx, Notify::Warning, &reason);
        let _ = ctx.abort();
        return Ok(ToolCallDecision::block(reason));
    }
    let blocking = answers.blocking();
    if !blocking.is_empty() {
        return Ok(ToolCallDecision::block(blocking.join("\n")));
    }
    let updated = answers.updated_input();
    let shown_input = updated.as_ref().unwrap_or(&tool_input);
    match answers.permission() {
        Some((Permission::Deny, reasons)) => {
            return Ok(ToolCallDecision::block(if reasons.is_empty() {
                "Denied by PreToolUse hook".to_owned()
            } else {
                reasons.join("\n")
            }));
        }
        Some((Permission::Ask, reasons)) => {
            if !ask(plugin, ctx, name, &reasons, shown_input)? {
                return Ok(ToolCallDecision::block(if ctx.has_ui() {
                    "Blocked by user".to_owned()
                } else {
                    format!(
                        "{name} needs the user's approval ({}) and there is no UI to ask",
                        if reasons.is_empty() {
                            "PreToolUse hook asked".to_owned()
                        } else {
                            reasons.join("; ")
                        }
                    )
                }));
            }
        }
        Some((Permission::Allow, _)) | None => {}
    }
    let context = answers.additional_context();
    if !context.is_empty() {
        plugin
            .lock()
            .tool_context
            .insert(call.tool_call_id().to_owned(), context);
    }
    Ok(match updated {
        Some(updated) => ToolCallDecision::rewrite(pi_input(pi_tool, &updated)),
        None => ToolCallDecision::Allow,
    })
}

/// The `ask` dialog, after the `Notification` hooks (`permission_prompt`); false without a UI.
fn ask(
    plugin: &Plugin,
    ctx: &Context<'_>,
    name: &str,
    reasons: &[String],
    tool_input: &Json,
) -> Result<bool> {
    let _ = fire(
        plugin,
        ctx,
        "Notification",
        Some("permission_prompt"),
        serde_json::json!({
            "message": format!("Claude needs your permission to use {name}"),
            "notification_type": "permission_prompt",
        }),
    );
    if !ctx.has_ui() {
        return Ok(false);
    }
    let what = ["command", "file_path", "path", "pattern"]
        .iter()
        .find_map(|key| tool_input.get(*key).and_then(Json::as_str))
        .map_or_else(|| tool_input.to_string(), str::to_owned);
    let mut message = reasons.join("\n");
    if !message.is_empty() {
        message.push_str("\n\n");
    }
    message.push_str(&what);
    ctx.ui()
        .confirm(&format!("Claude Code hook: allow {name}?"), &message)
}

/// `PostToolUse` (or `PostToolUseFailure`): exit 2's stderr, `decision: "block"`'s reason and
/// `additionalContext` (and `PreToolUse`'s) are added to the tool's result the model reads.
fn post_tool_use(plugin: &Plugin, event: Value<'_>, ctx: &Context<'_>) -> Result<Option<Json>> {
    let pi_tool = event.get("toolName").as_str().unwrap_or_default();
    let id = event.get("toolCallId").as_str().unwrap_or_default();
    let name = claude_name(pi_tool);
    let is_error = event.get("isError").as_bool().unwrap_or(false);
    let hook_event = if is_error {
        "PostToolUseFailure"
    } else {
        "PostToolUse"
    };
    let pending = plugin.lock().tool_context.contains_key(id);
    if !pending && !wanted(plugin, hook_event, name) {
        return Ok(None);
    }
    let result = event.to_serde();
    let tool_input = claude_input(
        pi_tool,
        &event.get("input").to_serde(),
        Path::new(ctx.cwd()),
    );
    let mut extra = plugin.lock().tool_context.remove(id).unwrap_or_default();
    let fields = if is_error {
        serde_json::json!({
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": id,
            "error": text_of(&result),
            "is_interrupt": false,
        })
    } else {
        serde_json::json!({
            "tool_name": name,
            "tool_input": tool_input,
            "tool_response": claude_response(pi_tool, &tool_input, &result),
            "tool_use_id": id,
        })
    };
    if let Some(answers) = fire(plugin, ctx, hook_event, Some(name), fields) {
        if let Some(reason) = answers.stop() {
            tell(ctx, Notify::Warning, &reason);
            let _ = ctx.abort();
        }
        for text in answers
            .blocking()
            .into_iter()
            .chain(answers.decision_blocks())
        {
            extra.push(format!("{hook_event} hook feedback:\n{text}"));
        }
        extra.extend(answers.additional_context());
    }
    if extra.is_empty() {
        return Ok(None);
    }
    let mut content = result
        .get("content")
        .and_then(Json::as_array)
        .cloned()
        .unwrap_or_default();
    content.extend(
        extra
            .into_iter()
            .map(|text| serde_json::json!({"type": "text", "text": text})),
    );
    Ok(Some(serde_json::json!({"content": content})))
}

/// `Stop`, on the `turn_end` of a turn that ends the run (the model stopped without calling a
/// tool): exit 2's stderr or `decision: "block"`'s reason go to the model as a custom message
/// (`Stop hook feedback:\n<reason>`; not a user prompt, so no `UserPromptSubmit`). While the
/// run is still going (pi-hooks calls `turn_end` handlers inside its loop) it is a follow-up
/// the run takes up at once; a follow-up sent from `agent_end` would wait for the next
/// prompt. Where the run has already ended (pi calls extension handlers without holding its
/// loop) it starts a new turn (`triggerTurn`). `stop_hook_active` stays true until the next
/// user prompt.
fn stop(plugin: &Plugin, event: Value<'_>, ctx: &Context<'_>) -> Result<()> {
    let message = event.get("message");
    if !matches!(message.get("stopReason").as_str(), Some("stop" | "length")) {
        return Ok(());
    }
    if message
        .get("content")
        .iter()
        .any(|block| block.get("type").as_str() == Some("toolCall"))
    {
        return Ok(());
    }
    let active = plugin.lock().stop_active;
    let Some(answers) = fire(
        plugin,
        ctx,
        "Stop",
        None,
        serde_json::json!({"stop_hook_active": active}),
    ) else {
        return Ok(());
    };
    if let Some(reason) = answers.stop() {
        tell(ctx, Notify::Warning, &reason);
        return Ok(());
    }
    let mut reasons = answers.blocking();
    reasons.extend(answers.decision_blocks());
    if reasons.is_empty() {
        return Ok(());
    }
    plugin.lock().stop_active = true;
    let message = serde_json::json!({
        "customType": CONTEXT_TYPE,
        "content": format!("Stop hook feedback:\n{}", reasons.join("\n")),
        "display": true,
    });
    // pi-hooks runs `turn_end` handlers inside the loop: the run is still going and takes the
    // follow-up up. pi does not wait for them: by now its run has ended, so the feedback
    // starts the next turn itself.
    let options = if ctx.is_idle() {
        serde_json::json!({"triggerTurn": true})
    } else {
        serde_json::json!({"deliverAs": "followUp"})
    };
    ctx.plugin().send_message(&message, &options)
}

/// `PreCompact` (`trigger` `manual` or `auto`): it cannot block (exit 2 shows stderr to the
/// user), but `continue: false` cancels the compaction.
fn pre_compact(plugin: &Plugin, event: Value<'_>, ctx: &Context<'_>) -> Result<Option<Json>> {
    let trigger = if std::mem::take(&mut plugin.lock().auto_compaction) {
        "auto"
    } else {
        "manual"
    };
    let Some(answers) = fire(
        plugin,
        ctx,
        "PreCompact",
        Some(trigger),
        serde_json::json!({
            "trigger": trigger,
            "custom_instructions": event.get("customInstructions").as_str().unwrap_or_default(),
        }),
    ) else {
        return Ok(None);
    };
    for text in answers.blocking() {
        tell(
            ctx,
            Notify::Warning,
            &format!("PreCompact hook error: {text}"),
        );
    }
    Ok(answers.stop().map(|reason| {
        tell(ctx, Notify::Warning, &reason);
        serde_json::json!({"cancel": true})
    }))
}

/// `/claude-hooks` (the state) and `/claude-hooks trust` (pin this project's hooks).
fn command(plugin: &Plugin, args: &str, ctx: &Context<'_>) -> Result<()> {
    match args {
        "trust" => {
            let Some(dir) = agent_dir() else {
                reply(
                    ctx,
                    Notify::Error,
                    "no agent directory to keep the approval in: set HOME or PI_CODING_AGENT_DIR to an absolute path",
                );
                return Ok(());
            };
            let mut store = match TrustStore::open(TrustStore::path_in(&dir)) {
                Ok(store) => store,
                Err(error) => {
                    reply(ctx, Notify::Error, &error);
                    return Ok(());
                }
            };
            let pending: Vec<_> = plugin
                .lock()
                .config
                .untrusted()
                .map(|s| (s.path.clone(), s.sha256.clone(), s.commands))
                .collect();
            if pending.is_empty() {
                reply(ctx, Notify::Info, "no untrusted project hooks here");
                return Ok(());
            }
            for (path, sha256, _) in &pending {
                store.trust(path, sha256);
            }
            if let Err(error) = store.save() {
                reply(ctx, Notify::Error, &error);
                return Ok(());
            }
            load_config(plugin, ctx);
            for (path, _, commands) in pending {
                reply(
                    ctx,
                    Notify::Info,
                    &format!(
                        "trusted the hooks in {} ({commands} commands); they run from now on",
                        path.display()
                    ),
                );
            }
        }
        "" | "status" => {
            let lines: Vec<String> = {
                let st = plugin.lock();
                let mut lines: Vec<String> = st
                    .config
                    .sources
                    .iter()
                    .map(|s| {
                        format!(
                            "{} ({:?}): {} commands, {}",
                            s.path.display(),
                            s.scope,
                            s.commands,
                            s.trust.describe()
                        )
                    })
                    .collect();
                if st.config.disabled {
                    lines.push("disableAllHooks is true: no hook runs".into());
                }
                if lines.is_empty() {
                    lines.push("no hooks configured".into());
                }
                lines
            };
            for line in lines {
                reply(ctx, Notify::Info, &line);
            }
        }
        other => reply(
            ctx,
            Notify::Warning,
            &format!("unknown argument {other:?}: use /claude-hooks or /claude-hooks trust"),
        ),
    }
    Ok(())
}
