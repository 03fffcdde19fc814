//! The workflow state machine: a `currentPath` stack of `{workflowKey, phaseIndex}`
//! segments, auto-enter of subworkflows, `next`, `loop`, cancellation and completion. Every
//! transition returns a new state (copy on write).

use serde::{Deserialize, Serialize};

use crate::definitions::{Definitions, PhaseDefinition, PhaseEntry, WorkflowDefinition};

/// One level of the path: a workflow and the index of its current phase entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathSegment {
    /// The workflow of this level.
    pub workflow_key: String,
    /// The index into its `phases`.
    pub phase_index: usize,
}

/// The state of the one tracked workflow, as persisted in `workflow:state` entries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowState {
    /// False once done or cancelled.
    pub active: bool,
    /// The top-level workflow.
    pub workflow_key: String,
    /// Top-level segment first, innermost last.
    pub current_path: Vec<PathSegment>,
    /// `next` and `loop` calls so far.
    pub global_step_count: u64,
    /// `wf-<ms>-<base36>`.
    #[serde(default)]
    pub task_id: String,
    /// What the user asked for.
    #[serde(default)]
    pub task_description: String,
    /// Start, in ms since the epoch.
    pub started_at: i64,
    /// Whether the completion message was sent.
    #[serde(default)]
    pub completion_notified: bool,
    /// Whether it ended by cancellation.
    #[serde(default)]
    pub cancelled: bool,
    /// A first `cancel` waits for a second; in memory only, cleared by any other action.
    #[serde(skip)]
    pub cancel_pending: bool,
}

/// One breadcrumb per path segment.
#[derive(Debug, Clone, PartialEq)]
pub struct Crumb {
    /// The segment's workflow key.
    pub workflow_key: String,
    /// The segment's workflow name.
    pub name: String,
}

/// The resolved view of an active state.
#[derive(Debug, Clone)]
pub struct Active<'a> {
    /// The top-level definition.
    pub definition: &'a WorkflowDefinition,
    /// The innermost scope's definition.
    pub scope: &'a WorkflowDefinition,
    /// The state.
    pub state: &'a WorkflowState,
    /// The current concrete phase (drilled through an un-entered subworkflow).
    pub phase: &'a PhaseDefinition,
    /// The raw entry at the innermost segment.
    pub entry: &'a PhaseEntry,
    /// One per segment.
    pub breadcrumb: Vec<Crumb>,
}

impl Active<'_> {
    /// The innermost segment.
    pub fn innermost(&self) -> &PathSegment {
        self.state
            .current_path
            .last()
            .expect("resolved paths are never empty")
    }

    /// Breadcrumb names joined by ` > `.
    pub fn breadcrumb_path(&self) -> String {
        self.breadcrumb
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" > ")
    }
}

/// A fresh state for `key`, auto-entering leading subworkflows.
pub fn initial_state(
    defs: &Definitions,
    key: &str,
    description: &str,
    now_ms: i64,
    task_id: String,
) -> WorkflowState {
    let mut state = WorkflowState {
        active: true,
        workflow_key: key.to_owned(),
        current_path: vec![PathSegment {
            workflow_key: key.to_owned(),
            phase_index: 0,
        }],
        global_step_count: 0,
        task_id,
        task_description: description.to_owned(),
        started_at: now_ms,
        completion_notified: false,
        cancelled: false,
        cancel_pending: false,
    };
    auto_enter(defs, &mut state);
    state
}

