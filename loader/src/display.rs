//! Text for a person's terminal. Everything a repository or a plugin controls (file names,
//! plugin names, descriptions, settings values, messages) goes through [`escape`] before it
//! is printed, so it cannot move the cursor, clear the screen, rewrite an earlier line or
//! reorder text with bidirectional controls. JSON output needs none of this: serde_json
//! escapes control characters itself.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character (C0, DEL, C1) and every bidirectional or invisible
/// format character written as a visible escape (`\n`, `\r`, `\t`, `\e`, `\u{202e}`).
/// Text without any is returned as it is, without copying.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Control characters, and the format characters that change how the text around them
/// shows: bidirectional embeddings, overrides and isolates, zero-width characters, the
/// line and paragraph separators.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_and_bidi_characters_become_visible() {
        assert!(matches!(escape("/plain/path.so"), Cow::Borrowed(_)));
        assert_eq!(escape("a\u{1b}[2Jb"), "a\\e[2Jb");
        assert_eq!(escape("x\r\ny\t"), "x\\r\\ny\\t");
        assert_eq!(escape("evil\u{202e}os.so"), "evil\\u{202e}os.so");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("ünïcödé ok"), "ünïcödé ok");
    }
}
