//! `read {path, offset?, limit?}`: reads a text file or an image, after pi's `read.ts`.
//!
//! What matches pi:
//! * The path is resolved like pi's `resolveReadPath` (`@` prefix, `~`, cwd, macOS screenshot
//!   spelling); an unreadable path fails with Node's message (`ENOENT: no such file or directory,
//!   access '<abs>'`), a directory with `EISDIR: illegal operation on a directory, read`.
//! * Images are recognised by their magic bytes (PNG, JPEG, GIF, WebP) and returned as
//!   `[{type:"text", text:"Read image file [<mime>]"}, {type:"image", data:<base64>, mimeType}]`.
//! * Text is decoded as UTF-8 (invalid bytes replaced), split on `\n`; `offset` is 1-based
//!   (`Offset N is beyond end of file (M lines total)` past the end), `limit` caps the lines; the
//!   selection is head-truncated to 2000 lines / 50 KB with the notice
//!   `[Showing lines X-Y of Z. Use offset=N to continue]` (or `… of Z (50.0KB limit). …`) and
//!   `details.truncation`; a user `limit` that leaves lines out adds
//!   `[K more lines in file. Use offset=N to continue]`; a first line over 50 KB is not shown
//!   but described with a `sed | head -c` hint, as pi does.
//!
//! Difference: pi shrinks images larger than 2000×2000 before returning them; we return the
//! file's bytes unchanged.

use base64::Engine;
use serde_json::{Value, json};

use super::truncate::{
    DEFAULT_MAX_BYTES, TruncatedBy, TruncationOptions, format_size, truncate_head,
};
use super::{
    Args, OPERATION_ABORTED, access, node_io_error, object_schema, resolve_read_path, to_count,
};
use crate::tools::{Tool, ToolInvocation, ToolOutput};

/// The `read` tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTool;

impl Tool for ReadTool {
    fn name(&self) -> &str {
        "read"
    }

    fn label(&self) -> &str {
        "read"
    }

    fn description(&self) -> &str {
        "Read the contents of a file. Supports text files and images (jpg, png, gif, webp). Images are sent as \
         attachments. For text files, output is truncated to 2000 lines or 50KB (whichever is hit first). Use \
         offset/limit for large files."
    }

    fn parameters(&self) -> Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
                "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
                "limit": {"type": "number", "description": "Maximum number of lines to read"},
            }),
            &["path"],
        )
    }

    fn execute(&self, call: &ToolInvocation<'_>) -> Result<ToolOutput, String> {
        let args = Args::new("read", call.args);
        let path = args.string("path")?;
        let offset = args.opt_number("offset")?;
        let limit = args.opt_number("limit")?;
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }

        let absolute = resolve_read_path(&path, call.cwd);
        access(&absolute, libc::R_OK).map_err(|e| node_io_error(&e, "access", &absolute))?;
        let bytes = std::fs::read(&absolute).map_err(|e| node_io_error(&e, "read", &absolute))?;
        if call.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_string());
        }

        if let Some(mime) = image_mime_type(&bytes) {
            let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
            return Ok(ToolOutput {
                content: vec![
                    json!({"type": "text", "text": format!("Read image file [{mime}]")}),
                    json!({"type": "image", "data": data, "mimeType": mime}),
                ],
                details: Value::Null,
                is_error: false,
            });
        }

        read_text(&String::from_utf8_lossy(&bytes), &path, offset, limit)
    }
}

