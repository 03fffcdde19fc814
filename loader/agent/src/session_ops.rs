//! Session operations as pi 0.73.1 performs them: a new session, resuming another session
//! file, forking and cloning, and model selection. (Tree navigation and compaction live in
//! `tree.rs` and `compaction.rs` beside this file.)
//!
//! Replacing the session (new, resume, fork) follows pi 0.73.1's runtime replacement:
//! the cancellable `session_before_switch` / `session_before_fork`, then
//! `session_shutdown {reason, targetSessionFile}`, the switch, `session_start {reason,
//! previousSessionFile}` and `resources_discover {reason:"startup"}`. pi re-creates its
//! extension instances at that point; pi-hooks keeps the loaded plugins (their state is
//! theirs to rebuild on `session_start`, as pi's examples do). The earlier event names seed
//! 001 documents follow for plugins written against them: `session_switch {reason,
//! previousSessionFile}` or `session_fork` / `session_branch {previousSessionFile}`, and the
//! legacy `session` event with its reason (pi's older hook API).

use serde_json::{Map, Value, json};

use super::model::{Model, same_model};
use super::{Agent, Core, Shared};
use pi_hooks_host::runner::{ExtensionError, truthy};
use pi_hooks_host::services::SessionOp;
use pi_hooks_session::SessionStore;

/// Where a fork starts (pi's `position`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkPosition {
    /// Before a user message: the new session ends at its parent, and its text is returned
    /// for the editor (`/fork`, RPC `fork`).
    Before,
    /// At the entry itself (RPC `clone`).
    At,
}

impl ForkPosition {
    fn as_str(self) -> &'static str {
        match self {
            ForkPosition::Before => "before",
            ForkPosition::At => "at",
        }
    }
}

/// What a fork did: whether a plugin cancelled it, and the forked user message's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkOutcome {
    /// A `session_before_fork` handler cancelled it.
    pub cancelled: bool,
    /// The text of the user message forked before (for the editor).
    pub text: Option<String>,
}

/// Whether `file` is the file at `path` (its device and inode).
#[cfg(unix)]
fn same_file(file: &std::fs::File, path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let key = |m: std::fs::Metadata| (m.dev(), m.ino());
    file.metadata().ok().map(key) == std::fs::metadata(path).ok().map(key)
}

/// Whether `file` is the file at `path` (never known here: taken as another).
#[cfg(not(unix))]
fn same_file(_file: &std::fs::File, _path: &std::path::Path) -> bool {
    false
}

/// Whether a `session_before_*` result cancels.
fn cancels(result: &Option<Value>) -> bool {
    result
        .as_ref()
        .and_then(|r| r.get("cancel"))
        .is_some_and(truthy)
}

/// The text blocks of a user message's content, joined (pi's `extractUserMessageText`).
pub(super) fn user_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

impl Agent {
    /// Performs a session operation a plugin command asked for; a failure is reported as the
    /// plugin's error for the operation.
    pub(super) fn perform_requested(&mut self, plugin: &str, op: SessionOp) {
        let (event, outcome) = match op {
            SessionOp::New(parent) => ("new_session", self.replace_with_new(parent).map(drop)),
            SessionOp::Switch(path) => ("switch_session", self.resume(&path).map(drop)),
            SessionOp::Fork(entry) => {
                let outcome = self.fork_at(&entry, ForkPosition::Before);
                if let Ok(ForkOutcome {
                    cancelled: false,
                    text,
                }) = &outcome
                {
                    *Shared::lock(&self.core.shared.forked_text) =
                        Some(text.clone().unwrap_or_default());
                }
                ("fork", outcome.map(drop))
            }
            SessionOp::Tree(target, options) => {
                ("navigate_tree", self.navigate(&target, &options).map(drop))
            }
            SessionOp::Reload => ("reload", self.reload_now().map(drop)),
            SessionOp::Compact(instructions) => (
                "compact",
                self.compact_now(instructions.as_deref(), "manual")
                    .map(drop),
            ),
        };
        if let Err(error) = outcome {
            self.core.runner.emit_error(&ExtensionError {
                extension_path: plugin.to_owned(),
                event: event.into(),
                error,
            });
        }
    }

    /// Starts a new session (pi's `newSession`; RPC `new_session`): `Ok(true)` when a
    /// `session_before_switch` handler cancelled it. Refused while a run is in progress. What
    /// plugins queued meanwhile runs after it.
    pub fn new_session(&mut self, parent_session: Option<String>) -> Result<bool, String> {
        let outcome = self.replace_with_new(parent_session);
        self.drain_runs();
        outcome
    }

