//! The built-in tools: `read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`, reimplemented
//! after pi's `src/core/tools/*.ts` (pi-mono coding-agent).
//!
//! What matches pi:
//! * Names, labels, descriptions and argument schemas (`{type:"object", properties, required}`
//!   with pi's property descriptions), and the order of [`builtin_tools`] (pi's `allTools`:
//!   read, bash, edit, write, grep, find, ls).
//! * Paths: a leading `@` is stripped, Unicode spaces become plain spaces, `~` and `~/` expand
//!   to the home directory, and relative paths resolve against the call's cwd (lexically
//!   normalised like Node's `path.resolve`). `read` also tries the macOS screenshot variant
//!   (narrow no-break space before `AM`/`PM`).
//! * Truncation ([`truncate`]): 2000 lines / 50 KB, head truncation for `read`, `grep`, `find`,
//!   `ls`, tail truncation for `bash`; `details.truncation` is pi's `TruncationResult`
//!   (camelCase keys, including `content`), sizes formatted like pi's `formatSize`.
//! * Result texts, notices and error messages word for word (`Successfully wrote N bytes to p`,
//!   `Could not find the exact text in p. ...`, `Command exited with code N`, ...). Errors are
//!   returned as `Err(message)`, which the agent loop turns into an error result with empty
//!   details, as pi does for a thrown error.
//! * `details` is `Value::Null` (pi's `undefined`) whenever pi leaves it undefined.
//!
//! Where we differ (documented per tool): `grep`/`find` use the `ignore` crate instead of
//! spawning ripgrep/fd (same gitignore semantics, deterministic sorted order, `.git/` skipped,
//! `.gitignore` honoured outside git repositories too); `read` does not resize large images; `ls`
//! sorts by lower-cased code points instead of ICU collation.

pub mod bash;
pub mod edit;
pub mod find;
pub mod grep;
pub mod ls;
pub mod read;
pub mod truncate;
pub mod write;

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::Tool;

pub use bash::{BashTool, merged_stderr_script};
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use ls::LsTool;
pub use read::ReadTool;
pub use write::WriteTool;

/// Every built-in tool, in pi's order (`allTools`: read, bash, edit, write, grep, find, ls).
pub fn builtin_tools() -> Vec<Box<dyn Tool>> {
    vec![
        Box::new(ReadTool),
        Box::new(BashTool),
        Box::new(EditTool),
        Box::new(WriteTool),
        Box::new(GrepTool),
        Box::new(FindTool),
        Box::new(LsTool),
    ]
}

/// The message pi's tools throw when the run was aborted before or while they ran.
pub(crate) const OPERATION_ABORTED: &str = "Operation aborted";

// ---------------------------------------------------------------------------------------------
// Paths (pi's path-utils.ts)
// ---------------------------------------------------------------------------------------------

/// Whether `c` is one of the Unicode spaces pi normalises (`[\u00A0\u2000-\u200A\u202F\u205F\u3000]`).
fn is_unicode_space(c: char) -> bool {
    matches!(
        c,
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}'
    )
}

/// The home directory, as Node's `os.homedir()` finds it on Unix (`$HOME` first).
pub(crate) fn home_dir() -> PathBuf {
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        return PathBuf::from(home);
    }
    #[allow(deprecated)]
    std::env::home_dir().unwrap_or_else(|| PathBuf::from("/"))
}

/// pi's `expandPath`: strips a leading `@`, turns Unicode spaces into plain spaces, expands `~`.
pub(crate) fn expand_path(file_path: &str) -> String {
    let without_at = file_path.strip_prefix('@').unwrap_or(file_path);
    let normalized: String = without_at
        .chars()
        .map(|c| if is_unicode_space(c) { ' ' } else { c })
        .collect();
    if normalized == "~" {
        return home_dir().to_string_lossy().into_owned();
    }
    if let Some(rest) = normalized.strip_prefix("~/") {
        return home_dir().join(rest).to_string_lossy().into_owned();
    }
    normalized
}

/// Resolves `.` and `..` lexically, as Node's `path.resolve` does (without touching the disk).
pub(crate) fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// pi's `resolveToCwd`: expands the path, keeps an absolute one, resolves a relative one
/// against `cwd`.
pub(crate) fn resolve_to_cwd(file_path: &str, cwd: &Path) -> PathBuf {
    let expanded = PathBuf::from(expand_path(file_path));
    if expanded.is_absolute() {
        normalize_lexically(&expanded)
    } else {
        normalize_lexically(&cwd.join(expanded))
    }
}

/// pi's `resolveReadPath`: like [`resolve_to_cwd`], but when the file does not exist tries the
/// macOS screenshot spelling (a narrow no-break space before `AM.`/`PM.`).
pub(crate) fn resolve_read_path(file_path: &str, cwd: &Path) -> PathBuf {
    let resolved = resolve_to_cwd(file_path, cwd);
    if resolved.exists() {
        return resolved;
    }
    let text = resolved.to_string_lossy();
    let variant = text
        .replace(" AM.", "\u{202F}AM.")
        .replace(" PM.", "\u{202F}PM.");
    if variant != text {
        let variant = PathBuf::from(variant);
        if variant.exists() {
            return variant;
        }
    }
    resolved
}

