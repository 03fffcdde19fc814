//! [`SessionStore`]: one session, its entries in memory and (unless in memory only) its file.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::SessionError;
use super::context::{self, SessionContext};
use super::entry::{CURRENT_VERSION, HEADER_TYPE, MAX_DEPTH, nesting_depth, to_line};
use super::ids::{new_entry_id, new_uuid};
use super::load;
use super::paths::parse_session_file_name;
use super::timestamp::now_iso;

/// One session: a header and a tree of entries linked by `parentId`, with a leaf (the entry the
/// next append hangs under). See the [module documentation](super) for the file format and the
/// durability rules.
#[derive(Debug)]
pub struct SessionStore {
    header: Value,
    id: String,
    path: Option<PathBuf>,
    /// The file, opened (for reading and appending) by [`SessionStore::create`] or
    /// [`SessionStore::open`], and locked for as long as the store lives.
    file: Option<File>,
    /// `false` when the file could only be opened for reading: appends are refused.
    writable: bool,
    entries: Vec<Value>,
    /// Entry id -> index in `entries` (the later entry wins a duplicate id, as in pi).
    by_id: HashMap<String, usize>,
    labels: HashMap<String, String>,
    leaf: Option<String>,
    /// The file's length as this store last left it (read or written).
    written_len: u64,
    /// Bytes that were never acknowledged, to cut off before the next append.
    pending_cut: Option<PendingCut>,
    sync_each_append: bool,
}

/// Bytes from `at` to the end of the file were never acknowledged (a write cut short).
#[derive(Debug, Clone, Copy)]
struct PendingCut {
    at: u64,
    /// The file length this cut was planned for; a different length means someone else wrote,
    /// and then nothing is cut.
    expected_len: u64,
}

impl SessionStore {
    /// A new session saved at `path` for `cwd`. The directory is created if needed and the
    /// header written at once (the file must not exist: a session file is never overwritten).
    /// When `path` is named as [`super::new_session_path`] names files, the header takes its uuid
    /// as the session id and its time as the timestamp, as pi's headers do. The file is locked
    /// for the store's life, as by [`SessionStore::open`].
    pub fn create(path: PathBuf, cwd: &Path) -> Result<SessionStore, SessionError> {
        SessionStore::create_with_parent(path, cwd, None)
    }

