//! Plugin keyboard shortcuts in the terminal: pi's key format (`ctrl+shift+p`, `alt+x`,
//! `f5`, `pageDown`; see pi's keybindings documentation) read and matched against the keys
//! crossterm reports, and pi's rule that a shortcut on the key of a reserved built-in action
//! (`builtin_keys`) is skipped and one on another built-in key is used with a warning.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::builtin_keys::BuiltinKeys;

/// A key as pi's format names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    ctrl: bool,
    shift: bool,
    alt: bool,
    code: KeyCode,
}

impl KeySpec {
    /// Reads `ctrl+shift+x`-style text (modifiers `ctrl`, `shift`, `alt` in any order; keys
    /// a-z, 0-9, symbols, `escape`/`esc`, `enter`/`return`, `tab`, `space`, `backspace`,
    /// `delete`, `insert`, `home`, `end`, `pageUp`, `pageDown`, arrows, `f1`-`f12`), case
    /// ignored; `None` when it is not such a key.
    pub fn parse(text: &str) -> Option<KeySpec> {
        let text = text.trim().to_lowercase();
        // `ctrl++`: the key is the plus sign.
        let (modifiers, key) = match text.strip_suffix("++") {
            Some(rest) => (rest, "+"),
            None if text == "+" => ("", "+"),
            None => match text.rsplit_once('+') {
                Some((modifiers, key)) => (modifiers, key),
                None => ("", text.as_str()),
            },
        };
        let mut spec = KeySpec {
            ctrl: false,
            shift: false,
            alt: false,
            code: KeyCode::Null,
        };
        for modifier in modifiers.split('+').filter(|m| !m.is_empty()) {
            match modifier {
                "ctrl" => spec.ctrl = true,
                "shift" => spec.shift = true,
                "alt" => spec.alt = true,
                _ => return None,
            }
        }
        spec.code = match key {
            "escape" | "esc" => KeyCode::Esc,
            "enter" | "return" => KeyCode::Enter,
            "tab" => KeyCode::Tab,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "delete" => KeyCode::Delete,
            "insert" => KeyCode::Insert,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" => KeyCode::PageUp,
            "pagedown" => KeyCode::PageDown,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            f if f.len() > 1 && f.starts_with('f') => {
                let n: u8 = f[1..].parse().ok()?;
                if !(1..=12).contains(&n) {
                    return None;
                }
                KeyCode::F(n)
            }
            one => {
                let mut chars = one.chars();
                let c = chars.next()?;
                if chars.next().is_some() {
                    return None;
                }
                KeyCode::Char(c)
            }
        };
        Some(spec)
    }

    /// Whether `event` is this key. Letters compare case-blind, with Shift from either the
    /// modifier or an upper-case letter; for other characters Shift is part of the character
    /// (`!` is Shift+1 on most keyboards), so only Ctrl and Alt are compared.
    pub fn matches(&self, event: &KeyEvent) -> bool {
        let ctrl = event.modifiers.contains(KeyModifiers::CONTROL);
        let alt = event.modifiers.contains(KeyModifiers::ALT);
        let mut shift = event.modifiers.contains(KeyModifiers::SHIFT);
        let code = match event.code {
            KeyCode::Char(c) if c.is_ascii_uppercase() => {
                shift = true;
                KeyCode::Char(c.to_ascii_lowercase())
            }
            KeyCode::BackTab => {
                shift = true;
                KeyCode::Tab
            }
            code => code,
        };
        if code != self.code || ctrl != self.ctrl || alt != self.alt {
            return false;
        }
        match code {
            KeyCode::Char(c) if !c.is_ascii_alphabetic() => true,
            _ => shift == self.shift,
        }
    }
}

/// Whether a plugin's shortcut `key` runs on `event` (never on a reserved built-in key).
pub fn runs(key: &str, event: &KeyEvent, builtin: &BuiltinKeys) -> bool {
    !builtin.is_reserved(key) && KeySpec::parse(key).is_some_and(|spec| spec.matches(event))
}

