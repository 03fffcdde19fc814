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
    // Writing to a String cannot fail.
    let _ = write_escaped(text, &mut out);
    Cow::Owned(out)
}

/// Writes `text` escaped as [`escape`] does to `out`, without allocating: the crash report
/// of `crate::guards::crash_guard` uses it inside a signal handler.
pub fn write_escaped(text: &str, out: &mut impl Write) -> std::fmt::Result {
    let mut plain = 0;
    for (at, c) in text.char_indices().filter(|(_, c)| needs_escape(*c)) {
        out.write_str(&text[plain..at])?;
        match c {
            '\n' => out.write_str("\\n")?,
            '\r' => out.write_str("\\r")?,
            '\t' => out.write_str("\\t")?,
            '\u{1b}' => out.write_str("\\e")?,
            c => write!(out, "\\u{{{:x}}}", c as u32)?,
        }
        plain = at + c.len_utf8();
    }
    out.write_str(&text[plain..])
}

/// `text` without the characters [`escape`] makes visible: for places where an escape
/// cannot be shown either, such as the terminal's title.
pub fn strip(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|c| !needs_escape(*c)).collect())
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

    #[test]
    fn strip_drops_what_escape_shows() {
        assert!(matches!(strip("pi-hooks tour"), Cow::Borrowed(_)));
        assert_eq!(
            strip("a\u{202e}b\u{2067}c\u{200b}d\u{1b}]0;x\u{7}e"),
            "abcd]0;xe"
        );
    }
}
