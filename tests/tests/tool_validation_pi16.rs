//! Tool argument validation against pi 1.6.0's own (issue 35, part "validate"): the same calls
//! given to pi-ai's `validateToolArguments` (pi-schema, with coercion) with pi 1.6's own tool
//! definitions (`createReadToolDefinition`, ...; `prepareArguments` first where a tool has one),
//! run by pi's node, and made by a scripted model through the real `pi-hooks run --mode json`.
//!
//! For every call: when pi rejects it, our result is pi's message word for word (every problem,
//! in pi-schema's words and order, then the arguments received) and no `tool_call` fires; when
//! pi accepts it, the `tool_call` handler sees pi's coerced arguments. The built-in calls that
//! pass are blocked by a guard, so nothing runs; the plugin tool `shape`
//! (`tests/fixtures/schema_tool.c`, with an integer/array/nested/enum/union schema) runs, and
//! the arguments it got must be pi's coerced ones too. The schemas the model sees must be pi's.

use pi_hooks_tests::{
    Sandbox, behave_command, c_fixture, json_lines, json_lines_with_stdin, json_output,
    json_script_args, offered_tools, read_behave_log, tool_result_message,
};
use serde_json::{Value, json};

const BUILTINS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// The plugin tool's schema: integer, number, arrays, a nested object, enum, const, a union, a
/// type array, and no additional properties.
fn shape_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "count", "items", "opts"],
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "count": {"type": "integer", "minimum": 0},
            "ratio": {"type": "number"},
            "items": {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
            "opts": {
                "type": "object",
                "required": ["deep"],
                "properties": {
                    "deep": {"type": "boolean"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "level": {"type": "integer"}
                }
            },
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "kind": {"const": "x"},
            "either": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]},
            "maybe": {"type": ["string", "null"]}
        },
        "additionalProperties": false
    })
}