/// pi's warnings about plugin shortcuts, in pi's words: a key of a reserved built-in action
/// (skipped), a key of another built-in action (the plugin's is used, the action named), a
/// key two plugins registered (the later one wins); and a key that is not one (never runs).
/// Each `(plugin path, key)` in load order.
pub fn diagnostics(shortcuts: &[(String, String)], builtin: &BuiltinKeys) -> Vec<String> {
    let mut lines = Vec::new();
    let mut seen: Vec<(String, &str)> = Vec::new();
    for (path, key) in shortcuts {
        if let Some(action) = builtin.get(key) {
            if action.reserved {
                lines.push(format!(
                    "Extension shortcut '{key}' from {path} conflicts with built-in shortcut. Skipping."
                ));
                continue;
            }
            lines.push(format!(
                "Extension shortcut conflict: '{key}' is built-in shortcut for {} and {path}. Using {path}.",
                action.action
            ));
        }
        if KeySpec::parse(key).is_none() {
            lines.push(format!(
                "Extension shortcut '{key}' from {path} is not a key pi-hooks knows (such as ctrl+shift+p, alt+x, f5). Skipping."
            ));
            continue;
        }
        // pi compares the key as written, lower-cased.
        let normalized = key.to_lowercase();
        if let Some((_, earlier)) = seen.iter().find(|(k, _)| *k == normalized) {
            lines.push(format!(
                "Extension shortcut conflict: '{key}' registered by both {earlier} and {path}. Using {path}."
            ));
        }
        seen.push((normalized, path));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn pi_key_names_match_the_keys_the_terminal_reports() {
        let ctrl_shift_p = KeySpec::parse("Ctrl+Shift+P").unwrap();
        assert!(ctrl_shift_p.matches(&key(
            KeyCode::Char('P'),
            KeyModifiers::CONTROL | KeyModifiers::SHIFT
        )));
        assert!(!ctrl_shift_p.matches(&key(KeyCode::Char('p'), KeyModifiers::CONTROL)));
        let builtin = BuiltinKeys::resolve(None);
        let runs = |k: &str, e: &KeyEvent| runs(k, e, &builtin);
        assert!(runs("alt+x", &key(KeyCode::Char('x'), KeyModifiers::ALT)));
        assert!(runs("f5", &key(KeyCode::F(5), KeyModifiers::NONE)));
        assert!(runs(
            "pageDown",
            &key(KeyCode::PageDown, KeyModifiers::NONE)
        ));
        assert!(runs(
            "ctrl++",
            &key(KeyCode::Char('+'), KeyModifiers::CONTROL)
        ));
        assert!(runs("!", &key(KeyCode::Char('!'), KeyModifiers::SHIFT)));
        assert!(!runs(
            "ctrl+c",
            &key(KeyCode::Char('c'), KeyModifiers::CONTROL)
        ));
        assert!(!runs("esc", &key(KeyCode::Esc, KeyModifiers::NONE)));
        assert_eq!(KeySpec::parse("hyper+x"), None);
        assert_eq!(KeySpec::parse("f13"), None);
    }

    #[test]
    fn reserved_unknown_and_doubled_keys_are_reported_as_pi_words_them() {
        let lines = diagnostics(
            &[
                ("a.so".into(), "ctrl+c".into()),
                ("a.so".into(), "ctrl+x".into()),
                ("b.so".into(), "CTRL+X".into()),
                ("b.so".into(), "hyper+q".into()),
                ("b.so".into(), "ctrl+p".into()),
                ("b.so".into(), "ctrl+v".into()),
            ],
            &BuiltinKeys::resolve(None),
        );
        assert_eq!(
            lines,
            [
                "Extension shortcut 'ctrl+c' from a.so conflicts with built-in shortcut. Skipping.",
                "Extension shortcut conflict: 'ctrl+x' is built-in shortcut for app.models.clearAll and a.so. Using a.so.",
                "Extension shortcut conflict: 'CTRL+X' is built-in shortcut for app.models.clearAll and b.so. Using b.so.",
                "Extension shortcut conflict: 'CTRL+X' registered by both a.so and b.so. Using b.so.",
                "Extension shortcut 'hyper+q' from b.so is not a key pi-hooks knows (such as ctrl+shift+p, alt+x, f5). Skipping.",
                "Extension shortcut 'ctrl+p' from b.so conflicts with built-in shortcut. Skipping.",
                "Extension shortcut conflict: 'ctrl+v' is built-in shortcut for app.clipboard.pasteImage and b.so. Using b.so.",
            ]
        );
    }
}
