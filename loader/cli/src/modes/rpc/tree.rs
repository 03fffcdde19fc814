//! RPC `get_tree`: the session's entries as pi's `SessionManager.getTree()` gives them, a list
//! of root nodes `{entry, children, label?, labelTimestamp?}`. An entry whose `parentId` is
//! `null` (or itself) is a root, and so is an orphan whose parent is not in the file;
//! children are ordered by their timestamp, oldest first (an entry whose timestamp does not
//! parse sorts first). Entries in a `parentId` cycle are reachable from no root and left out,
//! as pi leaves them out. A label is the last `label` entry's for its target (an empty one
//! clears it), with that entry's timestamp.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The tree of `entries` (file order, the header excluded). Built without recursion: a
/// session's tree is a chain as deep as the session is long.
pub fn session_tree(entries: Vec<Value>) -> Value {
    let mut labels: HashMap<String, (Value, Value)> = HashMap::new();
    for entry in &entries {
        if entry["type"] != "label" {
            continue;
        }
        let Some(target) = entry["targetId"].as_str() else {
            continue;
        };
        match entry.get("label") {
            Some(label) if truthy(label) => {
                labels.insert(
                    target.to_owned(),
                    (label.clone(), entry["timestamp"].clone()),
                );
            }
            _ => {
                labels.remove(target);
            }
        }
    }
    let index: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .filter_map(|(at, e)| Some((e["id"].as_str()?, at)))
        .collect();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); entries.len()];
    let mut roots = Vec::new();
    for (at, entry) in entries.iter().enumerate() {
        let parent = entry["parentId"].as_str();
        match parent.filter(|p| Some(*p) != entry["id"].as_str()) {
            None => roots.push(at),
            Some(parent) => match index.get(parent) {
                Some(&p) => children[p].push(at),
                None => roots.push(at),
            },
        }
    }
    let millis = |at: &usize| {
        entries[*at]["timestamp"]
            .as_str()
            .and_then(pi_hooks_session::timestamp::parse_iso_millis)
    };
    for list in &mut children {
        list.sort_by_key(millis);
    }
    // Post-order without recursion: a node is built once all its children are.
    let mut entries: Vec<Option<Value>> = entries.into_iter().map(Some).collect();
    let mut built: Vec<Option<Value>> = vec![None; entries.len()];
    let mut stack: Vec<(usize, bool)> = roots.iter().rev().map(|&r| (r, false)).collect();
    while let Some((at, expanded)) = stack.pop() {
        if !expanded {
            stack.push((at, true));
            stack.extend(children[at].iter().rev().map(|&c| (c, false)));
            continue;
        }
        let kids: Vec<Value> = children[at]
            .iter()
            .filter_map(|&c| built[c].take())
            .collect();
        let entry = entries[at].take().unwrap_or(Value::Null);
        let mut node = Map::new();
        let label = entry["id"].as_str().and_then(|id| labels.remove(id));
        node.insert("entry".into(), entry);
        node.insert("children".into(), Value::Array(kids));
        if let Some((label, timestamp)) = label {
            node.insert("label".into(), label);
            node.insert("labelTimestamp".into(), timestamp);
        }
        built[at] = Some(Value::Object(node));
    }
    Value::Array(roots.iter().filter_map(|&r| built[r].take()).collect())
}

/// JavaScript's truthiness of a JSON value.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn roots_children_by_time_orphans_and_labels() {
        let entries = vec![
            json!({"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}),
            json!({"type":"message","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:03.000Z"}),
            json!({"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z"}),
            json!({"type":"message","id":"o","parentId":"gone","timestamp":"2026-01-01T00:00:04.000Z"}),
            json!({"type":"label","id":"l1","parentId":"c","targetId":"b","label":"first","timestamp":"2026-01-01T00:00:05.000Z"}),
            json!({"type":"label","id":"l2","parentId":"l1","targetId":"c","label":"x","timestamp":"2026-01-01T00:00:06.000Z"}),
            json!({"type":"label","id":"l3","parentId":"l2","targetId":"c","label":"","timestamp":"2026-01-01T00:00:07.000Z"}),
        ];
        let tree = session_tree(entries);
        let roots: Vec<&Value> = tree
            .as_array()
            .unwrap()
            .iter()
            .map(|n| &n["entry"]["id"])
            .collect();
        assert_eq!(roots, [&json!("a"), &json!("o")]);
        let kids: Vec<&Value> = tree[0]["children"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| &n["entry"]["id"])
            .collect();
        assert_eq!(kids, [&json!("b"), &json!("c")]);
        assert_eq!(tree[0]["children"][0]["label"], "first");
        assert_eq!(
            tree[0]["children"][0]["labelTimestamp"],
            "2026-01-01T00:00:05.000Z"
        );
        assert!(
            tree[0]["children"][1].get("label").is_none(),
            "an empty label clears"
        );
    }

    #[test]
    fn a_long_chain_builds_without_recursion() {
        let entries: Vec<Value> = (0..20_000)
            .map(|i| json!({"type":"message","id":format!("e{i}"),"parentId": if i == 0 { Value::Null } else { format!("e{}", i - 1).into() },"timestamp":"2026-01-01T00:00:00.000Z"}))
            .collect();
        let tree = session_tree(entries);
        let mut depth = 0;
        let mut node = &tree[0];
        while let Some(next) = node["children"].get(0) {
            node = next;
            depth += 1;
        }
        assert_eq!(depth, 19_999);
        // Dropping it is recursive: leak it here, as the mode writes it on a large stack.
        std::mem::forget(tree);
    }
}
