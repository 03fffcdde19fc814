//! The session store: pi's JSONL session format, version 3.
//!
//! # The file
//!
//! One JSON object per line. The first is the header,
//! `{"type":"session","version":3,"id":<uuid>,"timestamp":<ISO>,"cwd":..,"parentSession"?}`;
//! every later line is an entry with a `type`, its own fields, an `id` (8 hex characters, unique
//! in the session), a `parentId` (the leaf it was appended under, `null` for a root) and a
//! `timestamp` (`2026-01-24T16:22:26.831Z`, as JavaScript's `toISOString`). Entries form a tree;
//! the current branch runs from the root to the leaf, the entry most recently appended (or the
//! one [`SessionStore::set_leaf`] chose). Files live in
//! `<agentDir>/sessions/--<encoded cwd>--/<timestamp>_<uuid>.jsonl` ([`session_dir`],
//! [`new_session_path`]); `--continue` takes the [`most_recent`] one.
//!
//! Keys are written in the order pi's code writes them (`type`, then `customType`/`data` or
//! `content`/`display`/`details`, then `id`, `parentId`, `timestamp` for `custom` and
//! `custom_message`; `type`, `id`, `parentId`, `timestamp`, then the fields for the other types).
//! That is done when a line is written ([`entry`]), whatever order the keys have in memory.
//! (serde_json's `preserve_order` feature is enabled for the workspace, for the transcripts
//! `summarize.rs` builds, so in-memory entries keep the order they were parsed in.)
//!
//! # Durability: what an acknowledged append promises
//!
//! The design rule is "session files are append-only JSONL; an acknowledged entry survives a
//! crash of the host". So:
//!
//! * **No deferral.** pi keeps a new session in memory until it holds an assistant message and
//!   then writes the header and everything buffered. That would break the rule (a plugin's
//!   `appendEntry` before the first answer would be acknowledged but lost in a crash), so here
//!   the header is written when the session is created and every entry as it is appended. The
//!   visible difference: a session abandoned before the first answer leaves a file that pi
//!   would not have written.
//! * **Append only.** The file is opened with `O_APPEND` and each entry goes out as one line
//!   with one `write`; lines are never rewritten, not even to migrate an old version (pi
//!   rewrites; here the migration is redone in memory at every opening, deterministically).
//!   The one exception is bytes that were never acknowledged: a last line without its line
//!   feed that does not parse (a write cut short by a crash) is skipped when the file is opened
//!   and cut off (`ftruncate`) just before the next append, so that the next entry does not
//!   continue the fragment and the file stays valid JSONL. Nothing is cut if the file changed
//!   size since it was read (someone else wrote after the fragment). A failed write is cut off
//!   the same way.
//! * **Only what can be read back.** serde_json's reader refuses a line nested deeper than
//!   [`MAX_DEPTH`] (127) levels of arrays and objects, the entry's own object included, so an
//!   append nested deeper is refused with [`SessionError::TooDeep`] before anything is written
//!   (a plugin's `append_entry` gets an error status), instead of being acknowledged and then
//!   making the file unreadable. The reader's limit stays: lifting it (serde_json's
//!   `unbounded_depth`) would let a hostile file overflow the stack of every function that
//!   walks, clones or drops its values.
//! * **Written, not fsync'd.** An append returns once `write(2)` has handed the line to the
//!   operating system, which keeps it if the host process crashes or is killed. It is not synced
//!   to the disk, so a power loss or kernel crash may still lose the last entries (and leave a
//!   damaged last line, which opening handles). Measured on this project's machine (ext4 on a
//!   virtual disk): 1 µs per append written, 2.3 ms with `fdatasync`, 3.4 ms with `fsync`; an
//!   agent turn appends several entries and plugins may append state at every step. pi does
//!   the same (`appendFileSync`, no sync). Who needs power-loss durability turns on
//!   [`SessionStore::set_sync_each_append`] or calls [`SessionStore::sync`] at chosen points.
//!
//! # Reading
//!
//! [`SessionStore::open`] is stricter than pi, which skips every malformed line silently: only
//! what an interrupted write leaves is skipped with a warning, a last line without its line
//! feed, or a line that breaks off in the middle of its JSON (`loader/session/src/load.rs` says
//! why neither can be an acknowledged entry); any other bad line, the last one included, is an
//! error naming the file and line, and the file is left alone. Versions 1 and 2 are migrated as
//! pi migrates them (ids and parent links for v1, the `hookMessage` role renamed `custom` for
//! v3); newer versions are refused.
//!
//! # One host per file
//!
//! A store locks its file (an exclusive `flock`, released when the store is dropped or its
//! process dies) from [`SessionStore::create`] or [`SessionStore::open`] on, so a second store,
//! in this process or another pi-hooks, is refused with [`SessionError::Locked`], which names
//! the file and, on Linux, the pid holding it. Writers that ignore the lock (pi itself, another
//! program) are guarded against at each append: a file shorter than the store left it is not
//! written ([`SessionError::ChangedOnDisk`]), and the new line starts on a line of its own when
//! the file does not end in a line feed, so it is never glued to the fragment of a writer that
//! died mid-line; such entries interleave, as with pi.
//!
//! # Compaction and branch summaries
//!
//! [`compaction`] prepares the compaction of a branch (where to cut, what to summarize, the
//! `session_before_compact` preparation, the summarization requests) and [`branch_summary`]
//! the summary of a branch left by tree navigation, both as pure functions over entries, ported
//! from pi 0.73.1 and compared with it by `tests/tests/compaction_golden.rs`; [`summarize`]
//! holds what they share (file lists, the transcript a summarizing model reads).

pub mod branch_summary;
pub mod compaction;
pub mod context;
pub mod entry;
mod error;
pub mod ids;
mod load;
mod paths;
mod store;
pub mod summarize;
pub mod timestamp;

pub use context::{ModelRef, SessionContext};
pub use entry::{CURRENT_VERSION, MAX_DEPTH};
pub use error::SessionError;
pub use paths::{encode_cwd, most_recent, new_session_path, session_dir};
pub use store::SessionStore;