    /// Resumes the session saved at `path` (pi's `switchSession`; RPC `switch_session`,
    /// `--resume`): `Ok(true)` when a plugin cancelled it. The model the session last used is
    /// selected again when the provider offers it (`model_select` with source "restore").
    pub fn switch_session(&mut self, path: &str) -> Result<bool, String> {
        let outcome = self.resume(path);
        self.drain_runs();
        outcome
    }

    /// Forks the session (pi's `fork`; RPC `fork` with [`ForkPosition::Before`], `clone` with
    /// [`ForkPosition::At`] on the leaf).
    pub fn fork(&mut self, entry_id: &str, position: ForkPosition) -> Result<ForkOutcome, String> {
        let outcome = self.fork_at(entry_id, position);
        self.drain_runs();
        outcome
    }

    /// Selects the model `provider`/`id` (pi's `setModel`; RPC `set_model`): a `model_change`
    /// entry, then `model_select {source:"set"}` when the model changed.
    pub fn set_model(&mut self, provider: &str, id: &str) -> Result<Value, String> {
        let model = self
            .core
            .shared
            .available_models
            .iter()
            .find(|m| m["provider"] == provider && m["id"] == id)
            .cloned()
            .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
        Shared::lock(&self.core.shared.queues).model_request = Some((model, "set"));
        self.apply_model_request();
        Ok(self.core.shared.model_info())
    }

    /// Selects the next model the provider offers (pi's `cycleModel`; RPC `cycle_model`):
    /// `None` when there is only one.
    pub fn cycle_model(&mut self) -> Option<Value> {
        let available = &self.core.shared.available_models;
        if available.len() <= 1 {
            return None;
        }
        let current = self.core.shared.model_info();
        let at = available
            .iter()
            .position(|m| same_model(m, &current))
            .unwrap_or(0);
        let next = available[(at + 1) % available.len()].clone();
        Shared::lock(&self.core.shared.queues).model_request = Some((next, "cycle"));
        self.apply_model_request();
        Some(
            json!({"model": self.core.shared.model_info(), "thinkingLevel": "off", "isScoped": false}),
        )
    }

    /// Applies a queued model selection, if any.
    pub(super) fn apply_model_request(&mut self) {
        apply_model_request(self.model.as_mut(), &self.core);
    }

    fn refuse_while_running(&self, what: &str) -> Result<(), String> {
        if self.core.shared.is_streaming() {
            return Err(format!(
                "cannot {what} while the agent is running; abort the run first"
            ));
        }
        Ok(())
    }

    fn current_file(&self) -> Option<String> {
        Shared::lock(&self.core.shared.session)
            .path()
            .map(|p| p.to_string_lossy().into_owned())
    }

    /// A new session file beside the current one (in memory when the current one is).
    fn sibling_path(&self) -> Option<std::path::PathBuf> {
        let session = Shared::lock(&self.core.shared.session);
        let dir = session.path()?.parent()?.to_path_buf();
        Some(pi_hooks_session::new_session_path(&dir))
    }

