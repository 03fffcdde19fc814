//! The built-in `edit` tool against pi 1.6.0's own (issue 34 item 12): the same calls made by a
//! scripted model through the real `pi-hooks run --mode json`, and given to pi's edit tool
//! (`dist/core/tools/edit.js`, with pi-ai's `validateToolArguments`) run by pi's node. For each
//! call the result text, `isError`, `details` (`diff`, `patch`, `firstChangedLine`), the file
//! written and the input a `tool_call` handler sees must be pi's. The schema and description
//! the model gets must be pi's too.

use pi_hooks_tests::{
    Sandbox, behave_command, json_lines_with_stdin, json_output, json_script_args, offered_tools,
    read_behave_log, tool_result_message,
};
use serde_json::{Value, json};

/// One edit call: the file's content before, and the model's arguments (`path` is filled in).
struct Case {
    content: &'static str,
    args: Value,
}

fn cases() -> Vec<Case> {
    let forty: &'static str = Box::leak(
        (1..=40)
            .map(|i| format!("l{i}\n"))
            .collect::<String>()
            .into_boxed_str(),
    );
    let case = |content, args| Case { content, args };
    vec![
        // The legacy shape, converted as pi converts it.
        case("a\nb\nc\n", json!({"oldText": "b", "newText": "B"})),
        // Two edits, given out of order: matched against the original.
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "c", "newText": "C"}, {"oldText": "a", "newText": "A"}]}),
        ),
        // Both shapes at once: the legacy edit is appended.
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "c", "newText": "C"}], "oldText": "a", "newText": "A"}),
        ),
        // `edits` as a JSON string, and as a single object.
        case(
            "a\nb\nc\n",
            json!({"edits": "[{\"oldText\":\"a\",\"newText\":\"Q\"}]"}),
        ),
        case(
            "a\nb\nc\n",
            json!({"edits": {"oldText": "b", "newText": "Q"}}),
        ),
        // Overlapping, missing, duplicated, empty, unchanged.
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "a\nb", "newText": "X"}, {"oldText": "b\nc", "newText": "Y"}]}),
        ),
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "a", "newText": "A"}, {"oldText": "zz", "newText": "Y"}]}),
        ),
        case(
            "a\na\nc\n",
            json!({"edits": [{"oldText": "c", "newText": "C"}, {"oldText": "a", "newText": "Y"}]}),
        ),
        case(
            "x = 1\nx = 1\n",
            json!({"oldText": "x = 1", "newText": "x = 2"}),
        ),
        case("a\nb\nc\n", json!({"oldText": "nope", "newText": "x"})),
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "", "newText": "x"}, {"oldText": "a", "newText": "x"}]}),
        ),
        case("a\nb\nc\n", json!({"edits": []})),
        case(
            "a\nb\nc\n",
            json!({"edits": [{"oldText": "a", "newText": "a"}, {"oldText": "b", "newText": "b"}]}),
        ),
        // Invalid input: pi-schema's words.
        case("a\nb\nc\n", json!({"edits": [{"oldText": "c"}]})),
        case("a\nb\nc\n", json!({})),
        // Line endings, a BOM, fuzzy matching, far-apart edits, no final newline.
        case(
            "x1\r\nx2\r\nx3\r\n",
            json!({"edits": [{"oldText": "x2\nx3", "newText": "y2\ny3\ny4"}]}),
        ),
        case(
            "\u{FEFF}one\r\ntwo\nthree\r\n",
            json!({"edits": [{"oldText": "two\nthree", "newText": "2\n3"}]}),
        ),
        case(
            "say \u{201C}hi\u{201D}   \nnext\nkeep  \n",
            json!({"edits": [{"oldText": "say \"hi\"\nnext", "newText": "say bye\nnext"}]}),
        ),
        case(
            forty,
            json!({"edits": [
                {"oldText": "l3\n", "newText": "three\n"},
                {"oldText": "l20\n", "newText": "twenty\n"},
                {"oldText": "l30", "newText": "thirty"}
            ]}),
        ),
        case(
            "no newline",
            json!({"edits": [{"oldText": "newline", "newText": "nl"}]}),
        ),
    ]
}

/// What pi 1.6.0's edit tool does with each case: `{input, text, isError, details, file}`, and
/// the tool's `{description, parameters}` first.
fn pi_results(cases: &[Case]) -> (Value, Vec<Value>) {
    let pi = pi_hooks_tests::tools::pi16();
    let dist = pi.cli.parent().expect("pi's dist folder").to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("edit.mjs");
    std::fs::write(
        &script,
        format!(
            r#"
import {{ createEditToolDefinition }} from "{dist}/core/tools/edit.js";
import {{ validateToolArguments }} from "{ai}";
import fs from "node:fs";
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const dir = process.argv[2];
const def = createEditToolDefinition(dir);
console.log(JSON.stringify({{description: def.description, parameters: def.parameters}}));
for (const [i, c] of cases.entries()) {{
  const file = `${{dir}}/c${{i}}.txt`;
  fs.writeFileSync(file, c.content);
  const out = {{}};
  try {{
    const prepared = def.prepareArguments(structuredClone(c.args));
    out.input = validateToolArguments(def, {{name: "edit", arguments: prepared}});
    const r = await def.execute("id", out.input, undefined, undefined, {{cwd: dir}});
    out.text = r.content[0].text; out.isError = false; out.details = r.details;
  }} catch (e) {{ out.text = e.message; out.isError = true; }}
  out.file = fs.readFileSync(file, "utf8");
  console.log(JSON.stringify(out));
}}
"#,
            dist = dist.display(),
            ai = dist.join("../../pi-ai/dist/utils/validation.js").display(),
        ),
    )
    .unwrap();
    let work = scratch.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let input: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"content": c.content, "args": with_path(&c.args, i)}))
        .collect();
    let mut lines = json_lines_with_stdin(
        std::process::Command::new(&pi.node).arg(&script).arg(&work),
        Value::Array(input).to_string().as_bytes(),
        "pi's edit tool",
    )
    .into_iter();
    let tool = lines.next().expect("pi's tool definition");
    (tool, lines.collect())
}

