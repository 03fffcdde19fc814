//! How one line of a session file is written: the keys of each entry type in the order pi's
//! object literals give them (`JSON.stringify` keeps insertion order), whatever order the map
//! holding the entry has in memory.
//!
//! pi builds most entries as `{type, id, parentId, timestamp, ...fields}`, but `custom` and
//! `custom_message` as `{type, customType, ..., id, parentId, timestamp}`; the header is
//! `{type, version, id, timestamp, cwd, parentSession?}`. Keys pi does not know come last, in
//! map order. Values inside an entry (a message, `data`, `details`) are written as the caller's
//! [`serde_json::Value`] holds them.

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

/// The header's `type`.
pub const HEADER_TYPE: &str = "session";
/// The session format this host writes (pi's `CURRENT_SESSION_VERSION`).
pub const CURRENT_VERSION: u64 = 3;

/// The deepest a line may nest arrays and objects, the entry's own object counting as 1:
/// serde_json's reader refuses a 128th level (its recursion limit, which keeps a hostile file
/// from overflowing the stack), so this is what reading accepts, and appending refuses anything
/// deeper ([`SessionError::TooDeep`](super::SessionError::TooDeep)) instead of writing a line no
/// one could read back. A plugin's `data` may thus nest 126 levels in a `custom` entry.
pub const MAX_DEPTH: usize = 127;

/// The keys of an entry of type `entry_type`, in the order pi writes them.
pub fn key_order(entry_type: &str) -> &'static [&'static str] {
    macro_rules! base_then {
        ($($key:literal),*) => {
            &["type", "id", "parentId", "timestamp", $($key),*]
        };
    }
    match entry_type {
        HEADER_TYPE => &["type", "version", "id", "timestamp", "cwd", "parentSession"],
        "custom" => &["type", "customType", "data", "id", "parentId", "timestamp"],
        "custom_message" => &[
            "type",
            "customType",
            "content",
            "display",
            "details",
            "id",
            "parentId",
            "timestamp",
        ],
        "message" => base_then!("message"),
        "thinking_level_change" => base_then!("thinkingLevel"),
        "model_change" => base_then!("provider", "modelId"),
        "compaction" => base_then!(
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "fromHook"
        ),
        "branch_summary" => base_then!("fromId", "summary", "details", "fromHook"),
        "label" => base_then!("targetId", "label"),
        "session_info" => base_then!("name"),
        _ => base_then!(),
    }
}

/// One entry (or the header) as one JSON line, without the line feed.
pub fn to_line(entry: &Map<String, Value>) -> String {
    serde_json::to_string(&InPiOrder(entry)).expect("a JSON object with string keys serializes")
}

/// How deep arrays and objects nest in `value` (0 for a scalar, 1 for `{}` or `[1]`), counted
/// with a loop rather than recursion, so that measuring cannot overflow the stack.
pub fn nesting_depth(value: &Value) -> usize {
    let mut deepest = 0;
    let mut pending = vec![(value, 1)];
    while let Some((value, depth)) = pending.pop() {
        match value {
            Value::Array(items) => {
                deepest = deepest.max(depth);
                pending.extend(items.iter().map(|item| (item, depth + 1)));
            }
            Value::Object(fields) => {
                deepest = deepest.max(depth);
                pending.extend(fields.values().map(|field| (field, depth + 1)));
            }
            _ => {}
        }
    }
    deepest
}

struct InPiOrder<'a>(&'a Map<String, Value>);

impl Serialize for InPiOrder<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let entry_type = self.0.get("type").and_then(Value::as_str).unwrap_or("");
        let order = key_order(entry_type);
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for key in order {
            if let Some(value) = self.0.get(*key) {
                map.serialize_entry(key, value)?;
            }
        }
        for (key, value) in self.0 {
            if !order.contains(&key.as_str()) {
                map.serialize_entry(key, value)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(value: Value) -> String {
        to_line(value.as_object().unwrap())
    }

    fn nested(depth: usize) -> Value {
        (0..depth).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn max_depth_is_what_serde_json_reads() {
        // An entry object around `depth - 1` levels of arrays nests `depth` levels.
        let line = |depth: usize| line(json!({"type": "custom", "data": nested(depth - 1)}));
        let at_limit = line(MAX_DEPTH);
        let parsed: Value = serde_json::from_str(&at_limit).expect("the limit itself reads");
        assert_eq!(nesting_depth(&parsed), MAX_DEPTH);
        let error = serde_json::from_str::<Value>(&line(MAX_DEPTH + 1)).unwrap_err();
        assert!(error.to_string().contains("recursion limit"), "{error}");
    }

    #[test]
    fn nesting_depth_counts_containers() {
        assert_eq!(nesting_depth(&json!(1)), 0);
        assert_eq!(nesting_depth(&json!([])), 1);
        assert_eq!(nesting_depth(&json!({"a": [1, {"b": []}], "c": 2})), 4);
        assert_eq!(nesting_depth(&nested(1000)), 1000);
    }

    #[test]
    fn writes_keys_in_pi_order() {
        let custom = json!({"timestamp": "t", "parentId": null, "id": "a", "data": {"k": 1},
            "customType": "x", "type": "custom"});
        assert_eq!(
            line(custom),
            r#"{"type":"custom","customType":"x","data":{"k":1},"id":"a","parentId":null,"timestamp":"t"}"#
        );
        let message = json!({"message": {"role": "user"}, "timestamp": "t", "parentId": "p",
            "id": "a", "type": "message"});
        assert_eq!(
            line(message),
            r#"{"type":"message","id":"a","parentId":"p","timestamp":"t","message":{"role":"user"}}"#
        );
        let header =
            json!({"cwd": "/w", "timestamp": "t", "id": "u", "version": 3, "type": "session"});
        assert_eq!(
            line(header),
            r#"{"type":"session","version":3,"id":"u","timestamp":"t","cwd":"/w"}"#
        );
        let unknown = json!({"zeta": 1, "alpha": 2, "timestamp": "t", "parentId": null, "id": "a",
            "type": "future_kind"});
        assert_eq!(
            line(unknown),
            r#"{"type":"future_kind","id":"a","parentId":null,"timestamp":"t","zeta":1,"alpha":2}"#
        );
    }
}