    fn replace_with_new(&mut self, parent_session: Option<String>) -> Result<bool, String> {
        self.refuse_while_running("start a new session")?;
        let core = &self.core;
        if core.runner.has_handlers("session_before_switch")
            && cancels(
                &core
                    .runner
                    .emit_session_before(json!({"type": "session_before_switch", "reason": "new"})),
            )
        {
            return Ok(true);
        }
        if core.runner.has_handlers("session")
            && cancels(
                &core
                    .runner
                    .emit_legacy_session("before_clear", core.session_fields()),
            )
        {
            return Ok(true);
        }
        let next = match self.sibling_path() {
            Some(path) => {
                SessionStore::create_with_parent(path, &core.config.cwd, parent_session.as_deref())
                    .map_err(|e| format!("cannot create the new session: {e}"))?
            }
            None => SessionStore::in_memory(&core.config.cwd),
        };
        let previous = self.install(next, "new", true);
        let core = &self.core;
        core.runner.emit(json!({
            "type": "session_switch",
            "reason": "new",
            "previousSessionFile": previous,
        }));
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("previousSessionFile".into(), previous.into());
            core.runner.emit_legacy_session("clear", fields);
        }
        Ok(false)
    }

    fn resume(&mut self, path: &str) -> Result<bool, String> {
        // A confined plugin's switch: the file the host checked and opened for it, taken
        // before `session_before_switch` can move anything (a swap then changes nothing).
        let checked = pi_hooks_host::sandbox::take_opened(std::path::Path::new(path));
        self.refuse_while_running("switch sessions")?;
        let core = &self.core;
        if core.runner.has_handlers("session_before_switch")
            && cancels(&core.runner.emit_session_before(json!({
                "type": "session_before_switch",
                "reason": "resume",
                "targetSessionFile": path,
            })))
        {
            return Ok(true);
        }
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("targetSessionFile".into(), path.into());
            if cancels(&core.runner.emit_legacy_session("before_switch", fields)) {
                return Ok(true);
            }
        }
        let next = self.open_for_switch(path, checked)?;
        let previous = self.install(next, "resume", true);
        let core = &self.core;
        core.runner.emit(json!({
            "type": "session_switch",
            "reason": "resume",
            "previousSessionFile": previous,
        }));
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("previousSessionFile".into(), previous.into());
            core.runner.emit_legacy_session("switch", fields);
        }
        // The model the session last used, when the provider offers it.
        let restored = Shared::lock(&core.shared.session).session_context().model;
        if let Some(model) = restored.and_then(|m| {
            core.shared
                .available_models
                .iter()
                .find(|a| a["provider"] == m.provider.as_str() && a["id"] == m.model_id.as_str())
                .cloned()
        }) {
            Shared::lock(&core.shared.queues).model_request = Some((model, "restore"));
            self.apply_model_request();
        }
        Ok(false)
    }

    /// Opens the session file to switch to (through `checked`, the file the host already
    /// opened for a confined plugin, when there is one). The current file is locked by this
    /// host, so switching to it again closes it first (and reopens it should that fail).
    fn open_for_switch(
        &mut self,
        path: &str,
        checked: Option<Result<(std::fs::File, bool), String>>,
    ) -> Result<SessionStore, String> {
        let wanted = std::path::Path::new(path);
        let failed = |e: pi_hooks_session::SessionError| format!("cannot switch sessions: {e}");
        let checked = match checked {
            Some(Err(why)) => return Err(format!("cannot switch sessions: {why}")),
            Some(Ok(file)) => Some(file),
            None => None,
        };
        let current = Shared::lock(&self.core.shared.session)
            .path()
            .map(std::path::Path::to_path_buf);
        let same = current.as_deref().is_some_and(|current| match &checked {
            Some((file, _)) => same_file(file, current),
            None => std::fs::canonicalize(current).ok() == std::fs::canonicalize(wanted).ok(),
        });
        let open = |checked: Option<(std::fs::File, bool)>| match checked {
            Some((file, writable)) => SessionStore::open_file(file, writable, wanted),
            None => SessionStore::open(wanted),
        };
        if !same {
            return open(checked).map(|(s, _)| s).map_err(failed);
        }
        let cwd = self.core.config.cwd.clone();
        let old = std::mem::replace(
            &mut *Shared::lock(&self.core.shared.session),
            SessionStore::in_memory(&cwd),
        );
        drop(old);
        match open(checked) {
            Ok((store, _)) => Ok(store),
            Err(error) => {
                if let Ok((store, _)) = SessionStore::open(wanted) {
                    *Shared::lock(&self.core.shared.session) = store;
                }
                Err(failed(error))
            }
        }
    }

    fn fork_at(&mut self, entry_id: &str, position: ForkPosition) -> Result<ForkOutcome, String> {
        self.refuse_while_running("fork the session")?;
        let core = &self.core;
        if core.runner.has_handlers("session_before_fork") {
            let result = core.runner.emit_session_before(json!({
                "type": "session_before_fork",
                "entryId": entry_id,
                "position": position.as_str(),
            }));
            if cancels(&result) {
                return Ok(ForkOutcome {
                    cancelled: true,
                    text: None,
                });
            }
            // pi 0.73.1 ignores `skipConversationRestore`: the session always goes on from
            // the forked file.
        }
        if core.runner.has_handlers("session_before_branch") {
            let result = core
                .runner
                .emit_session_before(json!({"type": "session_before_branch", "entryId": entry_id}));
            if cancels(&result) {
                return Ok(ForkOutcome {
                    cancelled: true,
                    text: None,
                });
            }
        }
        let (entry, index) = {
            let session = Shared::lock(&core.shared.session);
            let entry = session.entry(entry_id).cloned();
            let index = session.entries().iter().position(|e| e["id"] == entry_id);
            (entry, index)
        };
        let Some(entry) = entry else {
            return Err("Invalid entry ID for forking".into());
        };
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("targetTurnIndex".into(), index.into());
            if cancels(&core.runner.emit_legacy_session("before_branch", fields)) {
                return Ok(ForkOutcome {
                    cancelled: true,
                    text: None,
                });
            }
        }
        let (leaf, text) = match position {
            ForkPosition::At => (Some(entry_id.to_owned()), None),
            ForkPosition::Before => {
                if entry["type"] != "message" || entry["message"]["role"] != "user" {
                    return Err("Invalid entry ID for forking".into());
                }
                (
                    entry["parentId"].as_str().map(str::to_owned),
                    Some(user_text(&entry["message"]["content"])),
                )
            }
        };
        let cwd = core.config.cwd.clone();
        let path = self.sibling_path();
        let current = self.current_file();
        let next = match (&leaf, path) {
            (Some(leaf), path) => {
                Shared::lock(&self.core.shared.session).create_branched(path, &cwd, leaf)
            }
            // Forking before the first message: an empty session whose parent is this one.
            (None, Some(path)) => SessionStore::create_with_parent(path, &cwd, current.as_deref()),
            (None, None) => Ok(SessionStore::in_memory(&cwd)),
        }
        .map_err(|e| format!("cannot fork the session: {e}"))?;
        let previous = self.install(next, "fork", true);
        let core = &self.core;
        for name in ["session_fork", "session_branch"] {
            core.runner
                .emit(json!({"type": name, "previousSessionFile": previous}));
        }
        if core.runner.has_handlers("session") {
            let mut fields = core.session_fields();
            fields.insert("previousSessionFile".into(), previous.into());
            fields.insert("targetTurnIndex".into(), index.into());
            core.runner.emit_legacy_session("branch", fields);
        }
        Ok(ForkOutcome {
            cancelled: false,
            text,
        })
    }

    /// Replaces the session with `next`: `session_shutdown {reason, targetSessionFile}`, the
    /// old store closed (its lock released), the agent's messages rebuilt from the new branch
    /// (unless `restore` is false), queued messages dropped, then `session_start {reason,
    /// previousSessionFile}` and `resources_discover {reason:"startup"}`. Returns the
    /// previous session file.
    fn install(&mut self, next: SessionStore, reason: &str, restore: bool) -> Option<String> {
        let core = &self.core;
        let target = next.path().map(|p| p.to_string_lossy().into_owned());
        let mut shutdown = Map::new();
        shutdown.insert("type".into(), "session_shutdown".into());
        shutdown.insert("reason".into(), reason.into());
        if let Some(target) = &target {
            shutdown.insert("targetSessionFile".into(), target.clone().into());
        }
        core.runner.emit(Value::Object(shutdown));
        let previous = {
            let mut session = Shared::lock(&core.shared.session);
            let old = std::mem::replace(&mut *session, next);
            old.path().map(|p| p.to_string_lossy().into_owned())
        };
        if restore {
            let messages = Shared::lock(&core.shared.session).context_messages();
            *Shared::lock(&core.shared.messages) = messages;
        }
        {
            let mut queues = Shared::lock(&core.shared.queues);
            queues.steer.clear();
            queues.follow_up.clear();
            queues.next_turn.clear();
        }
        core.runner.set_session_file(target);
        let mut start = Map::new();
        start.insert("type".into(), "session_start".into());
        start.insert("reason".into(), reason.into());
        if let Some(previous) = &previous {
            start.insert("previousSessionFile".into(), previous.clone().into());
        }
        core.runner.emit(Value::Object(start));
        core.runner
            .emit_resources_discover(&core.config.cwd.to_string_lossy(), "startup");
        previous
    }
}

/// Applies a queued model selection: the provider selects it, the session gets a
/// `model_change` entry (not for a restore), and plugins get `model_select {model,
/// previousModel, source}` when the model changed.
pub(super) fn apply_model_request(model: &mut dyn Model, core: &Core) {
    let Some((wanted, source)) = Shared::lock(&core.shared.queues).model_request.take() else {
        return;
    };
    let previous = core.shared.model_info();
    let provider = wanted["provider"].as_str().unwrap_or_default();
    let id = wanted["id"].as_str().unwrap_or_default();
    let Ok(selected) = model.select(provider, id) else {
        return;
    };
    *Shared::lock(&core.shared.model_info) = selected.clone();
    if source != "restore" {
        let written = Shared::lock(&core.shared.session).append_model_change(provider, id);
        if let Err(error) = written {
            eprintln!("pi-hooks: cannot write the session: {error}");
        }
    }
    if !same_model(&previous, &selected) {
        core.runner.emit(json!({
            "type": "model_select",
            "model": selected,
            "previousModel": previous,
            "source": source,
        }));
    }
}