/// `wf-<ms>-<up to 6 base36 chars>` from the time and a seed.
pub fn task_id(now_ms: i64, seed: u64) -> String {
    let mut n = seed % 36u64.pow(6);
    let mut tail = String::new();
    loop {
        let d = (n % 36) as u32;
        tail.insert(0, char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    format!("wf-{now_ms}-{tail}")
}

/// Resolves the active view; `None` when inactive or the path does not resolve.
pub fn resolve<'a>(state: &'a WorkflowState, defs: &'a Definitions) -> Option<Active<'a>> {
    if !state.active || state.current_path.is_empty() {
        return None;
    }
    let definition = defs.get(&state.current_path[0].workflow_key)?;
    let mut breadcrumb = Vec::new();
    for seg in &state.current_path {
        let def = defs.get(&seg.workflow_key)?;
        breadcrumb.push(Crumb {
            workflow_key: seg.workflow_key.clone(),
            name: def.name.clone(),
        });
    }
    let last = state.current_path.last()?;
    let scope = defs.get(&last.workflow_key)?;
    let entry = scope.phases.get(last.phase_index)?;
    let phase = defs.first_phase(entry)?;
    Some(Active {
        definition,
        scope,
        state,
        phase,
        entry,
        breadcrumb,
    })
}

/// Pushes segments while the innermost entry is a subworkflow reference.
fn auto_enter(defs: &Definitions, state: &mut WorkflowState) {
    for _ in 0..=defs.iter().count() {
        let Some(last) = state.current_path.last() else {
            return;
        };
        let entry = defs
            .get(&last.workflow_key)
            .and_then(|d| d.phases.get(last.phase_index));
        match entry {
            Some(PhaseEntry::Subworkflow(key)) if defs.contains(key) => {
                state.current_path.push(PathSegment {
                    workflow_key: key.clone(),
                    phase_index: 0,
                })
            }
            _ => return,
        }
    }
}

/// The outcome of `next`.
#[derive(Debug, Clone, PartialEq)]
pub enum Advance {
    /// Moved to another phase.
    Moved {
        /// The phase left.
        from: String,
        /// The new state.
        state: WorkflowState,
    },
    /// The last phase was finished: the state is inactive, not yet notified.
    Done {
        /// The phase left.
        from: String,
        /// The new state.
        state: WorkflowState,
    },
}

/// `next`: advance within the scope, leave finished subworkflows, enter subworkflows, or
/// complete. Errors name what is missing.
///
/// As the original's `advancePhase`: a state whose innermost entry is a subworkflow not
/// entered yet (the original's `loop` writes such states) enters it, one level; leaving a
/// subworkflow moves its parent on, so a workflow finished from inside a subworkflow is
/// stored with the root index past its last phase (`[{key, phases.len()}]`), while one
/// finished on a top-level phase keeps its path.
pub fn advance(state: &WorkflowState, defs: &Definitions) -> Result<Advance, String> {
    let active = resolve(state, defs)
        .ok_or_else(|| format!("Workflow definition '{}' not found.", state.workflow_key))?;
    let from = active.phase.name.clone();
    let mut new = state.clone();
    new.cancel_pending = false;
    new.global_step_count += 1;
    if let PhaseEntry::Subworkflow(key) = active.entry {
        new.current_path.push(PathSegment {
            workflow_key: key.clone(),
            phase_index: 0,
        });
        if resolve(&new, defs).is_none() {
            return Err("Error: could not resolve active workflow after advance.".into());
        }
        return Ok(Advance::Moved { from, state: new });
    }
    // Walk up while the innermost scope is finished.
    let mut left_a_scope = false;
    loop {
        let depth = new.current_path.len();
        let last = new.current_path.last_mut().expect("non-empty path");
        let scope = defs
            .get(&last.workflow_key)
            .ok_or_else(|| format!("Workflow definition '{}' not found.", last.workflow_key))?;
        if last.phase_index + 1 < scope.phases.len() {
            last.phase_index += 1;
            break;
        }
        if depth == 1 {
            if left_a_scope {
                last.phase_index += 1;
            }
            new.active = false;
            new.completion_notified = false;
            return Ok(Advance::Done { from, state: new });
        }
        new.current_path.pop();
        left_a_scope = true;
    }
    auto_enter(defs, &mut new);
    if resolve(&new, defs).is_none() {
        return Err("Error: could not resolve active workflow after advance.".into());
    }
    Ok(Advance::Moved { from, state: new })
}

/// `loop`: back to the first phase of the innermost scope (entering a leading subworkflow).
pub fn loop_scope(state: &WorkflowState, defs: &Definitions) -> Result<WorkflowState, String> {
    let last = state
        .current_path
        .last()
        .ok_or_else(|| "Error: could not resolve active workflow after loop.".to_string())?;
    let scope = defs
        .get(&last.workflow_key)
        .ok_or_else(|| format!("Workflow definition '{}' not found.", last.workflow_key))?;
    if !scope.is_loopable() {
        return Err("Looping is disabled for this workflow.".into());
    }
    let mut new = state.clone();
    new.cancel_pending = false;
    new.global_step_count += 1;
    if let Some(last) = new.current_path.last_mut() {
        last.phase_index = 0;
    }
    auto_enter(defs, &mut new);
    Ok(new)
}

/// The cancelled, inactive copy of `state`.
pub fn cancelled(state: &WorkflowState) -> WorkflowState {
    WorkflowState {
        active: false,
        cancelled: true,
        completion_notified: false,
        cancel_pending: false,
        ..state.clone()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::definitions::{PhaseDefinition, PhaseEntry, WorkflowDefinition};

    pub(crate) fn phase(id: &str, emoji: &str) -> PhaseEntry {
        PhaseEntry::Phase(PhaseDefinition {
            id: id.into(),
            name: id.into(),
            emoji: emoji.into(),
            instructions: format!("Do {id}."),
            ..Default::default()
        })
    }

    pub(crate) fn wf(name: &str, phases: Vec<PhaseEntry>) -> WorkflowDefinition {
        WorkflowDefinition {
            name: name.into(),
            command_name: name.to_lowercase().replace(' ', "-"),
            initial_message: "Start {description}".into(),
            phases,
            ..Default::default()
        }
    }

    /// top: Plan, {sub: review}, Verify; review: {sub: inner}, Fix; inner: Read, Note.
    pub(crate) fn nested() -> Definitions {
        Definitions::from_entries(vec![
            (
                "top".into(),
                wf(
                    "Top",
                    vec![
                        phase("Plan", "📋"),
                        PhaseEntry::Subworkflow("review".into()),
                        phase("Verify", "✅"),
                    ],
                ),
            ),
            (
                "review".into(),
                wf(
                    "Review",
                    vec![PhaseEntry::Subworkflow("inner".into()), phase("Fix", "🔧")],
                ),
            ),
            (
                "inner".into(),
                wf("Inner", vec![phase("Read", "📖"), phase("Note", "📝")]),
            ),
        ])
    }

    fn path(state: &WorkflowState) -> Vec<(String, usize)> {
        state
            .current_path
            .iter()
            .map(|s| (s.workflow_key.clone(), s.phase_index))
            .collect()
    }

    fn moved(a: Advance) -> (String, WorkflowState) {
        match a {
            Advance::Moved { from, state } => (from, state),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn next_enters_and_leaves_nested_subworkflows_and_completes() {
        let defs = nested();
        let s = initial_state(&defs, "top", "task", 1, "id".into());
        assert_eq!(path(&s), [("top".into(), 0)]);
        let (from, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(from, "Plan");
        assert_eq!(
            path(&s),
            [("top".into(), 1), ("review".into(), 0), ("inner".into(), 0)]
        );
        assert_eq!(resolve(&s, &defs).unwrap().phase.name, "Read");
        let (_, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(resolve(&s, &defs).unwrap().phase.name, "Note");
        let (from, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(from, "Note");
        assert_eq!(path(&s), [("top".into(), 1), ("review".into(), 1)]);
        let (_, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(path(&s), [("top".into(), 2)]);
        assert_eq!(s.global_step_count, 4);
        match advance(&s, &defs).unwrap() {
            Advance::Done { from, state } => {
                assert_eq!(from, "Verify");
                assert!(!state.active && !state.completion_notified);
                assert_eq!(state.global_step_count, 5);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn start_auto_enters_and_loop_restarts_the_scope() {
        let defs = nested();
        let s = initial_state(&defs, "review", "t", 1, "id".into());
        assert_eq!(path(&s), [("review".into(), 0), ("inner".into(), 0)]);
        assert_eq!(s.global_step_count, 0);
        let (_, s) = moved(advance(&s, &defs).unwrap());
        let (_, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(path(&s), [("review".into(), 1)]);
        let looped = loop_scope(&s, &defs).unwrap();
        assert_eq!(path(&looped), [("review".into(), 0), ("inner".into(), 0)]);
        assert_eq!(looped.global_step_count, 3);
        let mut defs2 = nested();
        defs2 = Definitions::from_entries(
            defs2
                .iter()
                .map(|(k, d)| {
                    let mut d = d.clone();
                    d.loopable = Some(false);
                    (k.to_owned(), d)
                })
                .collect(),
        );
        assert_eq!(
            loop_scope(&s, &defs2).unwrap_err(),
            "Looping is disabled for this workflow."
        );
    }

    #[test]
    fn missing_definitions_are_errors_not_completion() {
        let defs = nested();
        let s = initial_state(&defs, "top", "t", 1, "id".into());
        let empty = Definitions::default();
        assert_eq!(
            advance(&s, &empty).unwrap_err(),
            "Workflow definition 'top' not found."
        );
        assert!(resolve(&s, &empty).is_none());
        let c = cancelled(&s);
        assert!(!c.active && c.cancelled && !c.completion_notified);
    }

    #[test]
    fn finishing_inside_a_last_subworkflow_stores_the_root_index_past_its_end() {
        // The original's breakout: the parent moves on; past its end with one segment left,
        // the workflow is done with the index past the end ([{psl, 2}] for two phases).
        let defs = Definitions::from_entries(vec![
            (
                "psl".into(),
                wf(
                    "Parent",
                    vec![phase("P1", "1️⃣"), PhaseEntry::Subworkflow("sub".into())],
                ),
            ),
            ("sub".into(), wf("Sub", vec![phase("S1", "🅰️")])),
        ]);
        let s = initial_state(&defs, "psl", "t", 1, "id".into());
        let (_, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(path(&s), [("psl".into(), 1), ("sub".into(), 0)]);
        match advance(&s, &defs).unwrap() {
            Advance::Done { from, state } => {
                assert_eq!(from, "S1");
                assert_eq!(path(&state), [("psl".into(), 2)]);
                assert_eq!(state.global_step_count, 2);
            }
            other => panic!("{other:?}"),
        }
        // A workflow finished on a top-level phase keeps its path.
        let s = initial_state(&defs, "sub", "t", 1, "id".into());
        match advance(&s, &defs).unwrap() {
            Advance::Done { state, .. } => assert_eq!(path(&state), [("sub".into(), 0)]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn next_enters_a_subworkflow_reference_not_entered_yet() {
        // The original's `loop` leaves [{top, 1}] pointing at {subworkflow: review}.
        let defs = nested();
        let mut s = initial_state(&defs, "top", "t", 1, "id".into());
        s.current_path[0].phase_index = 1;
        assert_eq!(resolve(&s, &defs).unwrap().phase.name, "Read");
        let (from, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(from, "Read");
        // One level, as the original: review's own leading reference stays un-entered.
        assert_eq!(path(&s), [("top".into(), 1), ("review".into(), 0)]);
        assert_eq!(resolve(&s, &defs).unwrap().phase.name, "Read");
        let (_, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!(
            path(&s),
            [("top".into(), 1), ("review".into(), 0), ("inner".into(), 0)]
        );
        let (from, s) = moved(advance(&s, &defs).unwrap());
        assert_eq!((from.as_str(), s.global_step_count), ("Read", 3));
        assert_eq!(resolve(&s, &defs).unwrap().phase.name, "Note");
    }

    #[test]
    fn task_ids() {
        assert_eq!(task_id(5, 0), "wf-5-0");
        assert_eq!(task_id(5, 35), "wf-5-z");
        assert_eq!(task_id(5, 36u64.pow(6) + 37), "wf-5-11");
    }
}
