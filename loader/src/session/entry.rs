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
