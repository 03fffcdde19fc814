//! Output truncation shared by the built-in tools, after pi's `truncate.ts`.
//!
//! Two independent limits, whichever is hit first wins: [`DEFAULT_MAX_LINES`] lines and
//! [`DEFAULT_MAX_BYTES`] bytes (UTF-8). Lines are what `content.split("\n")` yields, so a trailing
//! newline counts as one more (empty) line, as in pi. [`truncate_head`] keeps the beginning
//! (file reads, listings) and never returns a partial line; [`truncate_tail`] keeps the end
//! (command output) and returns a partial line only when the last line alone is over the byte
//! limit. [`TruncationResult::to_json`] gives pi's `TruncationResult` object (camelCase keys,
//! `truncatedBy: "lines" | "bytes" | null`, the kept `content` included) for `details.truncation`.

use serde_json::{Value, json};

/// Default line limit.
pub const DEFAULT_MAX_LINES: usize = 2000;
/// Default byte limit (50 KB).
pub const DEFAULT_MAX_BYTES: usize = 50 * 1024;
/// Longest grep line, in characters (UTF-16 code units, as JavaScript counts).
pub const GREP_MAX_LINE_LENGTH: usize = 500;
/// pi's `Number.MAX_SAFE_INTEGER`, used as "no line limit" by grep, find and ls.
pub const UNLIMITED_LINES: usize = 9_007_199_254_740_991;

/// Which limit cut the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TruncatedBy {
    /// The line limit.
    Lines,
    /// The byte limit.
    Bytes,
}

impl TruncatedBy {
    /// `"lines"` or `"bytes"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TruncatedBy::Lines => "lines",
            TruncatedBy::Bytes => "bytes",
        }
    }
}

/// The limits to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruncationOptions {
    /// Maximum number of lines.
    pub max_lines: usize,
    /// Maximum number of bytes.
    pub max_bytes: usize,
}