/// `(tool, arguments)` for every call.
fn cases() -> Vec<(&'static str, Value)> {
    let mut cases = Vec::new();
    // What every tool gets: nothing, a non-object, an extra property, nulls.
    for tool in BUILTINS {
        cases.push((tool, json!({})));
        cases.push((tool, json!("text")));
        cases.push((tool, json!([1])));
        cases.push((tool, json!(null)));
        cases.push((tool, json!(7)));
        cases.push((tool, json!({"path": null, "zzz": 1})));
    }
    let more = [
        // read: numbers from strings, wrong types, nulls for optional properties.
        (
            "read",
            json!({"path": "a.txt", "offset": "2", "limit": "10"}),
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": "2.5", "limit": " 7 "}),
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": "abc", "limit": []}),
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": "", "limit": "1e3"}),
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": null, "limit": null}),
        ),
        (
            "read",
            json!({"path": "a.txt", "offset": true, "limit": "0x10"}),
        ),
        ("read", json!({"path": 12, "offset": {}, "limit": {"a": 1}})),
        ("read", json!({"path": ["a.txt"]})),
        ("read", json!({"path": true, "extra": {"deep": [1]}})),
        // bash
        ("bash", json!({"command": "ls", "timeout": "30"})),
        ("bash", json!({"command": ["ls", "-l"]})),
        ("bash", json!({"command": "ls", "timeout": "soon"})),
        ("bash", json!({"command": 42, "timeout": false})),
        ("bash", json!({"command": null})),
        ("bash", json!({"timeout": 5})),
        // edit: the legacy shape, single values, nested problems.
        ("edit", json!({"path": "f", "oldText": "a", "newText": "b"})),
        (
            "edit",
            json!({"path": "f", "edits": {"oldText": "a", "newText": "b"}}),
        ),
        ("edit", json!({"path": "f", "edits": "not json"})),
        (
            "edit",
            json!({"path": "f", "edits": [{"oldText": 1, "newText": null}]}),
        ),
        (
            "edit",
            json!({"path": "f", "edits": [{"oldText": "a"}, "x", 3, null]}),
        ),
        (
            "edit",
            json!({"path": "f", "edits": [{"oldText": [], "newText": {}}], "x": 1}),
        ),
        ("edit", json!({"path": {}, "edits": null})),
        ("edit", json!({"edits": []})),
        // write
        ("write", json!({"path": "w.txt", "content": 123})),
        ("write", json!({"path": "w.txt", "content": null})),
        ("write", json!({"path": "w.txt", "content": ["a", "b"]})),
        ("write", json!({"path": "w.txt", "content": {"text": "a"}})),
        ("write", json!({"content": "x"})),
        (
            "write",
            json!({"path": "w.txt", "content": false, "mode": "0644"}),
        ),
        // grep: booleans and numbers from strings.
        (
            "grep",
            json!({"pattern": "x", "ignoreCase": "true", "literal": "0", "context": "2", "limit": "5"}),
        ),
        (
            "grep",
            json!({"pattern": "x", "ignoreCase": "TRUE", "literal": "1"}),
        ),
        (
            "grep",
            json!({"pattern": "x", "ignoreCase": 1, "literal": 0}),
        ),
        (
            "grep",
            json!({"pattern": "x", "ignoreCase": "yes", "literal": 2}),
        ),
        (
            "grep",
            json!({"pattern": "x", "ignoreCase": null, "glob": null, "path": null}),
        ),
        (
            "grep",
            json!({"pattern": {}, "ignoreCase": "maybe", "context": [], "glob": 5}),
        ),
        (
            "grep",
            json!({"pattern": 5, "context": "1.5", "limit": "-3"}),
        ),
        // find
        ("find", json!({"pattern": "*.rs", "limit": "20"})),
        (
            "find",
            json!({"pattern": "*.rs", "limit": "twenty", "path": []}),
        ),
        ("find", json!({"pattern": ["*.rs"]})),
        ("find", json!({"limit": 3})),
        // ls
        ("ls", json!({"path": ".", "limit": "50"})),
        ("ls", json!({"path": 5, "limit": "false"})),
        ("ls", json!({"limit": {}})),
        ("ls", json!({"path": null, "limit": null})),
        // The plugin tool.
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [1], "opts": {"deep": true}}),
        ),
        (
            "shape",
            json!({"name": "a", "count": "3", "items": "4", "opts": {"deep": "false", "tags": "t"}}),
        ),
        (
            "shape",
            json!({"name": 5, "count": "3.9", "items": ["1", "x"], "opts": {}}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "ratio": null, "maybe": null, "mode": null}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true, "level": "2"}, "ratio": "0.25", "mode": "fast", "kind": "x"}),
        ),
        (
            "shape",
            json!({"name": "", "count": -1, "items": [1, 2, 3, 4], "opts": {"deep": 3}, "mode": "FAST", "kind": "y"}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "either": "5"}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "either": "abc"}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "either": {"a": 1}}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "maybe": 5, "zz": 1, "yy": null}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1.5, "items": [1.5], "opts": "deep"}),
        ),
        (
            "shape",
            json!({"name": "a", "count": true, "items": null, "opts": null}),
        ),
        (
            "shape",
            json!({"name": "a", "count": 1, "items": [], "opts": {"deep": true}, "mode": 1, "maybe": ""}),
        ),
        ("shape", json!({})),
        ("shape", json!("x")),
    ];
    cases.extend(more);
    cases
}

/// What pi 1.6.0 does with each case: `{ok, value}` or `{ok: false, message}`, after the tools'
/// parameters (`{name: parameters}`).
fn pi_results(cases: &[(&str, Value)]) -> (Value, Vec<Value>) {
    let pi = pi_hooks_tests::tools::pi16();
    let dist = pi.cli.parent().expect("pi's dist folder").to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let script = scratch.path().join("validate.mjs");
    std::fs::write(
        &script,
        format!(
            r#"
import * as tools from "{dist}/core/tools/index.js";
import {{ validateToolArguments }} from "{ai}";
import fs from "node:fs";
const {{ cases, shape }} = JSON.parse(fs.readFileSync(0, "utf8"));
const defs = {{
  read: tools.createReadToolDefinition("/tmp"), bash: tools.createBashToolDefinition("/tmp"),
  edit: tools.createEditToolDefinition("/tmp"), write: tools.createWriteToolDefinition("/tmp"),
  grep: tools.createGrepToolDefinition("/tmp"), find: tools.createFindToolDefinition("/tmp"),
  ls: tools.createLsToolDefinition("/tmp"), shape: {{ name: "shape", parameters: shape }},
}};
console.log(JSON.stringify(Object.fromEntries(Object.entries(defs).map(([n, d]) => [n, d.parameters]))));
for (const [name, args] of cases) {{
  const def = defs[name];
  try {{
    const prepared = def.prepareArguments ? def.prepareArguments(structuredClone(args)) : args;
    const value = validateToolArguments(def, {{ name, arguments: prepared }});
    console.log(JSON.stringify({{ ok: true, value }}));
  }} catch (e) {{
    console.log(JSON.stringify({{ ok: false, message: e.message }}));
  }}
}}
"#,
            dist = dist.display(),
            ai = dist.join("../../pi-ai/dist/utils/validation.js").display(),
        ),
    )
    .unwrap();
    let input = json!({"cases": cases, "shape": shape_schema()});
    let mut lines = json_lines_with_stdin(
        std::process::Command::new(&pi.node).arg(&script),
        input.to_string().as_bytes(),
        "pi's validation",
    )
    .into_iter();
    let schemas = lines.next().expect("pi's tool parameters");
    (schemas, lines.collect())
}

