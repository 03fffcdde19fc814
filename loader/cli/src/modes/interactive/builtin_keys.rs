//! pi 0.73.1's built-in keybindings, as far as they decide which plugin shortcuts run: every
//! action's default keys (pi's `KEYBINDINGS`, Linux), the user's `<agentDir>/keybindings.json`
//! over them (with pi's renames of older action names), and the seventeen editor-global actions
//! whose keys a plugin shortcut may not take (pi's `RESERVED_KEYBINDINGS_FOR_EXTENSION_CONFLICTS`).
//! As pi, a key is compared as the lower-cased text it is written as.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

/// Every built-in action and its default keys, in pi's order (pi-tui's, then the app's).
const DEFAULTS: &[(&str, &[&str])] = &[
    ("tui.editor.cursorUp", &["up"]),
    ("tui.editor.cursorDown", &["down"]),
    ("tui.editor.cursorLeft", &["left", "ctrl+b"]),
    ("tui.editor.cursorRight", &["right", "ctrl+f"]),
    (
        "tui.editor.cursorWordLeft",
        &["alt+left", "ctrl+left", "alt+b"],
    ),
    (
        "tui.editor.cursorWordRight",
        &["alt+right", "ctrl+right", "alt+f"],
    ),
    ("tui.editor.cursorLineStart", &["home", "ctrl+a"]),
    ("tui.editor.cursorLineEnd", &["end", "ctrl+e"]),
    ("tui.editor.jumpForward", &["ctrl+]"]),
    ("tui.editor.jumpBackward", &["ctrl+alt+]"]),
    ("tui.editor.pageUp", &["pageUp"]),
    ("tui.editor.pageDown", &["pageDown"]),
    ("tui.editor.deleteCharBackward", &["backspace"]),
    ("tui.editor.deleteCharForward", &["delete", "ctrl+d"]),
    (
        "tui.editor.deleteWordBackward",
        &["ctrl+w", "alt+backspace"],
    ),
    ("tui.editor.deleteWordForward", &["alt+d", "alt+delete"]),
    ("tui.editor.deleteToLineStart", &["ctrl+u"]),
    ("tui.editor.deleteToLineEnd", &["ctrl+k"]),
    ("tui.editor.yank", &["ctrl+y"]),
    ("tui.editor.yankPop", &["alt+y"]),
    ("tui.editor.undo", &["ctrl+-"]),
    ("tui.input.newLine", &["shift+enter"]),
    ("tui.input.submit", &["enter"]),
    ("tui.input.tab", &["tab"]),
    ("tui.input.copy", &["ctrl+c"]),
    ("tui.select.up", &["up"]),
    ("tui.select.down", &["down"]),
    ("tui.select.pageUp", &["pageUp"]),
    ("tui.select.pageDown", &["pageDown"]),
    ("tui.select.confirm", &["enter"]),
    ("tui.select.cancel", &["escape", "ctrl+c"]),
    ("app.interrupt", &["escape"]),
    ("app.clear", &["ctrl+c"]),
    ("app.exit", &["ctrl+d"]),
    ("app.suspend", &["ctrl+z"]),
    ("app.thinking.cycle", &["shift+tab"]),
    ("app.model.cycleForward", &["ctrl+p"]),
    ("app.model.cycleBackward", &["shift+ctrl+p"]),
    ("app.model.select", &["ctrl+l"]),
    ("app.tools.expand", &["ctrl+o"]),
    ("app.thinking.toggle", &["ctrl+t"]),
    ("app.session.toggleNamedFilter", &["ctrl+n"]),
    ("app.editor.external", &["ctrl+g"]),
    ("app.message.followUp", &["alt+enter"]),
    ("app.message.dequeue", &["alt+up"]),
    ("app.clipboard.pasteImage", &["ctrl+v"]),
    ("app.session.new", &[]),
    ("app.session.tree", &[]),
    ("app.session.fork", &[]),
    ("app.session.resume", &[]),
    ("app.tree.foldOrUp", &["ctrl+left", "alt+left"]),
    ("app.tree.unfoldOrDown", &["ctrl+right", "alt+right"]),
    ("app.tree.editLabel", &["shift+l"]),
    ("app.tree.toggleLabelTimestamp", &["shift+t"]),
    ("app.session.togglePath", &["ctrl+p"]),
    ("app.session.toggleSort", &["ctrl+s"]),
    ("app.session.rename", &["ctrl+r"]),
    ("app.session.delete", &["ctrl+d"]),
    ("app.session.deleteNoninvasive", &["ctrl+backspace"]),
    ("app.models.save", &["ctrl+s"]),
    ("app.models.enableAll", &["ctrl+a"]),
    ("app.models.clearAll", &["ctrl+x"]),
    ("app.models.toggleProvider", &["ctrl+p"]),
    ("app.models.reorderUp", &["alt+up"]),
    ("app.models.reorderDown", &["alt+down"]),
    ("app.tree.filter.default", &["ctrl+d"]),
    ("app.tree.filter.noTools", &["ctrl+t"]),
    ("app.tree.filter.userOnly", &["ctrl+u"]),
    ("app.tree.filter.labeledOnly", &["ctrl+l"]),
    ("app.tree.filter.all", &["ctrl+a"]),
    ("app.tree.filter.cycleForward", &["ctrl+o"]),
    ("app.tree.filter.cycleBackward", &["shift+ctrl+o"]),
];

