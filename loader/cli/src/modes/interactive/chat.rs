//! The conversation as the terminal shows it: items built from the session's events
//! (user prompts, streamed assistant text and thinking, tool runs, custom messages drawn by
//! their plugin's renderer, `!` commands, notices), each turned into styled lines.

use ansi_to_tui::IntoText as _;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use serde_json::Value;

/// Output lines of a tool or `!` command shown under it.
const OUTPUT_LINES: usize = 12;

/// How a notice looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Dim: pi's status lines (an `info` notification, a reload line).
    Info,
    /// `Warning: …`.
    Warning,
    /// `Error: …`.
    Error,
}

/// One entry of the conversation.
#[derive(Debug, Clone)]
pub enum Item {
    /// A prompt as sent.
    User(String),
    /// An assistant message, streamed in place until its `message_end`.
    Assistant(Value),
    /// A tool run, from `tool_execution_start` to `tool_execution_end`.
    Tool {
        /// The call id.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments.
        args: Value,
        /// The output so far, or the result.
        output: String,
        /// Whether the result is an error (a blocked call's reason, say).
        error: bool,
        /// Whether it ended.
        done: bool,
    },
    /// A custom message (`role: "custom"`), with its renderer's lines once they came.
    Custom {
        /// The message.
        message: Value,
        /// The plugin renderer's lines (`None`: the default rendering).
        rendered: Option<Vec<String>>,
    },
    /// A `!` / `!!` command.
    Bash {
        /// The command.
        command: String,
        /// `!!`: kept out of the model's context.
        excluded: bool,
        /// The output so far, then the result's.
        output: String,
        /// The exit code, once it ended (`None` while running or when cancelled).
        exit: Option<i64>,
        /// Whether it ended.
        done: bool,
        /// Whether it was cancelled.
        cancelled: bool,
    },
    /// A line of the host's own (or a plugin's notification), with pi's `Warning: ` or
    /// `Error: ` prefix.
    Notice(Level, String),
    /// A line written to stderr (a reload report, an `Extension error`, a plugin's own
    /// output), shown as written.
    Log(Level, String),
}

/// Makes text a plugin, a tool or a model wrote safe to put on the screen: tabs become four
/// spaces, `\r` and other control characters are dropped (ANSI colour sequences are read by
/// [`styled`], never passed through).
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with its ANSI colours and styles (SGR) turned into styled lines, every other
/// control sequence and character dropped, each line with `base` under its own styles.
pub fn styled(text: &str, base: Style) -> Vec<Line<'static>> {
    let lines: Vec<Line<'static>> = if text.contains('\u{1b}') {
        match text.as_bytes().into_text() {
            Ok(parsed) => parsed.lines,
            Err(_) => clean(text)
                .split('\n')
                .map(|l| Line::raw(l.to_owned()))
                .collect(),
        }
    } else {
        clean(text)
            .split('\n')
            .map(|l| Line::raw(l.to_owned()))
            .collect()
    };
    lines
        .into_iter()
        .map(|line| {
            let spans: Vec<Span<'static>> = line
                .spans
                .into_iter()
                .map(|span| {
                    let style = base.patch(span.style);
                    Span::styled(clean(&span.content), style)
                })
                .collect();
            Line::from(spans)
        })
        .collect()
}