fn with_path(args: &Value, i: usize) -> Value {
    let mut args = args.clone();
    args.as_object_mut()
        .unwrap()
        .insert("path".into(), json!(format!("c{i}.txt")));
    args
}

#[test]
fn edit_calls_give_what_pi_1_6_gives() {
    let cases = cases();
    let (pi_tool, pi) = pi_results(&cases);
    assert_eq!(pi.len(), cases.len());

    let sandbox = Sandbox::new();
    for (i, case) in cases.iter().enumerate() {
        std::fs::write(sandbox.project().join(format!("c{i}.txt")), case.content).unwrap();
    }
    // One call a turn, so each sees the files as the cases left them.
    let mut turns: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"toolCalls": [{"id": format!("e{i}"), "name": "edit", "arguments": with_path(&c.args, i)}]})
        })
        .collect();
    turns.push(json!({"text": "done"}));
    let script = sandbox.script(&json!({ "turns": turns }));
    let watch = json!({"handlers": [
        {"event": "tool_call"},
        {"event": "tool_result"},
        {"event": "before_provider_request"}
    ]});
    let events = json_output(&mut behave_command(
        &sandbox,
        &[("watch", watch)],
        &json_script_args(&script),
    ));
    let log = read_behave_log(&sandbox.behave_log());

    // The schema and description the model sees.
    let tools = offered_tools(&log);
    let edit = tools.iter().find(|t| t["name"] == "edit").unwrap();
    assert_eq!(edit["parameters"], pi_tool["parameters"]);
    assert_eq!(edit["description"], pi_tool["description"]);

    for (i, (case, pi)) in cases.iter().zip(&pi).enumerate() {
        let id = format!("e{i}");
        let what = format!("case {i} {}", case.args);
        let message =
            tool_result_message(&events, &id).unwrap_or_else(|| panic!("{what}: no tool result"));
        assert_eq!(message["content"][0]["text"], pi["text"], "{what}");
        assert_eq!(message["isError"], pi["isError"], "{what}");
        if pi["isError"] == false {
            assert_eq!(message["details"], pi["details"], "{what}");
        }
        let file = std::fs::read_to_string(sandbox.project().join(format!("c{i}.txt"))).unwrap();
        assert_eq!(file, pi["file"].as_str().unwrap(), "{what}");

        // The input a plugin's tool_call handler sees (none when validation failed).
        let call = log
            .iter()
            .find(|l| l.tag == "tool_call" && l.value["toolCallId"] == id.as_str());
        match pi.get("input") {
            Some(input) => {
                let call = call.unwrap_or_else(|| panic!("{what}: no tool_call"));
                assert_eq!(&call.value["input"], input, "{what}");
                let seen = log
                    .iter()
                    .find(|l| l.tag == "tool_result" && l.value["toolCallId"] == id.as_str())
                    .unwrap_or_else(|| panic!("{what}: no tool_result"));
                assert_eq!(&seen.value["input"], input, "{what}");
            }
            None => assert!(call.is_none(), "{what}: invalid input reached tool_call"),
        }
        // tool_execution_start shows what the model sent.
        let start = events
            .iter()
            .find(|e| e["type"] == "tool_execution_start" && e["toolCallId"] == id.as_str())
            .unwrap();
        assert_eq!(start["args"], with_path(&case.args, i), "{what}");
    }
}

/// A plugin that blocks edits of `.env` reads `input.edits` whatever shape the model used.
#[test]
fn a_guard_sees_edits_for_the_legacy_shape() {
    let sandbox = Sandbox::new();
    std::fs::write(sandbox.project().join(".env"), "KEY=1\n").unwrap();
    let script = sandbox.script(&json!({"turns": [
        {"toolCalls": [{"id": "old", "name": "edit", "arguments": {"path": ".env", "oldText": "KEY=1", "newText": "KEY=2"}}]},
        {"text": "done"}
    ]}));
    let guard = json!({"handlers": [
        {"event": "tool_call", "if_contains": "\"edits\":[{\"oldText\":\"KEY=1\"", "result": {"block": true, "reason": "no .env edits"}}
    ]});
    let events = json_output(&mut behave_command(
        &sandbox,
        &[("guard", guard)],
        &json_script_args(&script),
    ));
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == "old")
        .unwrap();
    assert_eq!(
        end["result"]["content"][0]["text"], "no .env edits",
        "{end}"
    );
    assert_eq!(
        std::fs::read_to_string(sandbox.project().join(".env")).unwrap(),
        "KEY=1\n"
    );
}