#[test]
fn tool_arguments_are_validated_and_coerced_as_pi_1_6_does() {
    let cases = cases();
    let (pi_schemas, pi) = pi_results(&cases);
    assert_eq!(pi.len(), cases.len());

    let sandbox = Sandbox::new();
    let calls: Vec<Value> = cases
        .iter()
        .enumerate()
        .map(|(i, (tool, args))| json!({"id": format!("c{i}"), "name": tool, "arguments": args}))
        .collect();
    let script = sandbox.script(&json!({"turns": [{"toolCalls": calls}, {"text": "done"}]}));
    // The first handler logs what it sees; the others block every built-in call that passed
    // validation, so none runs. The plugin tool runs.
    let mut handlers = vec![
        json!({"event": "tool_call"}),
        json!({"event": "before_provider_request"}),
    ];
    for tool in BUILTINS {
        handlers.push(json!({
            "event": "tool_call",
            "id": format!("block-{tool}"),
            "if_contains": format!("\"toolName\":\"{tool}\""),
            "result": {"block": true, "reason": "blocked"}
        }));
    }
    let shape = c_fixture(&sandbox.lib(), "schema_tool", &[]);
    let events = json_output(
        behave_command(
            &sandbox,
            &[("watch", json!({ "handlers": handlers }))],
            &json_script_args(&script),
        )
        .arg("--hook")
        .arg(&shape)
        .env("SHAPE_SCHEMA", shape_schema().to_string()),
    );
    let log = read_behave_log(&sandbox.behave_log());

    // The schemas the model sees (descriptions aside: some of pi 1.6's differ from pi 0.73's,
    // which the built-in tools keep).
    let mut failures = Vec::new();
    for tool in offered_tools(&log) {
        let name = tool["name"].as_str().unwrap();
        let (ours, theirs) = (
            without_descriptions(&tool["parameters"]),
            without_descriptions(&pi_schemas[name]),
        );
        if ours != theirs {
            failures.push(format!(
                "the schema of {name}\n  pi:   {theirs}\n  ours: {ours}"
            ));
        }
    }
    for (i, ((tool, args), pi)) in cases.iter().zip(&pi).enumerate() {
        let id = format!("c{i}");
        let what = format!("case {i}: {tool} {args}");
        let message =
            tool_result_message(&events, &id).unwrap_or_else(|| panic!("{what}: no tool result"));
        let call = log
            .iter()
            .find(|l| l.tag == "tool_call" && l.value["toolCallId"] == id.as_str());
        if pi["ok"] == false {
            if message["content"][0]["text"] != pi["message"] || message["isError"] != true {
                failures.push(format!(
                    "{what}\n  pi:   {}\n  ours: {}",
                    pi["message"], message["content"][0]["text"]
                ));
            }
            if call.is_some() {
                failures.push(format!("{what}: invalid arguments reached tool_call"));
            }
            continue;
        }
        let Some(call) = call else {
            failures.push(format!(
                "{what}: pi accepts it ({}), we gave {}",
                pi["value"], message["content"][0]["text"]
            ));
            continue;
        };
        if call.value["input"] != pi["value"] {
            failures.push(format!(
                "{what}: tool_call input\n  pi:   {}\n  ours: {}",
                pi["value"], call.value["input"]
            ));
        }
        if *tool == "shape" && message["details"] != pi["value"] {
            failures.push(format!(
                "{what}: the tool got\n  pi:   {}\n  ours: {}",
                pi["value"], message["details"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from pi 1.6.0 in {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A schema without its `description` keywords.
fn without_descriptions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

/// pi 1.6's file mutation queue: writes and edits of one file in one message run one at a
/// time in source order (pi starts them in source order and `withFileMutationQueue` queues
/// them), while the agent runs the calls of a message concurrently. Each edit needs the change
/// before it, so any other order fails one of them. pi's own tools run the same calls the way
/// its agent loop does (all started in source order, then awaited together).
#[test]
fn writes_and_edits_of_one_file_run_in_source_order_as_in_pi() {
    // The first write is large, so that its call takes longer to reach the file than the edit
    // after it: without the queue's source order the edit could run first.
    let padding = "pad\n".repeat(2_000_000);
    let calls = [
        (
            "write",
            json!({"path": "f.txt", "content": format!("one\n{padding}")}),
        ),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "one\n", "newText": "two\n"}]}),
        ),
        ("write", json!({"path": "g.txt", "content": "other"})),
        (
            "edit",
            json!({"path": "f.txt", "oldText": "two\n", "newText": "three\n"}),
        ),
        (
            "write",
            json!({"path": "f.txt", "content": format!("four\n{padding}")}),
        ),
        (
            "edit",
            json!({"path": "f.txt", "edits": [{"oldText": "four\n", "newText": "five\n"}]}),
        ),
    ];

    // pi 1.6.0's tools.
    let pi = pi_hooks_tests::tools::pi16();
    let dist = pi.cli.parent().expect("pi's dist folder").to_path_buf();
    let scratch = tempfile::tempdir().unwrap();
    let work = scratch.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let script = scratch.path().join("queue.mjs");
    std::fs::write(
        &script,
        format!(
            r#"
import * as tools from "{dist}/core/tools/index.js";
import {{ validateToolArguments }} from "{ai}";
import fs from "node:fs";
const calls = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const dir = process.argv[2];
const defs = {{ write: tools.createWriteToolDefinition(dir), edit: tools.createEditToolDefinition(dir) }};
const running = calls.map(([name, args]) => {{
  const def = defs[name];
  const prepared = def.prepareArguments ? def.prepareArguments(structuredClone(args)) : args;
  const input = validateToolArguments(def, {{ name, arguments: prepared }});
  return def.execute("id", input, undefined, undefined, {{ cwd: dir }}).then(
    (r) => r.content[0].text, (e) => `error: ${{e.message}}`);
}});
console.log(JSON.stringify({{ texts: await Promise.all(running), file: fs.readFileSync(`${{dir}}/f.txt`, "utf8") }}));
"#,
            dist = dist.display(),
            ai = dist.join("../../pi-ai/dist/utils/validation.js").display(),
        ),
    )
    .unwrap();
    let input = scratch.path().join("calls.json");
    std::fs::write(&input, json!(calls).to_string()).unwrap();
    let output = std::process::Command::new(&pi.node)
        .arg(&script)
        .arg(&work)
        .arg(&input)
        .output()
        .expect("run pi's node");
    assert!(
        output.status.success(),
        "pi's tools: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pi = json_lines(&output).pop().expect("pi's results");
    assert!(
        pi["file"].as_str().unwrap().starts_with("five\n"),
        "pi: {}",
        pi["texts"]
    );

    // Ours, a few times over (an order that only sometimes differs would show).
    for round in 0..3 {
        let sandbox = Sandbox::new();
        let turn: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(
                |(i, (name, args))| json!({"id": format!("m{i}"), "name": name, "arguments": args}),
            )
            .collect();
        let script = sandbox.script(&json!({"turns": [{"toolCalls": turn}, {"text": "done"}]}));
        let events = json_output(&mut sandbox.command(&json_script_args(&script)));
        let texts: Vec<Value> = (0..calls.len())
            .map(|i| {
                let message =
                    tool_result_message(&events, &format!("m{i}")).expect("a tool result");
                let text = message["content"][0]["text"].clone();
                let text = text.as_str().unwrap_or_default();
                if message["isError"] == true {
                    json!(format!("error: {text}"))
                } else {
                    // pi 1.6's write says `Successfully wrote to <path>`; ours keeps pi 0.73's
                    // `Successfully wrote N bytes to <path>`.
                    let bytes = pi16_write_text(text);
                    json!(bytes)
                }
            })
            .collect();
        assert_eq!(Value::Array(texts), pi["texts"], "round {round}");
        let file = std::fs::read_to_string(sandbox.project().join("f.txt")).unwrap();
        assert_eq!(file, pi["file"].as_str().unwrap(), "round {round}");
    }
}

/// `Successfully wrote N bytes to p` as pi 1.6 words it: `Successfully wrote to p`.
fn pi16_write_text(text: &str) -> String {
    match text
        .strip_prefix("Successfully wrote ")
        .and_then(|rest| rest.split_once(" bytes to "))
    {
        Some((n, path)) if n.chars().all(|c| c.is_ascii_digit()) => {
            format!("Successfully wrote to {path}")
        }
        _ => text.to_owned(),
    }
}