/// The text blocks of a message's `content` (a string or blocks), joined.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().map(str::to_owned),
                Some("image") => Some("[image]".to_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The last `max` lines of `text`, with a `… (N earlier lines)` line when some were left out.
fn tail(text: &str, max: usize) -> (Option<String>, Vec<&str>) {
    let lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
    if lines.len() <= max {
        return (None, lines);
    }
    let skipped = lines.len() - max;
    (
        Some(format!("… ({skipped} earlier lines)")),
        lines[skipped..].to_vec(),
    )
}

/// How the arguments of a tool call read in one line: bash's command, a path, or JSON.
fn tool_title(name: &str, args: &Value) -> String {
    match (name, args) {
        ("bash", args) if args["command"].is_string() => {
            format!("$ {}", args["command"].as_str().unwrap_or_default())
        }
        (name, args) if args["path"].is_string() => {
            format!("{name} {}", args["path"].as_str().unwrap_or_default())
        }
        (name, Value::Object(map)) if map.is_empty() => name.to_owned(),
        (name, args) => format!("{name} {args}"),
    }
}

impl Item {
    /// The item's lines (before wrapping to the width).
    pub fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::default().fg(Color::DarkGray);
        let mut out = Vec::new();
        match self {
            Item::User(text) => {
                let style = Style::default()
                    .fg(Color::Cyan)
                    .add_modifier(Modifier::BOLD);
                for (n, line) in clean(text).split('\n').enumerate() {
                    let prefix = if n == 0 { "› " } else { "  " };
                    out.push(Line::styled(format!("{prefix}{line}"), style));
                }
            }
            Item::Assistant(message) => {
                let blocks = message["content"].as_array().cloned().unwrap_or_default();
                for block in &blocks {
                    match block["type"].as_str() {
                        Some("thinking") => {
                            let style = dim.add_modifier(Modifier::ITALIC);
                            let text = block["thinking"].as_str().unwrap_or_default();
                            out.extend(styled(text.trim_end(), style));
                        }
                        Some("text") => {
                            let text = block["text"].as_str().unwrap_or_default();
                            out.extend(styled(text.trim_end(), Style::default()));
                        }
                        _ => {}
                    }
                }
                match message["stopReason"].as_str() {
                    Some("error") => {
                        let text = message["errorMessage"].as_str().unwrap_or("Request error");
                        out.push(Line::styled(
                            clean(&format!("Error: {text}")),
                            Style::default().fg(Color::Red),
                        ));
                    }
                    Some("aborted") => out.push(Line::styled("Operation aborted", dim)),
                    _ => {}
                }
            }
            Item::Tool {
                name,
                args,
                output,
                error,
                done,
                ..
            } => {
                let mark = if !done {
                    "…"
                } else if *error {
                    "✗"
                } else {
                    "✓"
                };
                let color = if *error { Color::Red } else { Color::Green };
                out.push(Line::from(vec![
                    Span::styled(format!("{mark} "), Style::default().fg(color)),
                    Span::styled(
                        clean(&tool_title(name, args)).replace('\n', " "),
                        Style::default().add_modifier(Modifier::BOLD),
                    ),
                ]));
                let style = if *error {
                    Style::default().fg(Color::Red)
                } else {
                    dim
                };
                let (skipped, lines) = tail(output, OUTPUT_LINES);
                if !output.is_empty() {
                    if let Some(skipped) = skipped {
                        out.push(Line::styled(format!("  {skipped}"), dim));
                    }
                    for line in lines {
                        for mut line in styled(line, style) {
                            line.spans.insert(0, Span::raw("  "));
                            out.push(line);
                        }
                    }
                }
            }
            Item::Custom { message, rendered } => match rendered {
                Some(lines) => {
                    for line in lines {
                        out.extend(styled(line, Style::default()));
                    }
                }
                None => {
                    let kind = message["customType"].as_str().unwrap_or("custom");
                    out.push(Line::styled(
                        clean(&format!("[{kind}]")),
                        Style::default().fg(Color::Magenta),
                    ));
                    out.extend(styled(&content_text(&message["content"]), Style::default()));
                }
            },
            Item::Bash {
                command,
                excluded,
                output,
                exit,
                done,
                cancelled,
            } => {
                let sigil = if *excluded { "!!" } else { "!" };
                out.push(Line::styled(
                    clean(&format!("{sigil} {command}")).replace('\n', " "),
                    Style::default()
                        .fg(Color::Yellow)
                        .add_modifier(Modifier::BOLD),
                ));
                let (skipped, lines) = tail(output, OUTPUT_LINES);
                if let Some(skipped) = skipped {
                    out.push(Line::styled(format!("  {skipped}"), dim));
                }
                if !output.is_empty() {
                    for line in lines {
                        for mut line in styled(line, dim) {
                            line.spans.insert(0, Span::raw("  "));
                            out.push(line);
                        }
                    }
                }
                if *cancelled {
                    out.push(Line::styled("  (cancelled)", dim));
                } else if *done && exit.is_some_and(|code| code != 0) {
                    out.push(Line::styled(
                        format!("  (exit {})", exit.unwrap_or_default()),
                        Style::default().fg(Color::Red),
                    ));
                }
            }
            Item::Notice(level, text) => {
                let (prefix, style) = match level {
                    Level::Info => ("", dim),
                    Level::Warning => ("Warning: ", Style::default().fg(Color::Yellow)),
                    Level::Error => ("Error: ", Style::default().fg(Color::Red)),
                };
                out.extend(styled(&format!("{prefix}{text}"), style));
            }
            Item::Log(level, text) => {
                let style = match level {
                    Level::Info => dim,
                    Level::Warning => Style::default().fg(Color::Yellow),
                    Level::Error => Style::default().fg(Color::Red),
                };
                out.extend(styled(text, style));
            }
        }
        out
    }

    /// The item as a `Text` for a paragraph.
    pub fn text(&self) -> Text<'static> {
        Text::from(self.lines())
    }
}