    /// [`SessionStore::create`] with the header's `parentSession` (the file this session was
    /// forked or started from).
    pub fn create_with_parent(
        path: PathBuf,
        cwd: &Path,
        parent_session: Option<&str>,
    ) -> Result<SessionStore, SessionError> {
        let (id, timestamp) =
            parse_session_file_name(&path).unwrap_or_else(|| (new_uuid(), now_iso()));
        let header = new_header(&id, timestamp, cwd, parent_session);
        let create_error = |source| SessionError::Create {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(create_error)?;
        }
        let mut file = match OpenOptions::new()
            .read(true)
            .append(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                return Err(SessionError::AlreadyExists { path });
            }
            Err(error) => return Err(create_error(error)),
        };
        // Only a host that opened the new file by name in the moment since it was created can
        // hold the lock; the file is still empty, so nothing is lost by removing it. A file system
        // without locks is used without one (`lock` says so only where it can warn: `open`).
        if let Err(error) = lock(&file, &path) {
            drop(file);
            let _ = fs::remove_file(&path);
            return Err(error);
        }
        let line = format!("{}\n", to_line(&header));
        if let Err(error) = file.write_all(line.as_bytes()) {
            drop(file);
            // Our own file, holding at most part of a header: nothing acknowledged is lost.
            let _ = fs::remove_file(&path);
            return Err(create_error(error));
        }
        let mut store = SessionStore::empty(Value::Object(header), id, Some(path));
        store.file = Some(file);
        store.writable = true;
        store.written_len = line.len() as u64;
        Ok(store)
    }

    /// pi's `createBranchedSession`: a new session holding the branch that ends at `leaf_id`
    /// (root -> that entry, entries copied as they are, ids and parents kept), its labels
    /// written again as `label` entries after it, and `parentSession` naming this session's
    /// file. Saved at `path` (created as by [`SessionStore::create`]), or kept in memory for
    /// `None`. The new session's leaf is the last entry written.
    pub fn create_branched(
        &self,
        path: Option<PathBuf>,
        cwd: &Path,
        leaf_id: &str,
    ) -> Result<SessionStore, SessionError> {
        let branch: Vec<Value> = self
            .path_to(leaf_id)
            .into_iter()
            .filter(|entry| entry.get("type").and_then(Value::as_str) != Some("label"))
            .cloned()
            .collect();
        if branch.is_empty() {
            return Err(self.unknown_entry(leaf_id));
        }
        let parent = self.path.as_ref().map(|p| p.to_string_lossy().into_owned());
        let mut store = match path {
            Some(path) => SessionStore::create_with_parent(path, cwd, parent.as_deref())?,
            None => SessionStore::in_memory(cwd),
        };
        for entry in branch {
            let line = match &entry {
                Value::Object(fields) => to_line(fields),
                other => other.to_string(),
            };
            store.write_line(&line)?;
            store.index(entry);
        }
        let labelled: Vec<(String, String)> = store
            .entries
            .iter()
            .filter_map(|entry| entry.get("id").and_then(Value::as_str))
            .filter_map(|id| Some((id.to_owned(), self.labels.get(id)?.clone())))
            .collect();
        for (target, label) in labelled {
            store.append_label(&target, Some(&label))?;
        }
        Ok(store)
    }

    /// A session kept in memory only (`--no-session`): the same API, nothing written.
    pub fn in_memory(cwd: &Path) -> SessionStore {
        let id = new_uuid();
        let header = new_header(&id, now_iso(), cwd, None);
        SessionStore::empty(Value::Object(header), id, None)
    }

    /// Opens an existing session file to continue it; later appends go to its end. Returns the
    /// session and warnings, one sentence each: a damaged last line without its line feed (a
    /// write cut short by a crash) is skipped, and cut off before the next append; a line that
    /// breaks off in the middle of its JSON (another writer died there) is skipped and left in
    /// the file; a file of format version 1 or 2 is migrated in memory, as pi migrates it, but
    /// not rewritten. Any other damaged line, a file that does not start with a session header,
    /// or a version newer than 3 is an error, and the file is left untouched. The leaf is the
    /// last entry in the file.
    ///
    /// The file is locked (an exclusive `flock`) until the store is dropped: while one store
    /// has it, opening it again, in this process or another, fails with
    /// [`SessionError::Locked`]. A file this user may read but not write opens, and every
    /// append to it fails.
    pub fn open(path: &Path) -> Result<(SessionStore, Vec<String>), SessionError> {
        let read_error = |source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        };
        let (file, writable) = match OpenOptions::new().read(true).append(true).open(path) {
            Ok(file) => (file, true),
            Err(error) if error.kind() == io::ErrorKind::PermissionDenied => {
                (File::open(path).map_err(read_error)?, false)
            }
            Err(error) => return Err(read_error(error)),
        };
        SessionStore::open_file(file, writable, path)
    }

    /// [`SessionStore::open`] of a file already open: `file` (opened for reading, and for
    /// appending when `writable`) is what is read, locked and appended to, and `path` only
    /// names it (in the store and in messages); it is never opened again. For a file the
    /// host checked by its handle (a session a confined plugin switches to), so what was
    /// checked is what is used.
    pub fn open_file(
        mut file: File,
        writable: bool,
        path: &Path,
    ) -> Result<(SessionStore, Vec<String>), SessionError> {
        let read_error = |source| SessionError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut warnings: Vec<String> = lock(&file, path)?.into_iter().collect();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(read_error)?;
        let loaded = load::parse(path, &bytes)?;
        warnings.extend(loaded.warnings);
        let id = loaded.header["id"].as_str().unwrap_or_default().to_owned();
        let mut store =
            SessionStore::empty(Value::Object(loaded.header), id, Some(path.to_path_buf()));
        for entry in loaded.entries {
            store.index(entry);
        }
        store.file = Some(file);
        store.writable = writable;
        store.written_len = loaded.damaged_tail_at.unwrap_or(loaded.file_len);
        store.pending_cut = loaded.damaged_tail_at.map(|at| PendingCut {
            at,
            expected_len: loaded.file_len,
        });
        Ok((store, warnings))
    }

    fn empty(header: Value, id: String, path: Option<PathBuf>) -> SessionStore {
        SessionStore {
            header,
            id,
            path,
            file: None,
            writable: false,
            entries: Vec::new(),
            by_id: HashMap::new(),
            labels: HashMap::new(),
            leaf: None,
            written_len: 0,
            pending_cut: None,
            sync_each_append: false,
        }
    }

    /// The header: `{"type":"session","version":3,"id","timestamp","cwd","parentSession"?}`
    /// (an older file's header reads as version 3 once migrated).
    pub fn header(&self) -> &Value {
        &self.header
    }

    /// The session file, or `None` for a session in memory only.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The session id (a UUID).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The working directory in the header.
    pub fn cwd(&self) -> &str {
        self.header.get("cwd").and_then(Value::as_str).unwrap_or("")
    }

    /// Whether entries are written to a file.
    pub fn is_persisted(&self) -> bool {
        self.path.is_some()
    }

    /// Whether every append is also synced to the disk (`fdatasync`) before it returns, so that
    /// it survives a power loss, not only a crash of the host. Off by default: it costs a few
    /// milliseconds per entry against microseconds (see the module documentation).
    pub fn set_sync_each_append(&mut self, on: bool) {
        self.sync_each_append = on;
    }

    /// Syncs everything written so far to the disk, and on Unix the directory entry of the
    /// file too (a no-op for a session in memory).
    pub fn sync(&mut self) -> Result<(), SessionError> {
        let Some(path) = self.path.as_deref() else {
            return Ok(());
        };
        let write_error = |source| SessionError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(file) = &self.file {
            file.sync_all().map_err(write_error)?;
        }
        #[cfg(unix)]
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            File::open(dir)
                .and_then(|dir| dir.sync_all())
                .map_err(write_error)?;
        }
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Appending
    // ---------------------------------------------------------------------------------------

    /// Appends `{"type":"message","message":message}` under the leaf. Returns its id.
    pub fn append_message(&mut self, message: &Value) -> Result<String, SessionError> {
        self.append(fields("message", [("message", Some(message.clone()))]))
    }

    /// Appends `{"type":"custom","customType","data"?}` (pi's `appendCustomEntry`, an
    /// extension's `appendEntry`): state for plugins, never sent to the model. `data` is left
    /// out when `None`.
    pub fn append_custom(
        &mut self,
        custom_type: &str,
        data: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(fields(
            "custom",
            [("customType", Some(custom_type.into())), ("data", data)],
        ))
    }

    /// Appends `{"type":"custom_message","customType","content","display","details"?}`: a
    /// plugin's message that takes part in the model's context (`content` is a string or
    /// text/image blocks; `details` is for the plugin, not the model).
    pub fn append_custom_message(
        &mut self,
        custom_type: &str,
        content: Value,
        display: bool,
        details: Option<Value>,
    ) -> Result<String, SessionError> {
        self.append(fields(
            "custom_message",
            [
                ("customType", Some(custom_type.into())),
                ("content", Some(content)),
                ("display", Some(display.into())),
                ("details", details),
            ],
        ))
    }

    /// Appends `{"type":"session_info","name"}` with `name` trimmed: the session's display name.
    pub fn append_session_info(&mut self, name: &str) -> Result<String, SessionError> {
        self.append(fields("session_info", [("name", Some(name.trim().into()))]))
    }

    /// Appends `{"type":"label","targetId","label"?}`: sets the label of entry `target_id`, or
    /// clears it when `label` is `None` or empty. The target must exist.
    pub fn append_label(
        &mut self,
        target_id: &str,
        label: Option<&str>,
    ) -> Result<String, SessionError> {
        if !self.by_id.contains_key(target_id) {
            return Err(self.unknown_entry(target_id));
        }
        self.append(fields(
            "label",
            [
                ("targetId", Some(target_id.into())),
                ("label", label.map(Value::from)),
            ],
        ))
    }

    /// Appends `{"type":"thinking_level_change","thinkingLevel"}`.
    pub fn append_thinking_level_change(&mut self, level: &str) -> Result<String, SessionError> {
        self.append(fields(
            "thinking_level_change",
            [("thinkingLevel", Some(level.into()))],
        ))
    }

    /// Appends `{"type":"model_change","provider","modelId"}`.
    pub fn append_model_change(
        &mut self,
        provider: &str,
        model_id: &str,
    ) -> Result<String, SessionError> {
        self.append(fields(
            "model_change",
            [
                ("provider", Some(provider.into())),
                ("modelId", Some(model_id.into())),
            ],
        ))
    }

    /// Appends `{"type":"compaction","summary","firstKeptEntryId","tokensBefore","details"?,
    /// "fromHook"?}`: from here on, the context is the summary, then the entries from
    /// `first_kept_entry_id` on.
    pub fn append_compaction(
        &mut self,
        summary: &str,
        first_kept_entry_id: &str,
        tokens_before: u64,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, SessionError> {
        self.append(fields(
            "compaction",
            [
                ("summary", Some(summary.into())),
                ("firstKeptEntryId", Some(first_kept_entry_id.into())),
                ("tokensBefore", Some(tokens_before.into())),
                ("details", details),
                ("fromHook", from_hook.map(Value::from)),
            ],
        ))
    }

    /// pi's `branchWithSummary`: moves the leaf to `branch_from` (`None`: before the first
    /// entry) and appends there `{"type":"branch_summary","fromId","summary","details"?,
    /// "fromHook"?}` (`fromId` is `"root"` for `None`), summarizing the path left behind.
    pub fn append_branch_summary(
        &mut self,
        branch_from: Option<&str>,
        summary: &str,
        details: Option<Value>,
        from_hook: Option<bool>,
    ) -> Result<String, SessionError> {
        if let Some(id) = branch_from
            && !self.by_id.contains_key(id)
        {
            return Err(self.unknown_entry(id));
        }
        let previous_leaf = std::mem::replace(&mut self.leaf, branch_from.map(str::to_owned));
        let appended = self.append(fields(
            "branch_summary",
            [
                ("fromId", Some(branch_from.unwrap_or("root").into())),
                ("summary", Some(summary.into())),
                ("details", details),
                ("fromHook", from_hook.map(Value::from)),
            ],
        ));
        if appended.is_err() {
            self.leaf = previous_leaf;
        }
        appended
    }

    /// Fills in id, parentId (the leaf) and timestamp, writes the entry, and makes it the leaf.
    /// An entry nested deeper than [`MAX_DEPTH`] is refused before anything is written: it
    /// could not be read back.
    fn append(&mut self, mut entry: Map<String, Value>) -> Result<String, SessionError> {
        let depth = 1 + entry.values().map(nesting_depth).max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(SessionError::TooDeep {
                session: self.describe(),
                entry_type: entry
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                depth,
                limit: MAX_DEPTH,
            });
        }
        let id = new_entry_id(|id| self.by_id.contains_key(id));
        entry.insert("id".into(), Value::String(id.clone()));
        let parent = self.leaf.clone().map_or(Value::Null, Value::String);
        entry.insert("parentId".into(), parent);
        entry.insert("timestamp".into(), Value::String(now_iso()));
        self.write_line(&to_line(&entry))?;
        self.index(Value::Object(entry));
        Ok(id)
    }

    /// Adds an entry to the in-memory indexes and makes it the leaf.
    fn index(&mut self, entry: Value) {
        let id = entry.get("id").and_then(Value::as_str).map(str::to_owned);
        if entry.get("type").and_then(Value::as_str) == Some("label")
            && let Some(target) = entry.get("targetId").and_then(Value::as_str)
        {
            match entry.get("label").and_then(Value::as_str) {
                Some(label) if !label.is_empty() => {
                    self.labels.insert(target.to_owned(), label.to_owned());
                }
                _ => {
                    self.labels.remove(target);
                }
            }
        }
        if let Some(id) = id {
            self.by_id.insert(id.clone(), self.entries.len());
            self.leaf = Some(id);
        }
        self.entries.push(entry);
    }

    /// Appends one line (and the line feed) with a single `write` on the `O_APPEND` file. On
    /// failure nothing is acknowledged, and whatever part reached the file is cut off before the
    /// next append.
    ///
    /// The guard against other writers (the lock keeps out other stores, not every program):
    /// the file must not be shorter than this store left it, and the line starts on a line of
    /// its own whatever the file ends with, so it is never glued to a fragment someone else left
    /// when they died in the middle of a write (reading skips such a fragment: see
    /// `loader/session/src/load.rs`).
    fn write_line(&mut self, line: &str) -> Result<(), SessionError> {
        let Some(path) = self.path.as_deref() else {
            return Ok(());
        };
        let write_error = |source| SessionError::Write {
            path: path.to_path_buf(),
            source,
        };
        let file = match &self.file {
            Some(file) if self.writable => file,
            _ => return Err(write_error(io::ErrorKind::PermissionDenied.into())),
        };
        let mut len = file.metadata().map_err(write_error)?.len();
        if let Some(cut) = self.pending_cut.take()
            && len == cut.expected_len
        {
            if let Err(error) = file.set_len(cut.at) {
                self.pending_cut = Some(cut);
                return Err(write_error(error));
            }
            len = cut.at;
            self.written_len = cut.at;
        }
        if len < self.written_len {
            return Err(SessionError::ChangedOnDisk {
                path: path.to_path_buf(),
            });
        }
        let mut bytes = Vec::with_capacity(line.len() + 2);
        if len > 0 && last_byte(file, len).map_err(write_error)? != b'\n' {
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        let mut file = file;
        let mut written = file.write_all(&bytes);
        if written.is_ok() && self.sync_each_append {
            written = file.sync_data();
        }
        if let Err(error) = written {
            // What reached the file is ours and unacknowledged: cut it off next time, unless
            // someone else wrote after it by then.
            self.pending_cut = file.metadata().ok().map(|after| PendingCut {
                at: len,
                expected_len: after.len(),
            });
            self.written_len = len;
            return Err(write_error(error));
        }
        self.written_len = len + bytes.len() as u64;
        Ok(())
    }

    // ---------------------------------------------------------------------------------------
    // Reading
    // ---------------------------------------------------------------------------------------

    /// Every entry in file order (the header excluded): pi's `getEntries`.
    pub fn entries(&self) -> &[Value] {
        &self.entries
    }

    /// The entry with this id.
    pub fn entry(&self, id: &str) -> Option<&Value> {
        self.by_id.get(id).map(|&at| &self.entries[at])
    }

    /// The current branch, root -> leaf along `parentId` links: pi's `getBranch()`.
    pub fn branch(&self) -> Vec<Value> {
        self.leaf
            .as_deref()
            .map_or_else(Vec::new, |leaf| self.branch_from(leaf))
    }

    /// The branch ending at entry `id`, root -> that entry (empty when there is no such entry):
    /// pi's `getBranch(fromId)`.
    pub fn branch_from(&self, id: &str) -> Vec<Value> {
        self.path_to(id).into_iter().cloned().collect()
    }

    fn path_to(&self, id: &str) -> Vec<&Value> {
        let mut path = Vec::new();
        let mut seen = HashSet::new();
        let mut current = self.entry(id);
        while let Some(entry) = current {
            let id = entry.get("id").and_then(Value::as_str).unwrap_or("");
            if !seen.insert(id) {
                break; // a cycle in a hand-edited file
            }
            path.push(entry);
            current = entry
                .get("parentId")
                .and_then(Value::as_str)
                .and_then(|parent| self.entry(parent));
        }
        path.reverse();
        path
    }

    /// The id of the leaf, `None` before the first entry.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.as_deref()
    }

    /// Moves the leaf: the next append hangs under `id`, starting a new branch if `id` already
    /// has children (pi's `branch`), or becomes a new root for `None` (pi's `resetLeaf`). Only
    /// the in-memory leaf moves; reopening the file puts the leaf on its last entry again.
    pub fn set_leaf(&mut self, id: Option<&str>) -> Result<(), SessionError> {
        match id {
            Some(id) if !self.by_id.contains_key(id) => Err(self.unknown_entry(id)),
            _ => {
                self.leaf = id.map(str::to_owned);
                Ok(())
            }
        }
    }

    /// The entries whose parent is `id`, in file order.
    pub fn children(&self, id: &str) -> Vec<&Value> {
        self.entries
            .iter()
            .filter(|entry| entry.get("parentId").and_then(Value::as_str) == Some(id))
            .collect()
    }

    /// The label of entry `id`, if one is set.
    pub fn label(&self, id: &str) -> Option<&str> {
        self.labels.get(id).map(String::as_str)
    }

    /// The session's name: the last non-empty `session_info` name in the file.
    pub fn session_name(&self) -> Option<String> {
        self.entries
            .iter()
            .rev()
            .filter(|entry| entry.get("type").and_then(Value::as_str) == Some("session_info"))
            .filter_map(|entry| entry.get("name").and_then(Value::as_str))
            .map(str::trim)
            .find(|name| !name.is_empty())
            .map(str::to_owned)
    }

    /// The messages the model sees for the current branch (pi's `buildSessionContext`): see
    /// [`context`](super::context) for the shapes.
    pub fn context_messages(&self) -> Vec<Value> {
        self.session_context().messages
    }

    /// The messages, thinking level and model of the current branch.
    pub fn session_context(&self) -> SessionContext {
        let branch = self.leaf.as_deref().map(|leaf| self.path_to(leaf));
        context::build(branch.as_deref().unwrap_or_default())
    }

    /// The session for messages: its file, or its id for a session in memory.
    fn describe(&self) -> String {
        match &self.path {
            Some(path) => path.display().to_string(),
            None => format!("{} (in memory)", self.id),
        }
    }

    fn unknown_entry(&self, id: &str) -> SessionError {
        SessionError::UnknownEntry {
            session: self.describe(),
            id: id.to_owned(),
        }
    }
}