/// A path relative to `base` with `/` separators (`""` when equal; `None` when outside).
pub(crate) fn relative_slash_path(path: &Path, base: &Path) -> Option<String> {
    let rel = path.strip_prefix(base).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(parts.join("/"))
}

/// An I/O error worded as Node words it (`ENOENT: no such file or directory, open '/x'`), since
/// pi's tools surface Node's messages.
pub(crate) fn node_io_error(err: &std::io::Error, syscall: &str, path: &Path) -> String {
    let code = match err.raw_os_error() {
        Some(libc::ENOENT) => Some(("ENOENT", "no such file or directory")),
        Some(libc::EACCES) => Some(("EACCES", "permission denied")),
        Some(libc::EPERM) => Some(("EPERM", "operation not permitted")),
        Some(libc::EISDIR) => Some(("EISDIR", "illegal operation on a directory")),
        Some(libc::ENOTDIR) => Some(("ENOTDIR", "not a directory")),
        Some(libc::EEXIST) => Some(("EEXIST", "file already exists")),
        Some(libc::ENOSPC) => Some(("ENOSPC", "no space left on device")),
        Some(libc::EROFS) => Some(("EROFS", "read-only file system")),
        _ => None,
    };
    match code {
        // Node leaves the path out of EISDIR on read.
        Some(("EISDIR", msg)) if syscall == "read" => format!("EISDIR: {msg}, read"),
        Some((code, msg)) => format!("{code}: {msg}, {syscall} '{}'", path.display()),
        None => format!("{err}, {syscall} '{}'", path.display()),
    }
}

/// `access(2)`, as Node's `fs.access` (pi checks files with it before reading or editing).
pub(crate) fn access(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    let rc = unsafe { libc::access(c_path.as_ptr(), mode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

// ---------------------------------------------------------------------------------------------
// Arguments (validated and coerced before a tool runs, see `tools::validation`; these read what
// a tool gets, which a `tool_call` handler may have rewritten)
// ---------------------------------------------------------------------------------------------

/// Reads the arguments of one call, with pi-ai's validation wording on errors.
pub(crate) struct Args<'a> {
    tool: &'a str,
    args: &'a Value,
}

impl<'a> Args<'a> {
    pub(crate) fn new(tool: &'a str, args: &'a Value) -> Self {
        Args { tool, args }
    }

    pub(crate) fn invalid(&self, problem: String) -> String {
        let received = serde_json::to_string_pretty(self.args).unwrap_or_default();
        format!(
            "Validation failed for tool \"{}\":\n  - {problem}\n\nReceived arguments:\n{received}",
            self.tool
        )
    }

    fn get(&self, name: &str) -> Option<&'a Value> {
        match self.args.get(name) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// A required string (numbers and booleans are coerced, as pi-schema does).
    pub(crate) fn string(&self, name: &str) -> Result<String, String> {
        match self.opt_string(name)? {
            Some(s) => Ok(s),
            None => Err(self.invalid(format!("{name}: missing"))),
        }
    }

    /// An optional string.
    pub(crate) fn opt_string(&self, name: &str) -> Result<Option<String>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(v) => Err(self.invalid(format!("{name}: {}", expected("string", v)))),
        }
    }

    /// An optional number (numeric strings are coerced).
    pub(crate) fn opt_number(&self, name: &str) -> Result<Option<f64>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(n.as_f64()),
            Some(Value::String(s)) if s.trim().parse::<f64>().is_ok_and(f64::is_finite) => {
                Ok(s.trim().parse::<f64>().ok())
            }
            Some(Value::Bool(b)) => Ok(Some(if *b { 1.0 } else { 0.0 })),
            Some(v) => Err(self.invalid(format!("{name}: {}", expected("number", v)))),
        }
    }

    /// An optional boolean (`"true"`/`"false"`, `1`/`0` are coerced).
    pub(crate) fn opt_bool(&self, name: &str) -> Result<Option<bool>, String> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(Value::Number(n)) if n.as_f64() == Some(1.0) => Ok(Some(true)),
            Some(Value::Number(n)) if n.as_f64() == Some(0.0) => Ok(Some(false)),
            Some(v) => Err(self.invalid(format!("{name}: {}", expected("boolean", v)))),
        }
    }
}

/// pi-schema's message for a value of the wrong type: `expected string, got array`.
fn expected(kind: &str, value: &Value) -> String {
    let got = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    format!("expected {kind}, got {got}")
}

/// The output of a listing tool (find, grep, ls) as pi builds it: the lines cut to the 50 KB
/// head limit, then bracketed notices (`[... limit reached. ...]`), each with its `details`
/// field.
pub(crate) struct Listing {
    truncation: truncate::TruncationResult,
    details: serde_json::Map<String, Value>,
    notices: Vec<String>,
}

impl Listing {
    /// The lines, joined and cut to the byte limit.
    pub(crate) fn new(lines: &[String]) -> Self {
        let truncation =
            truncate::truncate_head(&lines.join("\n"), truncate::TruncationOptions::bytes_only());
        Listing {
            truncation,
            details: serde_json::Map::new(),
            notices: Vec::new(),
        }
    }