/// The conversation: its items, and where the assistant message being streamed is.
#[derive(Debug, Default)]
pub struct Chat {
    /// The items, oldest first.
    pub items: Vec<Item>,
    /// The assistant message being streamed (between `message_start` and `message_end`).
    streaming: Option<usize>,
    /// Bumped on every change (the view caches wrapped lines per version).
    pub version: u64,
}

/// What a session event asks of the mode besides a redraw.
#[derive(Debug, PartialEq)]
pub enum Follow {
    /// Nothing.
    Nothing,
    /// Ask the plugins' renderer for the custom message at this index.
    Render(usize),
}

impl Chat {
    /// Adds an item.
    pub fn push(&mut self, item: Item) -> usize {
        self.items.push(item);
        self.version += 1;
        self.items.len() - 1
    }

    /// Adds a notice; an info notice right after another one replaces it, as pi's status
    /// lines do (no log spam from a plugin that reports progress).
    pub fn notice(&mut self, level: Level, text: impl Into<String>) {
        let text = text.into();
        if level == Level::Info
            && let Some(Item::Notice(Level::Info, last)) = self.items.last_mut()
        {
            *last = text;
            self.version += 1;
            return;
        }
        self.push(Item::Notice(level, text));
    }

    /// Forgets everything (a new session).
    pub fn clear(&mut self) {
        self.items.clear();
        self.streaming = None;
        self.version += 1;
    }

    /// Rebuilds the items of a session's messages (a resumed session, `/new`).
    pub fn load(&mut self, messages: &[Value]) -> Vec<Follow> {
        self.clear();
        let mut follow = Vec::new();
        for message in messages {
            match message["role"].as_str() {
                Some("user") => {
                    self.push(Item::User(content_text(&message["content"])));
                }
                Some("assistant") => {
                    self.push(Item::Assistant(message.clone()));
                    for block in message["content"].as_array().into_iter().flatten() {
                        if block["type"] == "toolCall" {
                            self.push(Item::Tool {
                                id: block["id"].as_str().unwrap_or_default().to_owned(),
                                name: block["name"].as_str().unwrap_or_default().to_owned(),
                                args: block["arguments"].clone(),
                                output: String::new(),
                                error: false,
                                done: true,
                            });
                        }
                    }
                }
                Some("toolResult") => {
                    let id = message["toolCallId"].as_str().unwrap_or_default();
                    let (output, error) = (
                        content_text(&message["content"]),
                        message["isError"].as_bool().unwrap_or(false),
                    );
                    if let Some(Item::Tool {
                        output: o,
                        error: e,
                        ..
                    }) = self
                        .items
                        .iter_mut()
                        .rev()
                        .find(|i| matches!(i, Item::Tool { id: t, .. } if t == id))
                    {
                        *o = output;
                        *e = error;
                    }
                }
                Some("custom") if message["display"] != false => {
                    let at = self.push(Item::Custom {
                        message: message.clone(),
                        rendered: None,
                    });
                    follow.push(Follow::Render(at));
                }
                Some("bashExecution") => {
                    self.push(Item::Bash {
                        command: message["command"].as_str().unwrap_or_default().to_owned(),
                        excluded: message["excludeFromContext"] == true,
                        output: message["output"].as_str().unwrap_or_default().to_owned(),
                        exit: message["exitCode"].as_i64(),
                        done: true,
                        cancelled: message["cancelled"] == true,
                    });
                }
                _ => {}
            }
        }
        follow
    }

