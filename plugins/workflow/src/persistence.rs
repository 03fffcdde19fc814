//! Persistence: the `workflow:state` custom entry and the state rebuilt from the session's
//! branch (the newest such entry with a `workflowKey` decides).

use serde_json::Value;

use crate::state::{PathSegment, WorkflowState};

/// The custom type of the state entries.
pub const ENTRY_TYPE: &str = "workflow:state";

/// The newest `workflow:state` entry of `branch` (oldest first) with a `workflowKey`, as a
/// state; `None` when there is none or it is malformed (with a warning).
pub fn reconstruct(branch: &Value) -> (Option<WorkflowState>, Option<String>) {
    let Some(entries) = branch.as_array() else {
        return (None, None);
    };
    for entry in entries.iter().rev() {
        if entry.get("type").and_then(Value::as_str) != Some("custom")
            || entry.get("customType").and_then(Value::as_str) != Some(ENTRY_TYPE)
        {
            continue;
        }
        let data = entry.get("data").cloned().unwrap_or(Value::Null);
        if data.get("workflowKey").is_none_or(Value::is_null) {
            continue;
        }
        return migrate_and_check(data);
    }
    (None, None)
}

/// Old entries (`currentPhaseIndex`, no `globalStepCount`) are migrated, then checked.
fn migrate_and_check(mut data: Value) -> (Option<WorkflowState>, Option<String>) {
    let Some(map) = data.as_object_mut() else {
        return (None, None);
    };
    if map.contains_key("currentPhaseIndex") && !map.contains_key("currentPath") {
        let index = map.remove("currentPhaseIndex").unwrap_or(Value::Null);
        let key = map.get("workflowKey").cloned().unwrap_or(Value::Null);
        map.insert(
            "currentPath".into(),
            serde_json::json!([{"workflowKey": key, "phaseIndex": index}]),
        );
    }
    if map.contains_key("currentPath") && !map.contains_key("globalStepCount") {
        let first = map
            .get("currentPath")
            .and_then(|p| p.get(0))
            .and_then(|s| s.get("phaseIndex"))
            .cloned()
            .unwrap_or(Value::from(0));
        map.insert("globalStepCount".into(), first);
    }
    match map.get("currentPath").and_then(Value::as_array) {
        Some(path) if !path.is_empty() => {
            if serde_json::from_value::<Vec<PathSegment>>(Value::Array(path.clone())).is_err() {
                return (
                    None,
                    Some(
                        "[pi-workflows] Invalid persisted state: malformed path segment. Discarding."
                            .into(),
                    ),
                );
            }
        }
        _ => {
            return (
                None,
                Some(
                    "[pi-workflows] Invalid persisted state: empty currentPath. Discarding.".into(),
                ),
            );
        }
    }
    (serde_json::from_value(data).ok(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_and_newest_wins() {
        let state = WorkflowState {
            active: true,
            workflow_key: "top".into(),
            current_path: vec![
                PathSegment {
                    workflow_key: "top".into(),
                    phase_index: 1,
                },
                PathSegment {
                    workflow_key: "review".into(),
                    phase_index: 0,
                },
            ],
            global_step_count: 1,
            task_id: "wf-1-a".into(),
            task_description: "d".into(),
            started_at: 1,
            completion_notified: false,
            cancelled: false,
            cancel_pending: true,
        };
        let data = serde_json::to_value(&state).unwrap();
        assert_eq!(
            data,
            json!({"active": true, "workflowKey": "top", "currentPath": [
                {"workflowKey": "top", "phaseIndex": 1}, {"workflowKey": "review", "phaseIndex": 0}],
                "globalStepCount": 1, "taskId": "wf-1-a", "taskDescription": "d", "startedAt": 1,
                "completionNotified": false, "cancelled": false})
        );
        let branch = json!([
            {"type": "custom", "customType": ENTRY_TYPE, "data": {"workflowKey": "old", "active": true,
             "currentPath": [{"workflowKey": "old", "phaseIndex": 0}], "globalStepCount": 0, "startedAt": 0}},
            {"type": "custom", "customType": ENTRY_TYPE, "data": data},
            {"type": "custom", "customType": ENTRY_TYPE, "data": {"nothing": 1}},
            {"type": "message", "message": {}}
        ]);
        let (back, warning) = reconstruct(&branch);
        assert_eq!(warning, None);
        let mut expected = state;
        expected.cancel_pending = false;
        assert_eq!(back.unwrap(), expected);
    }

    #[test]
    fn migration_and_rejection() {
        let old = json!([{"type": "custom", "customType": ENTRY_TYPE, "data": {
            "active": true, "workflowKey": "w", "currentPhaseIndex": 2, "startedAt": 5}}]);
        let (state, _) = reconstruct(&old);
        let state = state.unwrap();
        assert_eq!(
            state.current_path,
            [PathSegment {
                workflow_key: "w".into(),
                phase_index: 2
            }]
        );
        assert_eq!(state.global_step_count, 2);
        let empty = json!([{"type": "custom", "customType": ENTRY_TYPE, "data": {
            "active": true, "workflowKey": "w", "currentPath": [], "startedAt": 5}}]);
        assert_eq!(
            reconstruct(&empty).1.unwrap(),
            "[pi-workflows] Invalid persisted state: empty currentPath. Discarding."
        );
        let bad = json!([{"type": "custom", "customType": ENTRY_TYPE, "data": {
            "active": true, "workflowKey": "w", "currentPath": [{"workflowKey": 3}], "startedAt": 5}}]);
        assert!(reconstruct(&bad).0.is_none());
    }
}
