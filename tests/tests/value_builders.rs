//! The ABI 1.2 value builders and the ABI 1.3 `replace_text` from C, through the real host
//! (`tests/fixtures/value_builders.c` in a `pi-hooks run --mode json` session): owned objects
//! and arrays built, nested and given whole to a result (`set_from_value`), a borrowed payload
//! copied and changed, `json_quote`, a plain-string `input` result made from a value, a
//! payload string rewritten by `replace_text` and an invalid pattern reported on stderr, and
//! every wrong use refused with its status (a borrowed target or item, NULL, an item given
//! twice, an array pushed into itself, `set` on an array) without a crash and without touching
//! the payload.

use std::time::Duration;

use pi_hooks_tests::{Sandbox, c_fixture, json_lines, output_within};
use serde_json::json;

#[test]
fn c_builds_values_copies_payloads_and_wrong_uses_get_a_status() {
    let s = Sandbox::new();
    let plugin = c_fixture(&s.lib(), "value_builders", &[]);
    let params = json!({"keep": {"a": [1, 2], "b": "x"}, "other": 1});
    let script = s.script(&json!({"turns": [
        {"toolCalls": [{"name": "build", "arguments": params}]},
        {"text": "done"}
    ]}));
    let mut command = s.command(&["run", "--mode", "json", "--no-session", "--script"]);
    command
        .arg(&script)
        .arg("--hook")
        .arg(&plugin)
        .arg("plain: please");
    let output = output_within(command, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(!stderr.contains("rror"), "{stderr}");
    let events = json_lines(&output);
    let user = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .expect("the user message");
    assert_eq!(
        user["message"]["content"],
        json!([{"type": "text", "text": "transformed plainly"}]),
        "a plain string made with new_string and given with set_from_value transforms input"
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("tool_execution_end");
    assert_eq!(end["isError"], false, "{end}");
    let quoted = r#""say \"hi\"\n\tand \\ \u001b""#;
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": quoted}])
    );
    assert_eq!(
        end["result"]["details"],
        json!({
            "params": {"keep": {"a": [1, 2, 3], "b": "x"}, "other": 1, "added": 0.5},
            "statuses": {
                "pushBorrowedTarget": 2,
                "pushBorrowedItem": 2,
                "pushNull": 2,
                "pushOk": 0,
                "pushGivenTwice": 2,
                "pushIntoItself": 2,
                "setOnArray": 4,
                "newStringNotUtf8": true
            },
            "array": [true],
            "quoteSize": quoted.len(),
            "tooSmall": quoted.len(),
            "smallUntouched": true,
            "replaced": "<xx>",
            "replacedCount": 1,
            "invalidIsNull": true
        })
    );
    assert!(
        stderr.contains(
            "[pi-hooks] replace_text: invalid pattern \"[unclosed\": unclosed character class"
        ),
        "an invalid pattern is reported with the reason: {stderr}"
    );
    // The payload the tool saw is unchanged: the model's arguments are as it sent them.
    let start = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start")
        .expect("tool_execution_start");
    assert_eq!(start["args"], params);
}