/// Takes the session's lock: an exclusive `flock` on `file`, released when the file is closed
/// (when the store is dropped, or by the kernel when the process dies). Another holder gives
/// [`SessionError::Locked`]; a file system without locks gives a warning, and the file is used
/// unlocked (the guard in `write_line` still keeps every line whole).
#[cfg(unix)]
fn lock(file: &File, path: &Path) -> Result<Option<String>, SessionError> {
    use rustix::fs::{FlockOperation, flock};
    match flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(None),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(SessionError::Locked {
            path: path.to_path_buf(),
            holder: lock_holder(file),
        }),
        Err(error) => Ok(Some(unlocked_warning(path, &io::Error::from(error)))),
    }
}

#[cfg(not(unix))]
fn lock(_file: &File, path: &Path) -> Result<Option<String>, SessionError> {
    let unsupported = io::Error::new(io::ErrorKind::Unsupported, "not on this platform");
    Ok(Some(unlocked_warning(path, &unsupported)))
}

fn unlocked_warning(path: &Path, error: &io::Error) -> String {
    format!(
        "{}: cannot lock the session file ({error}), so nothing stops a second pi-hooks from writing it at the \
         same time; do not continue this session from two places at once",
        path.display()
    )
}

/// The process holding the `flock` on `file`, from `/proc/locks` (whose lines read
/// `1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF`, in hexadecimal for the
/// device numbers; a waiting lock has `->` before `FLOCK`).
#[cfg(target_os = "linux")]
fn lock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata().ok()?;
    let dev = metadata.dev();
    // glibc's `major`/`minor` for a `dev_t`.
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    let wanted = format!("{major:02x}:{minor:02x}:{}", metadata.ino());
    let locks = fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields[..] {
            // A holder outside this pid namespace shows as pid 0.
            [_, "FLOCK", _, _, pid, file_id, ..] if file_id == wanted => {
                pid.parse().ok().filter(|pid| *pid != 0)
            }
            _ => None,
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn lock_holder(_file: &File) -> Option<u32> {
    None
}

/// The byte at `len - 1`, the file's last when it is `len` bytes long.
fn last_byte(mut file: &File, len: u64) -> io::Result<u8> {
    let mut byte = [0];
    file.seek(SeekFrom::Start(len - 1))?;
    file.read_exact(&mut byte)?;
    Ok(byte[0])
}

fn new_header(
    id: &str,
    timestamp: String,
    cwd: &Path,
    parent_session: Option<&str>,
) -> Map<String, Value> {
    let mut header = Map::new();
    header.insert("type".into(), HEADER_TYPE.into());
    header.insert("version".into(), CURRENT_VERSION.into());
    header.insert("id".into(), id.into());
    header.insert("timestamp".into(), timestamp.into());
    header.insert("cwd".into(), cwd.to_string_lossy().into());
    if let Some(parent) = parent_session {
        header.insert("parentSession".into(), parent.into());
    }
    header
}

/// An entry's own fields; `None` values are left out (JavaScript drops `undefined` keys).
fn fields<const N: usize>(
    entry_type: &str,
    values: [(&str, Option<Value>); N],
) -> Map<String, Value> {
    let mut entry = Map::new();
    entry.insert("type".into(), entry_type.into());
    for (key, value) in values {
        if let Some(value) = value {
            entry.insert(key.into(), value);
        }
    }
    entry
}