/// The actions whose keys a plugin shortcut is refused ("conflicts with built-in shortcut").
const RESERVED: &[&str] = &[
    "app.interrupt",
    "app.clear",
    "app.exit",
    "app.suspend",
    "app.thinking.cycle",
    "app.model.cycleForward",
    "app.model.cycleBackward",
    "app.model.select",
    "app.tools.expand",
    "app.thinking.toggle",
    "app.editor.external",
    "app.message.followUp",
    "tui.input.submit",
    "tui.select.confirm",
    "tui.select.cancel",
    "tui.input.copy",
    "tui.editor.deleteToLineEnd",
];

/// pi's renames of the action names older `keybindings.json` files use.
const RENAMED: &[(&str, &str)] = &[
    ("cursorUp", "tui.editor.cursorUp"),
    ("cursorDown", "tui.editor.cursorDown"),
    ("cursorLeft", "tui.editor.cursorLeft"),
    ("cursorRight", "tui.editor.cursorRight"),
    ("cursorWordLeft", "tui.editor.cursorWordLeft"),
    ("cursorWordRight", "tui.editor.cursorWordRight"),
    ("cursorLineStart", "tui.editor.cursorLineStart"),
    ("cursorLineEnd", "tui.editor.cursorLineEnd"),
    ("jumpForward", "tui.editor.jumpForward"),
    ("jumpBackward", "tui.editor.jumpBackward"),
    ("pageUp", "tui.editor.pageUp"),
    ("pageDown", "tui.editor.pageDown"),
    ("deleteCharBackward", "tui.editor.deleteCharBackward"),
    ("deleteCharForward", "tui.editor.deleteCharForward"),
    ("deleteWordBackward", "tui.editor.deleteWordBackward"),
    ("deleteWordForward", "tui.editor.deleteWordForward"),
    ("deleteToLineStart", "tui.editor.deleteToLineStart"),
    ("deleteToLineEnd", "tui.editor.deleteToLineEnd"),
    ("yank", "tui.editor.yank"),
    ("yankPop", "tui.editor.yankPop"),
    ("undo", "tui.editor.undo"),
    ("newLine", "tui.input.newLine"),
    ("submit", "tui.input.submit"),
    ("tab", "tui.input.tab"),
    ("copy", "tui.input.copy"),
    ("selectUp", "tui.select.up"),
    ("selectDown", "tui.select.down"),
    ("selectPageUp", "tui.select.pageUp"),
    ("selectPageDown", "tui.select.pageDown"),
    ("selectConfirm", "tui.select.confirm"),
    ("selectCancel", "tui.select.cancel"),
    ("interrupt", "app.interrupt"),
    ("clear", "app.clear"),
    ("exit", "app.exit"),
    ("suspend", "app.suspend"),
    ("cycleThinkingLevel", "app.thinking.cycle"),
    ("cycleModelForward", "app.model.cycleForward"),
    ("cycleModelBackward", "app.model.cycleBackward"),
    ("selectModel", "app.model.select"),
    ("expandTools", "app.tools.expand"),
    ("toggleThinking", "app.thinking.toggle"),
    ("toggleSessionNamedFilter", "app.session.toggleNamedFilter"),
    ("externalEditor", "app.editor.external"),
    ("followUp", "app.message.followUp"),
    ("dequeue", "app.message.dequeue"),
    ("pasteImage", "app.clipboard.pasteImage"),
    ("newSession", "app.session.new"),
    ("tree", "app.session.tree"),
    ("fork", "app.session.fork"),
    ("resume", "app.session.resume"),
    ("treeFoldOrUp", "app.tree.foldOrUp"),
    ("treeUnfoldOrDown", "app.tree.unfoldOrDown"),
    ("treeEditLabel", "app.tree.editLabel"),
    ("treeToggleLabelTimestamp", "app.tree.toggleLabelTimestamp"),
    ("toggleSessionPath", "app.session.togglePath"),
    ("toggleSessionSort", "app.session.toggleSort"),
    ("renameSession", "app.session.rename"),
    ("deleteSession", "app.session.delete"),
    ("deleteSessionNoninvasive", "app.session.deleteNoninvasive"),
];

/// A built-in key: the action it runs and whether a plugin shortcut on it is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinKey {
    /// The action (`app.clipboard.pasteImage`).
    pub action: &'static str,
    /// One of the reserved actions' keys.
    pub reserved: bool,
}

/// The built-in keys in effect: pi's `buildBuiltinKeybindings` over its resolved bindings.
#[derive(Debug, Clone, Default)]
pub struct BuiltinKeys(HashMap<String, BuiltinKey>);

