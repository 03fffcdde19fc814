//! RPC framing, as pi 0.73.1 reads its stdin: one JSON object per line, split on `\n` only
//! (U+2028 and U+2029 are ordinary characters inside a line), an optional trailing `\r`
//! stripped, blank lines skipped; and pi's failure text for a line that is not JSON. Unlike
//! pi, a line is held in memory only up to [`MAX_LINE_BYTES`]: a longer one is read through
//! and dropped, and reported as [`Line::TooLong`].

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, BufReader};

/// The longest line (without its `\n`) that is parsed: 16 MiB. A 10 MB prompt fits; a
/// longer line costs at most this much memory before it is dropped.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One line of input.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A non-blank line, without its `\n` and `\r`.
    Text(&'a str),
    /// A line longer than the limit, of this many bytes (its content was dropped).
    TooLong(usize),
}

/// Reads `input` line by line until EOF, calling `on_line` with each non-blank line (a last
/// line without `\n` included). Bytes that are not UTF-8 are replaced (U+FFFD), as Node
/// decodes them. A read error ends the input like EOF.
pub async fn read_lines(input: impl AsyncRead + Unpin, on_line: impl FnMut(Line<'_>)) {
    read_lines_capped(input, MAX_LINE_BYTES, on_line).await;
}

/// [`read_lines`] with the line limit `max` (bytes).
pub async fn read_lines_capped(
    input: impl AsyncRead + Unpin,
    max: usize,
    mut on_line: impl FnMut(Line<'_>),
) {
    let mut reader = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let (length, ended) = next_line(&mut reader, max, &mut buf).await;
        if length > max {
            on_line(Line::TooLong(length));
        } else if length > 0 {
            let mut line = buf.as_slice();
            if let Some(rest) = line.strip_suffix(b"\r") {
                line = rest;
            }
            let text = String::from_utf8_lossy(line);
            if !text.trim().is_empty() {
                on_line(Line::Text(&text));
            }
        }
        if ended {
            return;
        }
    }
}

/// Reads one line into `buf` (without the `\n`; emptied once it passes `max` bytes). Returns
/// the line's length in bytes and whether the input ended.
async fn next_line(
    reader: &mut (impl AsyncBufRead + Unpin),
    max: usize,
    buf: &mut Vec<u8>,
) -> (usize, bool) {
    let mut length = 0usize;
    loop {
        let available = match reader.fill_buf().await {
            Ok([]) | Err(_) => return (length, true),
            Ok(available) => available,
        };
        let newline = available.iter().position(|&b| b == b'\n');
        let content = &available[..newline.unwrap_or(available.len())];
        length = length.saturating_add(content.len());
        if length <= max {
            buf.extend_from_slice(content);
        } else if !buf.is_empty() {
            buf.clear();
        }
        let consumed = newline.map_or(available.len(), |at| at + 1);
        reader.consume(consumed);
        if newline.is_some() {
            return (length, false);
        }
    }
}

/// The message `JSON.parse` (V8, as in Node 20) gives for `line`, for pi's
/// `Failed to parse command: <message>` line. Positions count characters from 0.
pub fn parse_error_message(line: &str, error: &serde_json::Error) -> String {
    use serde_json::error::Category;
    if error.classify() == Category::Eof {
        return "Unexpected end of JSON input".to_owned();
    }
    // Lines hold no '\n', so the column (1-based, in characters) gives the position.
    let position = error.column().saturating_sub(1);
    let text = error.to_string();
    if text.starts_with("key must be a string") {
        return format!("Expected property name or '}}' in JSON at position {position}");
    }
    if text.starts_with("trailing characters") {
        return format!("Unexpected non-whitespace character after JSON at position {position}");
    }
    let token = line.chars().nth(position).unwrap_or(' ');
    let shown = if line.chars().count() <= 40 {
        line.to_owned()
    } else {
        let start: String = line
            .chars()
            .skip(position.saturating_sub(10))
            .take(20)
            .collect();
        format!("...{start}...")
    };
    format!("Unexpected token '{token}', \"{shown}\" is not valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(line: &str) -> String {
        let error = serde_json::from_str::<serde_json::Value>(line).unwrap_err();
        parse_error_message(line, &error)
    }

    #[test]
    fn v8_messages() {
        assert_eq!(
            message("{bad"),
            "Expected property name or '}' in JSON at position 1"
        );
        assert_eq!(message("{\"a\":"), "Unexpected end of JSON input");
        assert_eq!(
            message("bogus"),
            "Unexpected token 'b', \"bogus\" is not valid JSON"
        );
        assert_eq!(
            message("{} x"),
            "Unexpected non-whitespace character after JSON at position 3"
        );
    }

    #[test]
    fn splits_on_lf_only() {
        let input: &[u8] = b"{\"a\":\"x\xe2\x80\xa8y\"}\r\n\n  \n{\"b\":1}";
        let mut lines = Vec::new();
        crate::services::runtime::handle()
            .block_on(read_lines(input, |l| lines.push(format!("{l:?}"))));
        assert_eq!(
            lines,
            [r#"Text("{\"a\":\"x\u{2028}y\"}")"#, r#"Text("{\"b\":1}")"#]
        );
    }

    #[test]
    fn lines_over_the_limit_are_dropped_and_reading_goes_on() {
        let input: &[u8] = b"12345\n123456\r\n1234567\n\xff\x00\n";
        let mut lines = Vec::new();
        let read = read_lines_capped(input, 6, |l| lines.push(format!("{l:?}")));
        crate::services::runtime::handle().block_on(read);
        assert_eq!(
            lines,
            [
                r#"Text("12345")"#,
                "TooLong(7)",
                "TooLong(7)",
                "Text(\"\u{fffd}\\0\")"
            ]
        );
    }
}