impl Default for TruncationOptions {
    fn default() -> Self {
        TruncationOptions {
            max_lines: DEFAULT_MAX_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

impl TruncationOptions {
    /// Only the byte limit (pi's `{ maxLines: Number.MAX_SAFE_INTEGER }`).
    pub fn bytes_only() -> Self {
        TruncationOptions {
            max_lines: UNLIMITED_LINES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }
}

/// What a truncation kept, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncationResult {
    /// The kept content.
    pub content: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Which limit was hit (`None` when not truncated).
    pub truncated_by: Option<TruncatedBy>,
    /// Lines in the original content.
    pub total_lines: usize,
    /// Bytes in the original content.
    pub total_bytes: usize,
    /// Complete lines kept.
    pub output_lines: usize,
    /// Bytes kept.
    pub output_bytes: usize,
    /// The kept (last) line is only the end of a line (tail truncation of an over-long line).
    pub last_line_partial: bool,
    /// The first line alone is over the byte limit (head truncation; nothing kept).
    pub first_line_exceeds_limit: bool,
    /// The line limit applied.
    pub max_lines: usize,
    /// The byte limit applied.
    pub max_bytes: usize,
}

impl TruncationResult {
    fn untouched(content: &str, total_lines: usize, opts: TruncationOptions) -> Self {
        TruncationResult {
            content: content.to_string(),
            truncated: false,
            truncated_by: None,
            total_lines,
            total_bytes: content.len(),
            output_lines: total_lines,
            output_bytes: content.len(),
            last_line_partial: false,
            first_line_exceeds_limit: false,
            max_lines: opts.max_lines,
            max_bytes: opts.max_bytes,
        }
    }

    /// pi's `TruncationResult` object.
    pub fn to_json(&self) -> Value {
        json!({
            "content": self.content,
            "truncated": self.truncated,
            "truncatedBy": self.truncated_by.map(TruncatedBy::as_str),
            "totalLines": self.total_lines,
            "totalBytes": self.total_bytes,
            "outputLines": self.output_lines,
            "outputBytes": self.output_bytes,
            "lastLinePartial": self.last_line_partial,
            "firstLineExceedsLimit": self.first_line_exceeds_limit,
            "maxLines": self.max_lines,
            "maxBytes": self.max_bytes,
        })
    }
}

/// pi's `formatSize`: `512B`, `50.0KB`, `1.5MB` (one decimal, rounded half up like `toFixed`).
pub fn format_size(bytes: usize) -> String {
    fn tenths(bytes: usize, unit: usize) -> String {
        let bytes = bytes as u128;
        let unit = unit as u128;
        let n = (bytes * 10 * 2 + unit) / (unit * 2);
        format!("{}.{}", n / 10, n % 10)
    }
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{}KB", tenths(bytes, 1024))
    } else {
        format!("{}MB", tenths(bytes, 1024 * 1024))
    }
}

/// Keeps the first lines/bytes. Never returns a partial line: when the first line alone is over
/// the byte limit, nothing is kept and `first_line_exceeds_limit` is set.
pub fn truncate_head(content: &str, opts: TruncationOptions) -> TruncationResult {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= opts.max_lines && content.len() <= opts.max_bytes {
        return TruncationResult::untouched(content, total_lines, opts);
    }
    let mut result = TruncationResult {
        content: String::new(),
        truncated: true,
        truncated_by: Some(TruncatedBy::Bytes),
        total_lines,
        total_bytes: content.len(),
        output_lines: 0,
        output_bytes: 0,
        last_line_partial: false,
        first_line_exceeds_limit: false,
        max_lines: opts.max_lines,
        max_bytes: opts.max_bytes,
    };
    if lines[0].len() > opts.max_bytes {
        result.first_line_exceeds_limit = true;
        return result;
    }

    let mut kept = 0usize;
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    for (i, line) in lines.iter().enumerate().take(opts.max_lines) {
        let line_bytes = line.len() + usize::from(i > 0);
        if bytes + line_bytes > opts.max_bytes {
            by = TruncatedBy::Bytes;
            break;
        }
        kept += 1;
        bytes += line_bytes;
    }
    if kept >= opts.max_lines && bytes <= opts.max_bytes {
        by = TruncatedBy::Lines;
    }
    result.content = lines[..kept].join("\n");
    result.truncated_by = Some(by);
    result.output_lines = kept;
    result.output_bytes = result.content.len();
    result
}

/// Keeps the last lines/bytes. When the last line alone is over the byte limit, keeps its end
/// (`last_line_partial`).
pub fn truncate_tail(content: &str, opts: TruncationOptions) -> TruncationResult {
    let lines: Vec<&str> = content.split('\n').collect();
    let total_lines = lines.len();
    if total_lines <= opts.max_lines && content.len() <= opts.max_bytes {
        return TruncationResult::untouched(content, total_lines, opts);
    }

    // Index of the first kept line; lines[start..] are kept whole unless `partial` is set.
    let mut start = lines.len();
    let mut bytes = 0usize;
    let mut by = TruncatedBy::Lines;
    let mut partial: Option<&str> = None;
    while start > 0 && lines.len() - start < opts.max_lines {
        let line = lines[start - 1];
        let line_bytes = line.len() + usize::from(start < lines.len());
        if bytes + line_bytes > opts.max_bytes {
            by = TruncatedBy::Bytes;
            if start == lines.len() {
                let tail = tail_within_bytes(line, opts.max_bytes);
                bytes = tail.len();
                partial = Some(tail);
                start -= 1;
            }
            break;
        }
        bytes += line_bytes;
        start -= 1;
    }
    let kept = lines.len() - start;
    if kept >= opts.max_lines && bytes <= opts.max_bytes {
        by = TruncatedBy::Lines;
    }
    let kept_content = match partial {
        Some(tail) => tail.to_string(),
        None => lines[start..].join("\n"),
    };
    TruncationResult {
        output_bytes: kept_content.len(),
        content: kept_content,
        truncated: true,
        truncated_by: Some(by),
        total_lines,
        total_bytes: content.len(),
        output_lines: kept,
        last_line_partial: partial.is_some(),
        first_line_exceeds_limit: false,
        max_lines: opts.max_lines,
        max_bytes: opts.max_bytes,
    }
}

/// The longest suffix of `s` that fits in `max_bytes`, starting on a character boundary.
fn tail_within_bytes(s: &str, max_bytes: usize) -> &str {
    if s.len() <= max_bytes {
        return s;
    }
    let mut start = s.len() - max_bytes;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// pi's `truncateLine`: cuts a line to `max_chars` characters (UTF-16 code units, as JavaScript
/// counts them) and appends `... [truncated]`. Returns the text and whether it was cut.
pub fn truncate_line(line: &str, max_chars: usize) -> (String, bool) {
    let mut units = 0usize;
    for (idx, ch) in line.char_indices() {
        let next = units + ch.len_utf16();
        if next > max_chars {
            return (format!("{}... [truncated]", &line[..idx]), true);
        }
        units = next;
    }
    (line.to_string(), false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn sizes_format_like_pi() {
        assert_eq!(format_size(0), "0B");
        assert_eq!(format_size(1023), "1023B");
        assert_eq!(format_size(1024), "1.0KB");
        assert_eq!(format_size(1280), "1.3KB"); // toFixed rounds the tie up
        assert_eq!(format_size(DEFAULT_MAX_BYTES), "50.0KB");
        assert_eq!(format_size(3 * 1024 * 1024 / 2), "1.5MB");
    }

    #[test]
    fn small_content_is_untouched() {
        let r = truncate_head("a\nb\n", TruncationOptions::default());
        assert!(!r.truncated);
        assert_eq!(r.truncated_by, None);
        assert_eq!(r.total_lines, 3);
        assert_eq!(r.content, "a\nb\n");
        assert_eq!(r.to_json()["truncatedBy"], Value::Null);
        let r = truncate_tail("x", TruncationOptions::default());
        assert!(!r.truncated);
        assert_eq!((r.output_lines, r.output_bytes), (1, 1));
    }

    #[test]
    fn head_keeps_first_lines() {
        let text = numbered(3000);
        let r = truncate_head(&text, TruncationOptions::default());
        assert!(r.truncated);
        assert_eq!(r.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!((r.total_lines, r.output_lines), (3000, 2000));
        assert!(r.content.starts_with("1\n2\n"));
        assert!(r.content.ends_with("\n2000"));
        assert_eq!(r.output_bytes, r.content.len());
        assert_eq!(r.total_bytes, text.len());
    }

    #[test]
    fn head_stops_on_bytes_without_partial_lines() {
        let line = "x".repeat(100);
        let text = vec![line.as_str(); 1000].join("\n"); // ~100 KB, 1000 lines
        let r = truncate_head(&text, TruncationOptions::default());
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
        // 101 bytes per line after the first: floor((51200 - 100) / 101) + 1 = 506 lines.
        assert_eq!(r.output_lines, 506);
        assert!(r.output_bytes <= DEFAULT_MAX_BYTES);
        assert!(r.content.split('\n').all(|l| l.len() == 100));
    }

    #[test]
    fn head_first_line_over_limit_keeps_nothing() {
        let text = format!("{}\nshort", "y".repeat(DEFAULT_MAX_BYTES + 1));
        let r = truncate_head(&text, TruncationOptions::default());
        assert!(r.first_line_exceeds_limit);
        assert_eq!(r.content, "");
        assert_eq!(r.output_lines, 0);
        assert_eq!(r.to_json()["firstLineExceedsLimit"], true);
    }

    #[test]
    fn tail_keeps_last_lines() {
        let text = numbered(3000);
        let r = truncate_tail(&text, TruncationOptions::default());
        assert_eq!(r.truncated_by, Some(TruncatedBy::Lines));
        assert_eq!(r.output_lines, 2000);
        assert!(r.content.starts_with("1001\n"));
        assert!(r.content.ends_with("\n3000"));
        assert_eq!(r.total_bytes, text.len());
        assert_eq!(r.output_bytes, r.content.len());
        let json = r.to_json();
        assert_eq!(json["truncatedBy"], "lines");
        assert_eq!(json["totalLines"], 3000);
        assert_eq!(json["outputLines"], 2000);
    }

    #[test]
    fn tail_by_bytes_and_partial_last_line() {
        let line = "z".repeat(1000);
        let text = vec![line.as_str(); 100].join("\n");
        let r = truncate_tail(&text, TruncationOptions::default());
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
        assert_eq!(r.output_lines, 51); // 1000 + 50 * 1001 = 51050 <= 51200
        assert!(!r.last_line_partial);

        // A last line over the limit: its end is kept, cut on a char boundary.
        let huge = format!("head\n{}", "é".repeat(DEFAULT_MAX_BYTES));
        let r = truncate_tail(&huge, TruncationOptions::default());
        assert!(r.last_line_partial);
        assert_eq!(r.output_lines, 1);
        assert!(r.output_bytes <= DEFAULT_MAX_BYTES);
        assert!(r.content.chars().all(|c| c == 'é'));
    }

    #[test]
    fn custom_limits_apply() {
        let r = truncate_tail(
            "a\nb\nc\nd",
            TruncationOptions {
                max_lines: 2,
                max_bytes: 1000,
            },
        );
        assert_eq!(r.content, "c\nd");
        let r = truncate_head(
            "a\nb\nc\nd",
            TruncationOptions {
                max_lines: 2,
                max_bytes: 1000,
            },
        );
        assert_eq!(r.content, "a\nb");
        let r = truncate_head(
            "aaaa\nbbbb\ncccc",
            TruncationOptions {
                max_lines: 100,
                max_bytes: 9,
            },
        );
        assert_eq!(r.content, "aaaa\nbbbb");
        assert_eq!(r.truncated_by, Some(TruncatedBy::Bytes));
    }

    #[test]
    fn lines_are_cut_like_pi() {
        assert_eq!(truncate_line("short", 10), ("short".to_string(), false));
        let (text, cut) = truncate_line(&"a".repeat(600), GREP_MAX_LINE_LENGTH);
        assert!(cut);
        assert_eq!(text, format!("{}... [truncated]", "a".repeat(500)));
        // An astral character counts two units, as in JavaScript.
        let (text, cut) = truncate_line("ab😀c", 3);
        assert!(cut);
        assert_eq!(text, "ab... [truncated]");
    }
}