impl BuiltinKeys {
    /// pi's defaults with the user's `<agent_dir>/keybindings.json` over them (a missing or
    /// unreadable file, or one that is not a JSON object, changes nothing, as in pi).
    pub fn load(agent_dir: &Path) -> BuiltinKeys {
        let user = std::fs::read_to_string(agent_dir.join("keybindings.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        BuiltinKeys::resolve(user.as_ref())
    }

    /// The keys of `user` (a `keybindings.json` document) over pi's defaults.
    pub fn resolve(user: Option<&Value>) -> BuiltinKeys {
        let mut overrides: HashMap<&str, Vec<String>> = HashMap::new();
        if let Some(Value::Object(map)) = user {
            for (name, binding) in map {
                let renamed = RENAMED
                    .iter()
                    .find(|(old, _)| old == name)
                    .map(|(_, new)| *new);
                // pi keeps the new name's entry when a file has both.
                if renamed.is_some_and(|new| map.contains_key(new)) {
                    continue;
                }
                let Some((action, _)) = DEFAULTS
                    .iter()
                    .find(|(action, _)| *action == renamed.unwrap_or(name))
                else {
                    continue;
                };
                let keys = match binding {
                    Value::String(key) => vec![key.clone()],
                    Value::Array(keys) if keys.iter().all(Value::is_string) => keys
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect(),
                    _ => continue,
                };
                overrides.insert(action, keys);
            }
        }
        let mut builtin: HashMap<String, BuiltinKey> = HashMap::new();
        for (action, defaults) in DEFAULTS {
            let reserved = RESERVED.contains(action);
            let keys: Vec<String> = match overrides.get(action) {
                Some(keys) => keys.clone(),
                None => defaults.iter().map(|k| (*k).to_owned()).collect(),
            };
            for key in keys {
                let key = key.to_lowercase();
                // A key of several actions: a reserved one keeps it, else the last one.
                if builtin.get(&key).is_some_and(|k| k.reserved) && !reserved {
                    continue;
                }
                builtin.insert(key, BuiltinKey { action, reserved });
            }
        }
        BuiltinKeys(builtin)
    }

    /// The built-in action on `key` (a plugin shortcut's key as written), if any. pi compares
    /// the lower-cased text; pi-hooks also reads the aliases `esc` and `return` as `escape` and
    /// `enter`, so that no spelling takes a reserved key.
    pub fn get(&self, key: &str) -> Option<&BuiltinKey> {
        let key = key.to_lowercase();
        let canonical = match key.rsplit_once('+') {
            Some((modifiers, "esc")) => format!("{modifiers}+escape"),
            Some((modifiers, "return")) => format!("{modifiers}+enter"),
            None if key == "esc" => "escape".to_owned(),
            None if key == "return" => "enter".to_owned(),
            _ => key,
        };
        self.0.get(&canonical)
    }

    /// Whether a plugin shortcut on `key` is refused.
    pub fn is_reserved(&self, key: &str) -> bool {
        self.get(key).is_some_and(|k| k.reserved)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_s_defaults_and_the_user_s_file_decide_which_keys_are_built_in() {
        let keys = BuiltinKeys::resolve(None);
        assert_eq!(RESERVED.len(), 17);
        for key in [
            "ctrl+p",
            "ctrl+l",
            "ctrl+o",
            "ctrl+t",
            "ctrl+g",
            "ctrl+k",
            "ctrl+z",
            "shift+tab",
            "alt+enter",
            "escape",
            "enter",
            "ctrl+c",
            "ctrl+d",
            "Ctrl+P",
        ] {
            assert!(keys.is_reserved(key), "{key}");
        }
        assert_eq!(
            keys.get("ctrl+v"),
            Some(&BuiltinKey {
                action: "app.clipboard.pasteImage",
                reserved: false
            })
        );
        // Several non-reserved actions: the last one names the key.
        assert_eq!(keys.get("ctrl+a").unwrap().action, "app.tree.filter.all");
        assert_eq!(keys.get("ctrl+x").unwrap().action, "app.models.clearAll");
        assert_eq!(keys.get("ctrl+q"), None);
        assert!(keys.is_reserved("Esc") && keys.is_reserved("return"));
        // pi compares the text: `ctrl+shift+p` is not `shift+ctrl+p`.
        assert!(keys.is_reserved("shift+ctrl+p"));
        assert_eq!(keys.get("ctrl+shift+p"), None);
        // keybindings.json moves an action: its old keys are free, its new ones reserved;
        // older names are read as pi renames them.
        let keys = BuiltinKeys::resolve(Some(&json!({
            "app.model.cycleForward": "ctrl+q",
            "expandTools": ["f9"],
            "app.clipboard.pasteImage": 3
        })));
        assert!(keys.is_reserved("ctrl+q"));
        assert!(keys.is_reserved("f9"));
        assert!(!keys.is_reserved("ctrl+p"), "{:?}", keys.get("ctrl+p"));
        assert_eq!(
            keys.get("ctrl+p").unwrap().action,
            "app.models.toggleProvider"
        );
        assert_eq!(
            keys.get("ctrl+o"),
            Some(&BuiltinKey {
                action: "app.tree.filter.cycleForward",
                reserved: false
            })
        );
        assert_eq!(
            keys.get("ctrl+v").unwrap().action,
            "app.clipboard.pasteImage"
        );
    }
}
