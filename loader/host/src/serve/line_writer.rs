//! Stdout as a writer of whole JSON lines: what the serve protocol and pi's RPC protocol
//! write through, so that lines from several threads never interleave.

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// Stdout as a writer of whole JSON lines, shared by the loop, the tool threads and the
/// mode's own threads. A failed write (a closed pipe) is ignored, never a panic.
#[derive(Clone)]
pub struct LineWriter {
    out: Arc<Mutex<Box<dyn Write + Send>>>,
}

impl LineWriter {
    /// A writer on this process's stdout.
    pub fn stdout() -> Self {
        LineWriter::to(Box::new(std::io::stdout()))
    }

    /// A writer on `out` (an isolated plugin's `serve` child writes its protocol to a file
    /// descriptor of its own, see `--protocol-fd`).
    pub fn to(out: Box<dyn Write + Send>) -> Self {
        LineWriter {
            out: Arc::new(Mutex::new(out)),
        }
    }

    /// Writes `value` as one line and flushes it.
    pub fn line(&self, value: &Value) {
        self.text(&value.to_string());
    }

    /// Writes `text` and a newline, then flushes.
    pub fn text(&self, text: &str) {
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}
