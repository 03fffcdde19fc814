//! The status line (key `workflow`): the top-level name, then `[N/M]` at every level, the
//! emoji only on concrete phases, joined by ` > `.

use crate::definitions::{Definitions, PhaseEntry};
use crate::state::WorkflowState;

/// The status key.
pub const STATUS_KEY: &str = "workflow";

/// The status text, or `None` (clear it) when there is no active, resolvable workflow.
pub fn status_text(state: Option<&WorkflowState>, defs: &Definitions) -> Option<String> {
    let state = state.filter(|s| s.active)?;
    let root = state.current_path.first()?;
    let mut parts = vec![defs.get(&root.workflow_key)?.name.clone()];
    for seg in &state.current_path {
        let def = defs.get(&seg.workflow_key)?;
        let entry = def.phases.get(seg.phase_index)?;
        let counter = format!("[{}/{}]", seg.phase_index + 1, def.phases.len());
        parts.push(match entry {
            PhaseEntry::Subworkflow(_) => format!("{} {counter}", defs.entry_name(entry)),
            PhaseEntry::Phase(p) => format!("{} {} {counter}", p.emoji, p.name),
        });
    }
    Some(parts.join(" > "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::{nested, phase, wf};
    use crate::state::{Advance, advance, initial_state};

    #[test]
    fn linear_nested_and_cleared() {
        let defs = nested();
        let s = initial_state(&defs, "top", "t", 1, "id".into());
        assert_eq!(status_text(Some(&s), &defs).unwrap(), "Top > 📋 Plan [1/3]");
        let Advance::Moved { state: s, .. } = advance(&s, &defs).unwrap() else {
            panic!()
        };
        assert_eq!(
            status_text(Some(&s), &defs).unwrap(),
            "Top > Review [2/3] > Inner [1/2] > 📖 Read [1/2]"
        );
        let mut inactive = s.clone();
        inactive.active = false;
        assert_eq!(status_text(Some(&inactive), &defs), None);
        assert_eq!(status_text(None, &defs), None);
        let mut out = s.clone();
        out.current_path[2].phase_index = 9;
        assert_eq!(status_text(Some(&out), &defs), None);
        let mut missing = s;
        missing.current_path[0].workflow_key = "gone".into();
        assert_eq!(status_text(Some(&missing), &defs), None);
        let mut empty = initial_state(&defs, "top", "t", 1, "id".into());
        empty.current_path.clear();
        assert_eq!(status_text(Some(&empty), &defs), None);
        let one = Definitions::from_entries(vec![(
            "p".into(),
            wf(
                "CI/CD Pipeline",
                vec![phase("Planning", "📋"), phase("B", "x"), phase("C", "y")],
            ),
        )]);
        let s = initial_state(&one, "p", "t", 1, "id".into());
        assert_eq!(
            status_text(Some(&s), &one).unwrap(),
            "CI/CD Pipeline > 📋 Planning [1/3]"
        );
    }
}