    /// Takes one session event in.
    pub fn apply(&mut self, event: &Value) -> Follow {
        let message = &event["message"];
        match event["type"].as_str().unwrap_or_default() {
            "message_start" | "message_update" | "message_end" => {
                let kind = event["type"].as_str().unwrap_or_default();
                match message["role"].as_str() {
                    Some("assistant") => {
                        match self.streaming {
                            Some(at) if kind != "message_start" => {
                                self.items[at] = Item::Assistant(message.clone());
                                self.version += 1;
                            }
                            _ => {
                                self.streaming = Some(self.push(Item::Assistant(message.clone())));
                            }
                        }
                        if kind == "message_end" {
                            self.streaming = None;
                        }
                    }
                    Some("user") if kind == "message_start" => {
                        self.push(Item::User(content_text(&message["content"])));
                    }
                    Some("custom") if kind == "message_start" && message["display"] != false => {
                        let at = self.push(Item::Custom {
                            message: message.clone(),
                            rendered: None,
                        });
                        return Follow::Render(at);
                    }
                    _ => {}
                }
            }
            "tool_execution_start" => {
                self.push(Item::Tool {
                    id: event["toolCallId"].as_str().unwrap_or_default().to_owned(),
                    name: event["toolName"].as_str().unwrap_or_default().to_owned(),
                    args: event["args"].clone(),
                    output: String::new(),
                    error: false,
                    done: false,
                });
            }
            "tool_execution_update" | "tool_execution_end" => {
                let id = event["toolCallId"].as_str().unwrap_or_default();
                let end = event["type"] == "tool_execution_end";
                let result = if end {
                    &event["result"]
                } else {
                    &event["partialResult"]
                };
                let text = content_text(&result["content"]);
                if let Some(Item::Tool {
                    output,
                    error,
                    done,
                    ..
                }) = self
                    .items
                    .iter_mut()
                    .rev()
                    .find(|i| matches!(i, Item::Tool { id: t, .. } if t == id))
                {
                    *output = text;
                    if end {
                        *done = true;
                        *error = event["isError"] == true;
                    }
                    self.version += 1;
                }
            }
            "auto_retry_start" => self.notice(
                Level::Info,
                format!(
                    "Retrying ({}/{}) in {}s... (escape to cancel)",
                    event["attempt"],
                    event["maxAttempts"],
                    event["delayMs"].as_u64().unwrap_or(0).div_ceil(1000)
                ),
            ),
            "auto_retry_end" if event["success"] != true => self.notice(
                Level::Error,
                format!(
                    "Retry failed after {} attempts: {}",
                    event["attempt"],
                    event["finalError"].as_str().unwrap_or("Unknown error")
                ),
            ),
            "auto_compaction_start" => self.notice(Level::Info, "Compacting context…"),
            "auto_compaction_end" => {
                if event["aborted"] == true {
                    self.notice(Level::Info, "Auto-compaction cancelled");
                } else if let Some(error) = event["errorMessage"].as_str() {
                    self.notice(Level::Error, error);
                } else {
                    self.notice(Level::Info, "Context compacted");
                }
            }
            _ => {}
        }
        Follow::Nothing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text_of(item: &Item) -> String {
        item.lines()
            .iter()
            .map(|l| {
                l.spans
                    .iter()
                    .map(|s| s.content.as_ref())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn a_streamed_message_is_updated_in_place_and_tools_end() {
        let mut chat = Chat::default();
        let partial = json!({"role":"assistant","content":[{"type":"text","text":"Hel"}]});
        let full = json!({"role":"assistant","content":[{"type":"text","text":"Hello"}]});
        chat.apply(&json!({"type":"message_start","message":partial}));
        chat.apply(&json!({"type":"message_update","message":full}));
        chat.apply(&json!({"type":"message_end","message":full}));
        assert_eq!(chat.items.len(), 1);
        assert_eq!(text_of(&chat.items[0]), "Hello");
        chat.apply(&json!({"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"rm -rf /"}}));
        chat.apply(&json!({"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"blocked: no"}]},"isError":true}));
        assert_eq!(text_of(&chat.items[1]), "✗ $ rm -rf /\n  blocked: no");
    }

    #[test]
    fn control_characters_never_reach_the_screen() {
        let lines = styled(
            "\u{1b}[31mred\u{1b}[0m \u{1b}]0;title\u{7} x\u{8}y",
            Style::default(),
        );
        let text: String = lines[0].spans.iter().map(|s| s.content.as_ref()).collect();
        assert!(!text.chars().any(char::is_control), "{text:?}");
        assert!(text.starts_with("red"));
        assert_eq!(lines[0].spans[0].style.fg, Some(Color::Red));
    }
}
