//! The event names the host emits, and the nearest one to a name it does not know.
//!
//! A plugin may subscribe to any name (a newer plugin on an older host must still load), but
//! a typo such as `tool_calls` or `toolCall` silently turns a security plugin off, so an
//! unknown name is reported at load, with the nearest known name.

/// Every event name a plugin can receive, from the event reference
/// ([`pi_hooks_abi::event_reference::EVENTS`], also rendered into `docs/events.md`).
pub fn known_events() -> impl Iterator<Item = &'static str> {
    pi_hooks_abi::event_reference::EVENTS.iter().map(|e| e.name)
}

/// Whether the host emits `name`.
pub fn is_known(name: &str) -> bool {
    pi_hooks_abi::event_reference::find(name).is_some()
}

/// The known name closest to `name` (case, `_`, `-` and `.` aside, then by edit distance),
/// if one is close enough to be a likely typo.
pub fn nearest(name: &str) -> Option<&'static str> {
    let folded = fold(name);
    known_events()
        .map(|known| (strsim::levenshtein(&folded, &fold(known)), known))
        .filter(|(distance, _)| *distance <= 2.max(folded.len() / 4))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// The warning for a subscription to a name the host never emits, or `None` for a known one.
pub fn unknown_event_warning(name: &str) -> Option<String> {
    if is_known(name) {
        return None;
    }
    let name = crate::guards::display::escape(name);
    Some(match nearest(&name) {
        Some(known) => format!(
            "subscribes to \"{name}\", an event this host never emits; did you mean \"{known}\"? (its handler will not run)"
        ),
        None => format!(
            "subscribes to \"{name}\", an event this host never emits (its handler will not run)"
        ),
    })
}

fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.'))
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_the_nearest_name() {
        assert_eq!(nearest("tool_calls"), Some("tool_call"));
        assert_eq!(nearest("toolCall"), Some("tool_call"));
        assert_eq!(nearest("TOOL-RESULT"), Some("tool_result"));
        assert_eq!(nearest("sesion_start"), Some("session_start"));
        assert_eq!(nearest("completely_different_thing"), None);
        assert!(unknown_event_warning("tool_call").is_none());
        let warning = unknown_event_warning("toolCall").unwrap();
        assert!(warning.contains("did you mean \"tool_call\""), "{warning}");
    }
}
