//! RPC framing, as pi 0.73.1 reads its stdin: one JSON object per line, split on `\n` only
//! (U+2028 and U+2029 are ordinary characters inside a line), an optional trailing `\r`
//! stripped, blank lines skipped; and pi's failure text for a line that is not JSON.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Reads `input` line by line until EOF, calling `on_line` with each non-blank line (a last
/// line without `\n` included). Bytes that are not UTF-8 are replaced (U+FFFD), as Node
/// decodes them. A read error ends the input like EOF.
pub async fn read_lines(input: impl AsyncRead + Unpin, mut on_line: impl FnMut(&str)) {
    let mut reader = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let mut line = buf.as_slice();
        if let Some(rest) = line.strip_suffix(b"\n") {
            line = rest;
        }
        if let Some(rest) = line.strip_suffix(b"\r") {
            line = rest;
        }
        let text = String::from_utf8_lossy(line);
        if !text.trim().is_empty() {
            on_line(&text);
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
        crate::runtime::handle().block_on(read_lines(input, |l| lines.push(l.to_owned())));
        assert_eq!(lines, ["{\"a\":\"x\u{2028}y\"}", "{\"b\":1}"]);
    }
}
