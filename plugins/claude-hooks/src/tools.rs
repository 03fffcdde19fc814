//! pi's tools as Claude Code names them, and their arguments in Claude Code's field names, so
//! a hook reading `.tool_input.file_path` or matching `Write|Edit` works unchanged. A field
//! without a Claude Code name keeps pi's; a plugin's tool keeps its name and its arguments.

use std::path::Path;

use serde_json::{Map, Value};

/// Claude Code's name for the pi tool `pi`.
pub fn claude_name(pi: &str) -> &str {
    match pi {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        other => other,
    }
}

/// Field renames `(pi, Claude Code)` of a built-in tool.
fn renames(pi_tool: &str) -> &'static [(&'static str, &'static str)] {
    match pi_tool {
        "read" | "write" => &[("path", "file_path")],
        "edit" => &[
            ("path", "file_path"),
            ("oldText", "old_string"),
            ("newText", "new_string"),
        ],
        "grep" => &[
            ("ignoreCase", "-i"),
            ("context", "-C"),
            ("limit", "head_limit"),
        ],
        _ => &[],
    }
}

/// Fields that hold a path, made absolute as Claude Code's are.
fn is_path(pi_tool: &str, pi_field: &str) -> bool {
    pi_field == "path" && matches!(pi_tool, "read" | "write" | "edit" | "ls")
}

/// pi's arguments `input` of the tool `pi_tool` as Claude Code's `tool_input` (`cwd` makes
/// paths absolute; `bash`'s `timeout` is seconds in pi and milliseconds in Claude Code;
/// `edit`'s `edits` become `{old_string, new_string}` items).
pub fn claude_input(pi_tool: &str, input: &Value, cwd: &Path) -> Value {
    let Some(fields) = input.as_object() else {
        return input.clone();
    };
    let table = renames(pi_tool);
    let mut out = Map::new();
    for (key, value) in fields {
        let name = table
            .iter()
            .find(|(pi, _)| pi == key)
            .map_or(key.as_str(), |(_, claude)| claude);
        let value = match (pi_tool, key.as_str()) {
            (_, field) if is_path(pi_tool, field) => match value.as_str() {
                Some(path) => Value::String(cwd.join(path).to_string_lossy().into_owned()),
                None => value.clone(),
            },
            ("bash", "timeout") => value
                .as_f64()
                .map_or_else(|| value.clone(), |secs| Value::from((secs * 1000.0) as u64)),
            ("edit", "edits") => {
                map_edits(value, ("oldText", "old_string"), ("newText", "new_string"))
            }
            _ => value.clone(),
        };
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

/// A hook's `updatedInput` (Claude Code's field names) back as pi's arguments of `pi_tool`.
pub fn pi_input(pi_tool: &str, updated: &Value) -> Value {
    let Some(fields) = updated.as_object() else {
        return updated.clone();
    };
    let table = renames(pi_tool);
    let mut out = Map::new();
    for (key, value) in fields {
        let name = table
            .iter()
            .find(|(_, claude)| claude == key)
            .map_or(key.as_str(), |(pi, _)| pi);
        let value = match (pi_tool, key.as_str()) {
            ("bash", "timeout") => value.as_f64().map_or_else(
                || value.clone(),
                |ms| Value::from((ms / 1000.0).ceil() as u64),
            ),
            ("edit", "edits") => {
                map_edits(value, ("old_string", "oldText"), ("new_string", "newText"))
            }
            _ => value.clone(),
        };
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

fn map_edits(edits: &Value, old: (&str, &str), new: (&str, &str)) -> Value {
    let Some(items) = edits.as_array() else {
        return edits.clone();
    };
    Value::Array(
        items
            .iter()
            .map(|item| match item.as_object() {
                Some(fields) => Value::Object(
                    fields
                        .iter()
                        .map(|(k, v)| {
                            let k = if k == old.0 {
                                old.1
                            } else if k == new.0 {
                                new.1
                            } else {
                                k.as_str()
                            };
                            (k.to_owned(), v.clone())
                        })
                        .collect(),
                ),
                None => item.clone(),
            })
            .collect(),
    )
}

/// Claude Code's `tool_response` for a pi tool result: pi's `{content, details, isError}`,
/// plus `success`, `filePath` (file tools) and `stdout` (bash: the text output, which in pi
/// holds stderr too).
pub fn claude_response(pi_tool: &str, tool_input: &Value, result: &Value) -> Value {
    let mut out = Map::new();
    for key in ["content", "details", "isError"] {
        if let Some(value) = result.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    out.insert("success".into(), Value::Bool(!is_error));
    if let Some(path) = tool_input.get("file_path") {
        out.insert("filePath".into(), path.clone());
    }
    if pi_tool == "bash" {
        out.insert("stdout".into(), Value::String(text_of(result)));
    }
    Value::Object(out)
}

/// The text blocks of a result's `content`, joined.
pub fn text_of(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_round_trip() {
        let cwd = Path::new("/work");
        let edit = json!({"path": "a.txt", "oldText": "x", "newText": "y"});
        let claude = claude_input("edit", &edit, cwd);
        assert_eq!(
            claude,
            json!({"file_path": "/work/a.txt", "old_string": "x", "new_string": "y"})
        );
        assert_eq!(
            pi_input("edit", &claude),
            json!({"path": "/work/a.txt", "oldText": "x", "newText": "y"})
        );
        let bash = claude_input("bash", &json!({"command": "ls", "timeout": 2}), cwd);
        assert_eq!(bash, json!({"command": "ls", "timeout": 2000}));
        assert_eq!(
            pi_input("bash", &json!({"command": "ls", "timeout": 1500})),
            json!({"command": "ls", "timeout": 2})
        );
        let edits = claude_input(
            "edit",
            &json!({"path": "/a", "edits": [{"oldText": "1", "newText": "2"}]}),
            cwd,
        );
        assert_eq!(
            edits["edits"],
            json!([{"old_string": "1", "new_string": "2"}])
        );
        assert_eq!(claude_name("find"), "Glob");
        assert_eq!(claude_name("my_tool"), "my_tool");
        assert_eq!(
            claude_input("my_tool", &json!({"path": "x"}), cwd),
            json!({"path": "x"})
        );
    }
}
