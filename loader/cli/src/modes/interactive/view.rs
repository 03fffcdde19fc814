//! Drawing one frame: the conversation (only the items that fit, from the bottom up, so a
//! long session costs no more per frame than a short one), the working line, widgets above
//! the editor, the editor or the dialog in its place, the completion list, widgets below,
//! and pi's footer (directory, token use and model, then the plugin statuses).

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Paragraph, Wrap};
use unicode_width::UnicodeWidthChar;

use super::app::{App, MAX_WIDGET_LINES};
use super::chat::{clean, styled};
use super::editor::Editor;
use super::ui::{Dialog, Kind};

/// Editor lines shown at most (the view follows the cursor).
const EDITOR_LINES: usize = 8;
/// Completion suggestions shown at most.
const COMPLETION_ROWS: usize = 8;
/// The spinner's frames.
const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// pi's status-line text: `\r`, `\n`, `\t` as spaces, runs of spaces as one, trimmed.
pub fn sanitize_status(text: &str) -> String {
    let spaced: String = text
        .chars()
        .map(|c| {
            if matches!(c, '\r' | '\n' | '\t') {
                ' '
            } else {
                c
            }
        })
        .collect();
    spaced
        .split(' ')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` cut to `width` columns, ending in `ellipsis` when cut.
pub fn truncate(text: &str, width: usize, ellipsis: &str) -> String {
    let total: usize = text.chars().map(|c| c.width().unwrap_or(0)).sum();
    if total <= width {
        return text.to_owned();
    }
    let room = width.saturating_sub(ellipsis.chars().count());
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push_str(ellipsis);
    out
}

/// pi's token counts: 999, 1.2k, 12k, 1.2M, 12M.
fn tokens(count: u64) -> String {
    match count {
        0..1_000 => count.to_string(),
        1_000..10_000 => format!("{:.1}k", count as f64 / 1000.0),
        10_000..1_000_000 => format!("{}k", (count as f64 / 1000.0).round()),
        1_000_000..10_000_000 => format!("{:.1}M", count as f64 / 1e6),
        _ => format!("{}M", (count as f64 / 1e6).round()),
    }
}

/// The rows the editor's lines take at `width` (each row a char range of one line) and the
/// row and column of the cursor.
fn editor_rows(editor: &Editor, width: usize) -> (Vec<String>, (usize, usize)) {
    let width = width.max(2);
    let (cursor_line, cursor_col) = editor.cursor();
    let mut rows = Vec::new();
    let mut cursor = (0, 0);
    for (n, line) in editor.lines().iter().enumerate() {
        let mut row = String::new();
        let mut used = 0;
        for (col, c) in line.chars().enumerate() {
            if n == cursor_line && col == cursor_col {
                cursor = (rows.len(), used);
            }
            let w = c.width().unwrap_or(0);
            if used + w > width - 1 {
                rows.push(std::mem::take(&mut row));
                used = 0;
                if n == cursor_line && col == cursor_col {
                    cursor = (rows.len(), 0);
                }
            }
            row.push(if c.is_control() { ' ' } else { c });
            used += w;
        }
        if n == cursor_line && cursor_col >= line.chars().count() {
            cursor = (rows.len(), used);
        }
        rows.push(row);
    }
    (rows, cursor)
}

/// Draws `app` into `frame`.
pub fn draw(frame: &mut Frame<'_>, app: &App, now: Instant) {
    let area = frame.area();
    let width = area.width as usize;

    let working = working_line(app);
    let above = widget_lines(app, false, width);
    let below = widget_lines(app, true, width);
    let (middle, cursor) = match app.dialogs.front() {
        Some(dialog) => dialog_lines(dialog, width, now),
        None => editor_lines(app, width),
    };
    let completion = completion_lines(app, width);
    let footer = footer_lines(app, width);

    let (chat, heights) = fit_heights(
        [
            working.len(),
            above.len(),
            middle.len(),
            completion.len(),
            below.len(),
            footer.len(),
        ],
        area.height as usize,
    );
    let mut constraints = vec![Constraint::Length(chat as u16)];
    constraints.extend(heights.iter().map(|h| Constraint::Length(*h as u16)));
    let areas = Layout::vertical(constraints).split(area);

    draw_chat(frame, app, areas[0]);
    let parts = [working, above, middle, completion, below, footer];
    for (n, lines) in parts.into_iter().enumerate() {
        frame.render_widget(Paragraph::new(Text::from(lines)), areas[n + 1]);
    }
    if let Some((row, col)) = cursor {
        let middle_area = areas[3];
        let y = middle_area.y + row as u16;
        if y < middle_area.bottom() {
            frame.set_cursor_position(Position::new(middle_area.x + col as u16, y));
        }
    }
}

/// The rows each part below the conversation gets on a screen of `rows` rows (`wanted`:
/// the working line, widgets above, the editor or dialog, the completion list, widgets
/// below, the footer), and the conversation's rows (what is left). A screen too small for
/// everything gives rows in order of need: the editor or dialog first (a question must be
/// seen to be answered), then the footer, the completion list, the widgets below, the
/// working line and the widgets above; a part cut short shows its first lines.
fn fit_heights(wanted: [usize; 6], rows: usize) -> (usize, [usize; 6]) {
    const NEED: [usize; 6] = [2, 5, 3, 4, 0, 1];
    let mut left = rows;
    let mut given = [0; 6];
    for part in NEED {
        given[part] = wanted[part].min(left);
        left -= given[part];
    }
    (left, given)
}

/// The conversation, bottom-aligned, scrolled up by `app.scroll` lines.
fn draw_chat(frame: &mut Frame<'_>, app: &App, area: Rect) {
    if area.height == 0 {
        return;
    }
    let want = area.height as usize + app.scroll;
    let mut picked: Vec<Text<'static>> = Vec::new();
    let mut total = 0;
    for item in app.chat.items.iter().rev() {
        let text = item.text();
        if text.lines.is_empty() {
            continue;
        }
        let height = Paragraph::new(text.clone())
            .wrap(Wrap { trim: false })
            .line_count(area.width)
            + 1;
        total += height;
        picked.push(text);
        if total >= want {
            break;
        }
    }
    let mut lines: Vec<Line<'static>> = Vec::new();
    for text in picked.into_iter().rev() {
        lines.extend(text.lines);
        lines.push(Line::raw(""));
    }
    let paragraph = Paragraph::new(Text::from(lines)).wrap(Wrap { trim: false });
    let visible = area.height as usize;
    // Scrolled past the first item: stop at the top.
    let top = total.saturating_sub(visible + app.scroll.min(total.saturating_sub(visible)));
    let blank = visible.saturating_sub(total);
    let area = Rect {
        y: area.y + blank as u16,
        height: area.height - blank as u16,
        ..area
    };
    frame.render_widget(
        paragraph.scroll((u16::try_from(top).unwrap_or(u16::MAX), 0)),
        area,
    );
}

fn working_line(app: &App) -> Vec<Line<'static>> {
    if !app.working {
        return Vec::new();
    }
    let spin = SPINNER[now_index() % SPINNER.len()];
    let message = app.working_message.as_deref().unwrap_or("Working...");
    vec![Line::from(vec![
        Span::styled(format!("{spin} "), Style::default().fg(Color::Cyan)),
        Span::styled(
            clean(message).replace('\n', " "),
            Style::default().fg(Color::DarkGray),
        ),
        Span::styled(" (Esc to interrupt)", Style::default().fg(Color::DarkGray)),
    ])]
}

/// The spinner's frame number from the wall clock (an `Instant` has no epoch).
fn now_index() -> usize {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| (d.as_millis() / 80) as usize)
}

fn widget_lines(app: &App, below: bool, width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for widget in app.widgets.iter().filter(|w| w.below == below) {
        for line in widget.lines.iter().take(MAX_WIDGET_LINES) {
            for line in styled(line, Style::default()) {
                out.push(line_truncated(line, width));
            }
        }
        if widget.lines.len() > MAX_WIDGET_LINES {
            out.push(Line::styled(
                "... (widget truncated)",
                Style::default().fg(Color::DarkGray),
            ));
        }
    }
    out
}

/// A styled line cut to `width` columns (one row per widget line, as pi's widgets).
fn line_truncated(line: Line<'static>, width: usize) -> Line<'static> {
    let mut used = 0;
    let mut spans = Vec::new();
    for span in line.spans {
        let mut text = String::new();
        for c in span.content.chars() {
            let w = c.width().unwrap_or(0);
            if used + w > width {
                break;
            }
            used += w;
            text.push(c);
        }
        spans.push(Span::styled(text, span.style));
    }
    Line::from(spans)
}

fn rule(width: usize, color: Color) -> Line<'static> {
    Line::styled("─".repeat(width), Style::default().fg(color))
}

type Cursor = Option<(usize, usize)>;

fn editor_lines(app: &App, width: usize) -> (Vec<Line<'static>>, Cursor) {
    let bash = app.editor.text().starts_with('!');
    let color = if bash { Color::Yellow } else { Color::DarkGray };
    let (rows, (cursor_row, cursor_col)) = editor_rows(&app.editor, width);
    let first = (cursor_row + 1).saturating_sub(EDITOR_LINES);
    let mut out = vec![rule(width, color)];
    for row in rows.iter().skip(first).take(EDITOR_LINES) {
        out.push(Line::raw(row.clone()));
    }
    out.push(rule(width, color));
    (out, Some((cursor_row - first + 1, cursor_col)))
}

fn dialog_lines(dialog: &Dialog, width: usize, now: Instant) -> (Vec<Line<'static>>, Cursor) {
    let accent = Style::default()
        .fg(Color::Cyan)
        .add_modifier(Modifier::BOLD);
    let dim = Style::default().fg(Color::DarkGray);
    let mut out = vec![rule(width, Color::Cyan)];
    let mut title: Vec<String> = clean(&dialog.title)
        .split('\n')
        .map(str::to_owned)
        .collect();
    if let (Some(seconds), Some(first)) = (dialog.seconds_left(now), title.first_mut()) {
        first.push_str(&format!(" ({seconds}s)"));
    }
    for line in title {
        out.push(Line::styled(truncate(&line, width, "..."), accent));
    }
    let mut cursor = None;
    match &dialog.kind {
        Kind::Select {
            options, selected, ..
        } => {
            for (n, option) in options.iter().enumerate() {
                let text = truncate(
                    &clean(option).replace('\n', " "),
                    width.saturating_sub(2),
                    "...",
                );
                out.push(if n == *selected {
                    Line::styled(format!("→ {text}"), Style::default().fg(Color::Cyan))
                } else {
                    Line::raw(format!("  {text}"))
                });
            }
            out.push(Line::styled("↑↓ navigate · Enter select · Esc cancel", dim));
        }
        Kind::Text {
            editor,
            placeholder,
            multi_line,
        } => {
            let (rows, (row, col)) = editor_rows(editor, width);
            let first = (row + 1).saturating_sub(EDITOR_LINES);
            let at = out.len();
            if editor.is_empty() && !placeholder.is_empty() {
                out.push(Line::styled(clean(placeholder).replace('\n', " "), dim));
            } else {
                for text in rows.iter().skip(first).take(EDITOR_LINES) {
                    out.push(Line::raw(text.clone()));
                }
            }
            cursor = Some((at + row - first, col));
            out.push(Line::styled(
                if *multi_line {
                    "Enter new line · Ctrl+S or Alt+Enter submit · Esc cancel"
                } else {
                    "Enter submit · Esc cancel"
                },
                dim,
            ));
        }
    }
    out.push(rule(width, Color::Cyan));
    (out, cursor)
}

fn completion_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let Some(completion) = &app.completion else {
        return Vec::new();
    };
    let first = (completion.selected + 1).saturating_sub(COMPLETION_ROWS);
    completion
        .items
        .iter()
        .enumerate()
        .skip(first)
        .take(COMPLETION_ROWS)
        .map(|(n, choice)| {
            let label = clean(&choice.label).replace('\n', " ");
            let description = clean(&choice.description).replace('\n', " ");
            let text = truncate(
                &format!("{label:<16} {description}"),
                width.saturating_sub(2),
                "...",
            );
            if n == completion.selected {
                Line::styled(format!("→ {text}"), Style::default().fg(Color::Cyan))
            } else {
                Line::styled(format!("  {text}"), Style::default().fg(Color::DarkGray))
            }
        })
        .collect()
}

fn footer_lines(app: &App, width: usize) -> Vec<Line<'static>> {
    let dim = Style::default().fg(Color::DarkGray);
    let footer = &app.footer;
    let mut place = footer.cwd.clone();
    if let Some(name) = &footer.session_name {
        place = format!("{place} • {name}");
    }
    let mut out = vec![Line::styled(truncate(&clean(&place), width, "..."), dim)];
    let [input, output, read, write] = footer.tokens;
    let mut stats = Vec::new();
    for (sigil, count) in [("↑", input), ("↓", output), ("R", read), ("W", write)] {
        if count > 0 {
            stats.push(format!("{sigil}{}", tokens(count)));
        }
    }
    if footer.cost > 0.0 {
        stats.push(format!("${:.3}", footer.cost));
    }
    let left = stats.join(" ");
    let right = clean(&footer.model);
    let used = left.chars().count() + right.chars().count();
    let line = if used + 2 <= width {
        format!("{left}{}{right}", " ".repeat(width - used))
    } else {
        truncate(&format!("{left}  {right}"), width, "...")
    };
    out.push(Line::styled(line, dim));
    if !app.statuses.is_empty() {
        // pi: sorted by key, each sanitised, joined with a space, cut to the width.
        let joined = app
            .statuses
            .values()
            .map(|t| sanitize_status(t))
            .collect::<Vec<_>>()
            .join(" ");
        let mut lines = styled(&joined, Style::default());
        let line = lines.drain(..).next().unwrap_or_default();
        let plain: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        let total: usize = plain.chars().map(|c| c.width().unwrap_or(0)).sum();
        if total > width {
            let mut cut = line_truncated(line, width.saturating_sub(3));
            cut.spans.push(Span::styled("...", dim));
            out.push(cut);
        } else {
            out.push(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_is_sanitised_and_cut_to_the_width() {
        assert_eq!(sanitize_status(" a\tb\r\n  c  "), "a b c");
        assert_eq!(truncate("abcdefgh", 6, "..."), "abc...");
        assert_eq!(truncate("abc", 6, "..."), "abc");
        assert_eq!(tokens(999), "999");
        assert_eq!(tokens(1234), "1.2k");
        assert_eq!(tokens(12_345), "12k");
    }

    #[test]
    fn a_small_screen_gives_the_dialog_its_rows_first() {
        // Working 1, widgets 2 above and 1 below, a dialog of 7, no completion, footer 3.
        let wanted = [1, 2, 7, 0, 1, 3];
        assert_eq!(fit_heights(wanted, 30), (16, wanted));
        assert_eq!(fit_heights(wanted, 12), (0, [1, 0, 7, 0, 1, 3]));
        assert_eq!(fit_heights(wanted, 8), (0, [0, 0, 7, 0, 0, 1]));
        assert_eq!(fit_heights(wanted, 5), (0, [0, 0, 5, 0, 0, 0]));
    }

    #[test]
    fn the_cursor_follows_wrapped_editor_rows() {
        let mut editor = Editor::default();
        editor.insert("abcdefghij");
        let (rows, cursor) = editor_rows(&editor, 5);
        assert_eq!(rows, vec!["abcd", "efgh", "ij"]);
        assert_eq!(cursor, (2, 2));
        editor.home();
        assert_eq!(editor_rows(&editor, 5).1, (0, 0));
    }
}
