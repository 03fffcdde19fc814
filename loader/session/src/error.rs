//! What can go wrong with a session file, and what to do about it.

use std::io;
use std::path::PathBuf;

/// A session store failure. Every message names the file and says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `create` was given a path that already exists (a session file is never overwritten).
    #[error(
        "session file {} already exists; start a new session with a new file name, or open this one to continue it",
        .path.display()
    )]
    AlreadyExists { path: PathBuf },

    /// The file (or its directory) could not be created, or its header not written.
    #[error(
        "cannot create session file {}: {source}; check that its directory can be created and is writable, or run with --no-session",
        .path.display()
    )]
    Create { path: PathBuf, source: io::Error },

    /// The file could not be read.
    #[error("cannot read session file {}: {source}; check the path and its permissions", .path.display())]
    Read { path: PathBuf, source: io::Error },

    /// An entry could not be written: it was not added to the session.
    #[error(
        "cannot write to session file {}: {source}; the entry was not saved (check free disk space and permissions)",
        .path.display()
    )]
    Write { path: PathBuf, source: io::Error },

    /// The file does not start with a session header.
    #[error("{} is not a pi session file: {reason}; open another file or start a new session", .path.display())]
    NotASession { path: PathBuf, reason: String },

    /// A complete line (one that ends in a line feed) is not a valid entry. Nothing was changed.
    #[error(
        "session file {}, line {line}: {reason}. Only an interrupted write is skipped (a last line without its line \
         feed, or a line that breaks off in the middle of its JSON); this line is complete, so the file was not \
         opened and not changed: repair or delete that line, or start a new session",
        .path.display()
    )]
    Corrupt {
        path: PathBuf,
        line: usize,
        reason: String,
    },

    /// The header carries a version this host cannot read or migrate.
    #[error(
        "session file {} has format version {version}; this host reads versions 1 to 3 (older ones are migrated as \
         they are read): use a newer pi-hooks or start a new session",
        .path.display()
    )]
    UnsupportedVersion { path: PathBuf, version: String },

    /// The file is shorter than this store left it: someone cut it, and acknowledged entries
    /// may be gone, so nothing is written on top.
    #[error(
        "session file {} is shorter than this host left it (did another program cut or rewrite it?); nothing was \
         written: open it again before appending",
        .path.display()
    )]
    ChangedOnDisk { path: PathBuf },

    /// Another session store (in this or another process) has the file open: two hosts appending
    /// to one session would interleave their entries and could damage each other's lines.
    #[error(
        "session file {} is in use by another pi-hooks{}; only one host may write a session at a time. Close the \
         other one (or let it finish) and try again, or start a new session instead of continuing this one",
        .path.display(),
        .holder.map(|pid| format!(" (pid {pid})")).unwrap_or_default()
    )]
    Locked { path: PathBuf, holder: Option<u32> },

    /// An entry nests arrays and objects deeper than a session file may hold: it was refused
    /// before anything was written, because it could not be read back.
    #[error(
        "the {entry_type} entry for session {session} nests {depth} levels of arrays and objects (counting the entry \
         itself); a session entry may nest at most {limit}, the most this host reads back. The entry was not saved: \
         flatten the data, or store the deep part as a JSON string"
    )]
    TooDeep {
        session: String,
        entry_type: String,
        depth: usize,
        limit: usize,
    },

    /// An operation named an entry id the session does not hold.
    #[error("no entry with id {id} in session {session}; pick an id from the session's entries")]
    UnknownEntry { session: String, id: String },
}
