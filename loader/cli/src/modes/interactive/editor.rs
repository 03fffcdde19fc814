//! The prompt editor: multi-line text with a cursor, and the history of what was sent
//! (Up and Down at the first and last line walk it, as in pi's editor).

/// The editor's text and cursor. The cursor is a (line, char) position; lines never hold
/// `\n`.
#[derive(Debug, Clone)]
pub struct Editor {
    lines: Vec<String>,
    row: usize,
    col: usize,
    history: Vec<String>,
    /// Where Up/Down is in `history` (`None`: editing a new text).
    browsing: Option<usize>,
    /// The text being written before history browsing began.
    draft: String,
}

impl Default for Editor {
    fn default() -> Self {
        Editor {
            lines: vec![String::new()],
            row: 0,
            col: 0,
            history: Vec::new(),
            browsing: None,
            draft: String::new(),
        }
    }
}

/// The byte offset of char `col` in `line` (its end when past it).
fn byte_at(line: &str, col: usize) -> usize {
    line.char_indices()
        .nth(col)
        .map_or(line.len(), |(at, _)| at)
}

impl Editor {
    /// The whole text, lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }

    /// The lines.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The cursor as (line, char column).
    pub fn cursor(&self) -> (usize, usize) {
        (self.row, self.col)
    }

    /// Whether there is no text.
    pub fn is_empty(&self) -> bool {
        self.lines.len() == 1 && self.lines[0].is_empty()
    }

    /// Replaces the text; the cursor goes to its end.
    pub fn set_text(&mut self, text: &str) {
        self.lines = text.split('\n').map(str::to_owned).collect();
        self.row = self.lines.len() - 1;
        self.col = self.lines[self.row].chars().count();
        self.browsing = None;
    }

    /// Empties the editor.
    pub fn clear(&mut self) {
        self.set_text("");
    }

    /// Inserts `text` at the cursor (`\n` starts a new line; `\r` is dropped).
    pub fn insert(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '\n' => self.newline(),
                '\r' => {}
                c => {
                    let line = &mut self.lines[self.row];
                    line.insert(byte_at(line, self.col), c);
                    self.col += 1;
                }
            }
        }
    }

    /// Splits the line at the cursor.
    pub fn newline(&mut self) {
        let line = &mut self.lines[self.row];
        let rest = line.split_off(byte_at(line, self.col));
        self.lines.insert(self.row + 1, rest);
        self.row += 1;
        self.col = 0;
    }

    /// Deletes the char before the cursor (joins lines at a line start).
    pub fn backspace(&mut self) {
        if self.col > 0 {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col - 1);
            line.remove(at);
            self.col -= 1;
        } else if self.row > 0 {
            let line = self.lines.remove(self.row);
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
            self.lines[self.row].push_str(&line);
        }
    }

    /// Deletes the char under the cursor (joins lines at a line end).
    pub fn delete(&mut self) {
        let len = self.lines[self.row].chars().count();
        if self.col < len {
            let line = &mut self.lines[self.row];
            let at = byte_at(line, self.col);
            line.remove(at);
        } else if self.row + 1 < self.lines.len() {
            let next = self.lines.remove(self.row + 1);
            self.lines[self.row].push_str(&next);
        }
    }

    /// Deletes the word before the cursor (Ctrl+W).
    pub fn delete_word(&mut self) {
        let chars: Vec<char> = self.lines[self.row].chars().collect();
        let mut start = self.col;
        while start > 0 && chars[start - 1] == ' ' {
            start -= 1;
        }
        while start > 0 && chars[start - 1] != ' ' {
            start -= 1;
        }
        let line = &mut self.lines[self.row];
        let (from, to) = (byte_at(line, start), byte_at(line, self.col));
        line.replace_range(from..to, "");
        self.col = start;
    }

    /// Deletes from the line start to the cursor (Ctrl+U).
    pub fn delete_to_start(&mut self) {
        let line = &mut self.lines[self.row];
        let to = byte_at(line, self.col);
        line.replace_range(..to, "");
        self.col = 0;
    }

    /// Moves the cursor one char left (to the previous line's end at a line start).
    pub fn left(&mut self) {
        if self.col > 0 {
            self.col -= 1;
        } else if self.row > 0 {
            self.row -= 1;
            self.col = self.lines[self.row].chars().count();
        }
    }

    /// Moves the cursor one char right (to the next line's start at a line end).
    pub fn right(&mut self) {
        if self.col < self.lines[self.row].chars().count() {
            self.col += 1;
        } else if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = 0;
        }
    }

    /// To the line start.
    pub fn home(&mut self) {
        self.col = 0;
    }

    /// To the line end.
    pub fn end(&mut self) {
        self.col = self.lines[self.row].chars().count();
    }

    /// Up: the line above, or at the first line the previous history entry.
    pub fn up(&mut self) {
        if self.row > 0 {
            self.row -= 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(at) => at - 1,
        };
        let text = self.history[next].clone();
        self.set_text(&text);
        self.browsing = Some(next);
    }

    /// Down: the line below, or at the last line the next history entry (then the draft).
    pub fn down(&mut self) {
        if self.row + 1 < self.lines.len() {
            self.row += 1;
            self.col = self.col.min(self.lines[self.row].chars().count());
            return;
        }
        let Some(at) = self.browsing else { return };
        if at + 1 < self.history.len() {
            let text = self.history[at + 1].clone();
            self.set_text(&text);
            self.browsing = Some(at + 1);
        } else {
            let draft = std::mem::take(&mut self.draft);
            self.set_text(&draft);
        }
    }

    /// Adds `text` to the history (a prompt sent without being typed).
    pub fn take_into_history(&mut self, text: &str) {
        if !text.trim().is_empty() && self.history.last().map(String::as_str) != Some(text) {
            self.history.push(text.to_owned());
        }
    }

    /// Takes the text out for sending: it joins the history (not twice in a row) and the
    /// editor empties.
    pub fn take(&mut self) -> String {
        let text = self.text();
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
        }
        self.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::Editor;

    #[test]
    fn multi_line_editing_and_history() {
        let mut editor = Editor::default();
        editor.insert("héllo");
        editor.newline();
        editor.insert("world");
        assert_eq!(editor.text(), "héllo\nworld");
        editor.home();
        editor.backspace();
        assert_eq!(editor.text(), "hélloworld");
        assert_eq!(editor.cursor(), (0, 5));
        editor.delete_word();
        assert_eq!(editor.text(), "world");
        assert_eq!(editor.take(), "world");
        editor.insert("second");
        assert_eq!(editor.take(), "second");
        editor.insert("draft");
        editor.up();
        assert_eq!(editor.text(), "second");
        editor.up();
        assert_eq!(editor.text(), "world");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "draft");
    }
}
