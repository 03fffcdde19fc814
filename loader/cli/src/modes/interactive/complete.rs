//! Slash-command completion in the editor: command names (the built-ins and every plugin
//! command) while the first word is typed, then the plugin's own argument completions,
//! asked on a blocking thread (plugin code) and shown when they arrive.

use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use super::Msg;
use super::app::{BUILTINS, Ctl};

/// Numbers argument-completion requests, so a late answer to an older prefix is dropped.
static REQUESTS: AtomicU64 = AtomicU64::new(0);

/// One suggestion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// What goes into the editor.
    pub value: String,
    /// What the list shows.
    pub label: String,
    /// Shown beside the label.
    pub description: String,
}

/// The completion list under the editor.
#[derive(Debug, Clone)]
pub struct Completion {
    /// The suggestions.
    pub items: Vec<Choice>,
    /// The highlighted one.
    pub selected: usize,
    /// The command whose arguments are completed (`None`: command names).
    command: Option<String>,
    /// The request whose answer `items` waits for.
    seq: u64,
}

impl Completion {
    /// The list for the editor's `text` (after an edit): `None` when nothing completes.
    pub fn update(previous: Option<Completion>, text: &str, ctl: &Ctl) -> Option<Completion> {
        let typed = text.strip_prefix('/')?;
        if text.contains('\n') {
            return None;
        }
        match typed.split_once(' ') {
            None => {
                let mut items: Vec<Choice> = BUILTINS
                    .iter()
                    .map(|(name, description)| ((*name).to_owned(), (*description).to_owned()))
                    .chain(
                        ctl.agent
                            .commands()
                            .into_iter()
                            .map(|(name, description, _)| (name, description)),
                    )
                    .filter(|(name, _)| name.starts_with(typed))
                    .map(|(name, description)| Choice {
                        label: format!("/{name}"),
                        value: name,
                        description,
                    })
                    .collect();
                items.sort_by(|a, b| a.value.cmp(&b.value));
                if items.is_empty() {
                    return None;
                }
                let selected = previous
                    .filter(|p| p.command.is_none())
                    .and_then(|p| p.items.get(p.selected).cloned())
                    .and_then(|was| items.iter().position(|c| *c == was))
                    .unwrap_or(0);
                Some(Completion {
                    items,
                    selected,
                    command: None,
                    seq: 0,
                })
            }
            Some((name, prefix)) => {
                let completes = ctl
                    .agent
                    .commands()
                    .into_iter()
                    .any(|(command, _, completes)| command == name && completes);
                if !completes {
                    return None;
                }
                let seq = REQUESTS.fetch_add(1, Ordering::Relaxed) + 1;
                let (agent, to_terminal) = (ctl.agent.clone(), ctl.to_terminal.clone());
                let (name_owned, prefix) = (name.to_owned(), prefix.to_owned());
                pi_hooks_host::services::runtime::handle().spawn_blocking(move || {
                    let items = agent
                        .command_completions(&name_owned, &prefix)
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                    let _ = to_terminal.send(Msg::Completions(seq, items));
                });
                // The old suggestions stay until the new ones arrive (no flicker per key).
                let (items, selected) = previous
                    .filter(|p| p.command.as_deref() == Some(name))
                    .map(|p| (p.items, p.selected))
                    .unwrap_or_default();
                Some(Completion {
                    items,
                    selected,
                    command: Some(name.to_owned()),
                    seq,
                })
            }
        }
    }

    /// The plugin's answer to request `seq` (`{value, label?, description?}` items).
    pub fn arrived(&mut self, seq: u64, items: Vec<Value>) {
        if seq != self.seq {
            return;
        }
        self.items = items
            .iter()
            .filter_map(|item| {
                let value = item["value"].as_str()?.to_owned();
                Some(Choice {
                    label: item["label"].as_str().unwrap_or(&value).to_owned(),
                    description: item["description"].as_str().unwrap_or_default().to_owned(),
                    value,
                })
            })
            .collect();
        self.selected = self.selected.min(self.items.len().saturating_sub(1));
    }

    /// Highlights the previous suggestion.
    pub fn previous(&mut self) {
        if !self.items.is_empty() {
            self.selected = self.selected.checked_sub(1).unwrap_or(self.items.len() - 1);
        }
    }

    /// Highlights the next suggestion.
    pub fn next(&mut self) {
        if !self.items.is_empty() {
            self.selected = (self.selected + 1) % self.items.len();
        }
    }

    /// The editor's text with the highlighted suggestion taken.
    pub fn accept(&self) -> Option<String> {
        let choice = self.items.get(self.selected)?;
        Some(match &self.command {
            None => format!("/{} ", choice.value),
            Some(name) => format!("/{name} {}", choice.value),
        })
    }
}