/// The MIME type of a supported image, from its magic bytes.
pub fn image_mime_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A]) {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The text part of pi's read: offset, limit, head truncation and the notices.
fn read_text(
    text: &str,
    path: &str,
    offset: Option<f64>,
    limit: Option<f64>,
) -> Result<ToolOutput, String> {
    let all_lines: Vec<&str> = text.split('\n').collect();
    let total_file_lines = all_lines.len();

    // `offset ? Math.max(0, offset - 1) : 0`
    let start_line = match offset {
        Some(o) if o != 0.0 && !o.is_nan() => to_count(o - 1.0),
        _ => 0,
    };
    let start_display = start_line + 1;
    if start_line >= total_file_lines {
        let shown = offset.map(super::js_number).unwrap_or_default();
        return Err(format!(
            "Offset {shown} is beyond end of file ({total_file_lines} lines total)"
        ));
    }

    let (selected, user_limited_lines) = match limit {
        Some(l) => {
            let end = start_line.saturating_add(to_count(l)).min(total_file_lines);
            (
                all_lines[start_line..end].join("\n"),
                Some(end - start_line),
            )
        }
        None => (all_lines[start_line..].join("\n"), None),
    };

    let truncation = truncate_head(&selected, TruncationOptions::default());
    let mut details = Value::Null;
    let output = if truncation.first_line_exceeds_limit {
        let first_line_size = format_size(all_lines[start_line].len());
        details = json!({"truncation": truncation.to_json()});
        format!(
            "[Line {start_display} is {first_line_size}, exceeds {} limit. Use bash: sed -n '{start_display}p' {path} | head -c {DEFAULT_MAX_BYTES}]",
            format_size(DEFAULT_MAX_BYTES)
        )
    } else if truncation.truncated {
        let end_display = start_display + truncation.output_lines - 1;
        let next_offset = end_display + 1;
        let notice = if truncation.truncated_by == Some(TruncatedBy::Lines) {
            format!(
                "[Showing lines {start_display}-{end_display} of {total_file_lines}. Use offset={next_offset} to continue]"
            )
        } else {
            format!(
                "[Showing lines {start_display}-{end_display} of {total_file_lines} ({} limit). Use offset={next_offset} to continue]",
                format_size(DEFAULT_MAX_BYTES)
            )
        };
        let text = format!("{}\n\n{notice}", truncation.content);
        details = json!({"truncation": truncation.to_json()});
        text
    } else if let Some(taken) = user_limited_lines.filter(|n| start_line + n < total_file_lines) {
        let remaining = total_file_lines - (start_line + taken);
        let next_offset = start_line + taken + 1;
        format!(
            "{}\n\n[{remaining} more lines in file. Use offset={next_offset} to continue]",
            truncation.content
        )
    } else {
        truncation.content
    };

    Ok(ToolOutput::text(output).with_details(details))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_of(out: &ToolOutput) -> &str {
        out.content[0]["text"].as_str().unwrap()
    }

    #[test]
    fn offsets_and_limits_like_pi() {
        let text = "a\nb\nc\nd\ne";
        let out = read_text(text, "f.txt", None, None).unwrap();
        assert_eq!(text_of(&out), text);
        assert!(out.details.is_null());

        let out = read_text(text, "f.txt", Some(2.0), Some(2.0)).unwrap();
        assert_eq!(
            text_of(&out),
            "b\nc\n\n[2 more lines in file. Use offset=4 to continue]"
        );

        let out = read_text(text, "f.txt", Some(4.0), None).unwrap();
        assert_eq!(text_of(&out), "d\ne");

        let out = read_text(text, "f.txt", Some(0.0), Some(1.0)).unwrap();
        assert_eq!(
            text_of(&out),
            "a\n\n[4 more lines in file. Use offset=2 to continue]"
        );

        let err = read_text(text, "f.txt", Some(9.0), None).unwrap_err();
        assert_eq!(err, "Offset 9 is beyond end of file (5 lines total)");
    }

    #[test]
    fn long_files_are_head_truncated_with_a_hint() {
        let text: String = (1..=2500)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let out = read_text(&text, "big.txt", None, None).unwrap();
        let shown = text_of(&out);
        assert!(shown.starts_with("line 1\n"));
        assert!(
            shown.ends_with(
                "line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue]"
            ),
            "{shown}"
        );
        assert_eq!(out.details["truncation"]["truncatedBy"], "lines");
        assert_eq!(out.details["truncation"]["outputLines"], 2000);

        let out = read_text(&text, "big.txt", Some(2001.0), None).unwrap();
        assert!(text_of(&out).starts_with("line 2001\n"));
        assert!(text_of(&out).ends_with("line 2500"));
    }

    #[test]
    fn byte_limit_and_huge_first_line() {
        let line = "w".repeat(1000);
        let text = vec![line.as_str(); 100].join("\n");
        let out = read_text(&text, "wide.txt", None, None).unwrap();
        assert!(
            text_of(&out)
                .ends_with("[Showing lines 1-51 of 100 (50.0KB limit). Use offset=52 to continue]")
        );
        assert_eq!(out.details["truncation"]["truncatedBy"], "bytes");

        let text = format!("{}\nsmall", "h".repeat(60 * 1024));
        let out = read_text(&text, "min.js", None, None).unwrap();
        assert_eq!(
            text_of(&out),
            "[Line 1 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' min.js | head -c 51200]"
        );
        assert_eq!(out.details["truncation"]["firstLineExceedsLimit"], true);
    }

    #[test]
    fn images_are_sniffed_by_magic_bytes() {
        assert_eq!(image_mime_type(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(image_mime_type(b"\xff\xd8\xff\xe0"), Some("image/jpeg"));
        assert_eq!(image_mime_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_mime_type(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_mime_type(b"RIFF\0\0\0\0WAVE"), None);
        assert_eq!(image_mime_type(b"plain text"), None);
    }
}