    /// Adds a notice and its details field.
    pub(crate) fn notice(&mut self, text: String, key: &str, value: Value) {
        self.notices.push(text);
        self.details.insert(key.to_owned(), value);
    }

    /// Adds the byte-limit notice, when the lines were cut.
    pub(crate) fn truncation_notice(&mut self) {
        if self.truncation.truncated {
            let text = format!(
                "{} limit reached",
                truncate::format_size(truncate::DEFAULT_MAX_BYTES)
            );
            let details = self.truncation.to_json();
            self.notice(text, "truncation", details);
        }
    }

    /// The tool output: the text with its notices; details only when there are some.
    pub(crate) fn finish(self) -> super::ToolOutput {
        let mut output = self.truncation.content.clone();
        if !self.notices.is_empty() {
            output.push_str(&format!("\n\n[{}]", self.notices.join(". ")));
        }
        let details = if self.details.is_empty() {
            Value::Null
        } else {
            Value::Object(self.details)
        };
        super::ToolOutput::text(output).with_details(details)
    }
}

/// A JS number as a count: truncated toward zero, negatives and NaN as 0.
pub(crate) fn to_count(n: f64) -> usize {
    if n.is_nan() || n <= 0.0 {
        0
    } else if n >= usize::MAX as f64 {
        usize::MAX
    } else {
        n.trunc() as usize
    }
}

/// A number printed as JavaScript prints it in a template string (`1`, `1.5`).
pub(crate) fn js_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Builds `{"type":"object","required":[...],"properties":...}` as TypeBox's `Type.Object`
/// (no `required` when every property is optional, as pi's `ls` schema).
pub(crate) fn object_schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = serde_json::json!({"type": "object"});
    if !required.is_empty() {
        schema["required"] = required.into();
    }
    schema["properties"] = properties;
    schema
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tools_come_in_pis_order_with_unique_names() {
        let names: Vec<String> = builtin_tools()
            .iter()
            .map(|t| t.name().to_string())
            .collect();
        assert_eq!(
            names,
            ["read", "bash", "edit", "write", "grep", "find", "ls"]
        );
        for tool in builtin_tools() {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}", tool.name());
            for req in schema["required"].as_array().into_iter().flatten() {
                let req = req.as_str().unwrap();
                assert!(
                    schema["properties"][req]["description"].is_string(),
                    "{}: {req}",
                    tool.name()
                );
            }
            assert!(!tool.description().is_empty());
            assert_eq!(tool.label(), tool.name());
        }
    }

    #[test]
    fn paths_resolve_like_pi() {
        let cwd = Path::new("/work/project");
        assert_eq!(
            resolve_to_cwd("src/a.rs", cwd),
            PathBuf::from("/work/project/src/a.rs")
        );
        assert_eq!(
            resolve_to_cwd("@src/a.rs", cwd),
            PathBuf::from("/work/project/src/a.rs")
        );
        assert_eq!(
            resolve_to_cwd("../other/./b", cwd),
            PathBuf::from("/work/other/b")
        );
        assert_eq!(resolve_to_cwd("/abs/x", cwd), PathBuf::from("/abs/x"));
        assert_eq!(resolve_to_cwd("@/abs/x", cwd), PathBuf::from("/abs/x"));
        assert_eq!(resolve_to_cwd(".", cwd), PathBuf::from("/work/project"));
        assert_eq!(
            resolve_to_cwd("a\u{00A0}b", cwd),
            PathBuf::from("/work/project/a b")
        );
        let home = home_dir();
        assert_eq!(resolve_to_cwd("~", cwd), normalize_lexically(&home));
        assert_eq!(
            resolve_to_cwd("~/notes.md", cwd),
            normalize_lexically(&home.join("notes.md"))
        );
    }

    #[test]
    fn args_coerce_and_report_like_pi_schema() {
        let v = json!({"path": "a", "limit": "12", "flag": "true", "n": 3});
        let a = Args::new("read", &v);
        assert_eq!(a.string("path").unwrap(), "a");
        assert_eq!(a.opt_number("limit").unwrap(), Some(12.0));
        assert_eq!(a.opt_bool("flag").unwrap(), Some(true));
        assert_eq!(a.opt_string("n").unwrap().as_deref(), Some("3"));
        assert_eq!(a.opt_number("missing").unwrap(), None);
        let err = a.string("content").unwrap_err();
        assert!(
            err.starts_with("Validation failed for tool \"read\":\n  - content: missing"),
            "{err}"
        );
        let bad = json!({"limit": [1]});
        let err = Args::new("ls", &bad).opt_number("limit").unwrap_err();
        assert!(
            err.contains("  - limit: expected number, got array"),
            "{err}"
        );
    }

    #[test]
    fn js_numbers_print_like_javascript() {
        assert_eq!(js_number(1.0), "1");
        assert_eq!(js_number(1.5), "1.5");
        assert_eq!(to_count(2.9), 2);
        assert_eq!(to_count(-4.0), 0);
    }
}
