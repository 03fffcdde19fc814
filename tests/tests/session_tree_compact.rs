//! Compaction (manual, by a plugin, automatic) and tree navigation end to end over RPC, with
//! real plugins: the events plugins and the client see, the entries written, and the context
//! the agent continues with.

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::rpc_client::RpcClient as Client;
use pi_hooks_tests::session_rpc::{close_ok, jsonl, prompt_to_end, request, rpc_with_watcher};
use pi_hooks_tests::{Sandbox, c_fixture, read_behave_log};
use serde_json::{Value, json};

/// The RPC command with the `watcher` plugin and the `/go` plugin
/// (tests/fixtures/session_go.c), and its session file.
fn rpc(sandbox: &Sandbox, script: Value, handlers: Value) -> (Command, PathBuf) {
    let file = sandbox.root().join("s.jsonl");
    let go = c_fixture(&sandbox.lib(), "session_go", &[]);
    (
        rpc_with_watcher(sandbox, &script, &handlers, &file, &[&go]),
        file,
    )
}

/// settings.json in the agent dir.
fn settings(sandbox: &Sandbox, settings: Value) {
    std::fs::create_dir_all(sandbox.agent_dir()).unwrap();
    std::fs::write(
        sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
}

fn prompt(client: &mut Client, id: &str, message: &str) -> Vec<Value> {
    prompt_to_end(client, id, message)
}

fn messages(client: &mut Client) -> Vec<Value> {
    request(client, "m", json!({"type": "get_messages"}))["data"]["messages"]
        .as_array()
        .unwrap()
        .clone()
}

fn lines(path: &Path) -> Vec<Value> {
    jsonl(path)
}

fn events(sandbox: &Sandbox, kind: &str) -> Vec<Value> {
    read_behave_log(&sandbox.root().join("behave.log"))
        .into_iter()
        .filter(|l| l.tag == kind)
        .map(|l| l.value)
        .collect()
}

fn close(client: Client) {
    close_ok(client);
}

fn summary_script() -> Value {
    json!({"turns": [{"text": "reply to ${PROMPT}"}], "summary": "SCRIPTED SUMMARY"})
}

#[test]
fn manual_compaction_summarizes_the_old_part_and_keeps_the_recent_one() {
    let sandbox = Sandbox::new();
    settings(&sandbox, json!({"compaction": {"keepRecentTokens": 8}}));
    let handlers = json!([
        {"event": "session_before_compact"},
        {"event": "session_compact"},
        {"event": "auto_compaction_start"},
        {"event": "auto_compaction_end"}
    ]);
    let (command, file) = rpc(&sandbox, summary_script(), handlers);
    let mut client = Client::start(command);
    for (n, text) in ["alpha", "beta", "gamma"].iter().enumerate() {
        prompt(&mut client, &format!("p{n}"), text);
    }
    client.send(&json!({"id": "c", "type": "compact", "customInstructions": "focus on beta"}));
    let (before, response) = client.until(|l| l["id"] == "c");
    assert_eq!(response["success"], true, "{response}");
    let result = &response["data"];
    assert!(
        result["summary"]
            .as_str()
            .unwrap()
            .starts_with("SCRIPTED SUMMARY"),
        "{result}"
    );
    assert!(result["tokensBefore"].as_u64().unwrap() > 0);
    assert_eq!(
        result["details"],
        json!({"readFiles": [], "modifiedFiles": []})
    );
    let start = before
        .iter()
        .find(|l| l["type"] == "compaction_start")
        .unwrap();
    assert_eq!(
        start,
        &json!({"type": "compaction_start", "reason": "manual"})
    );
    let end = before
        .iter()
        .find(|l| l["type"] == "compaction_end")
        .unwrap();
    assert_eq!(
        end,
        &json!({"type": "compaction_end", "reason": "manual", "result": result, "aborted": false, "willRetry": false})
    );
    assert_eq!(
        request(&mut client, "s", json!({"type": "get_state"}))["data"]["isCompacting"],
        false
    );

    // The context is the summary, then what was kept.
    let context = messages(&mut client);
    assert_eq!(context[0]["role"], "compactionSummary", "{context:?}");
    let kept_user: Vec<&str> = context
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"][0]["text"].as_str())
        .collect();
    assert!(
        !kept_user.contains(&"alpha"),
        "alpha was summarized: {kept_user:?} {result}"
    );
    assert!(
        kept_user.contains(&"gamma"),
        "gamma was kept: {kept_user:?}"
    );

    // Compacting again at once: pi's message.
    let again = request(&mut client, "c2", json!({"type": "compact"}));
    assert_eq!(again["error"], "Already compacted");
    // The session goes on after the compaction.
    prompt(&mut client, "p9", "delta");
    close(client);
    // A compaction asked for is not an automatic one.
    assert!(events(&sandbox, "auto_compaction_start").is_empty());
    assert!(events(&sandbox, "auto_compaction_end").is_empty());

    let entries = lines(&file);
    let compaction = entries.iter().find(|e| e["type"] == "compaction").unwrap();
    assert_eq!(compaction["summary"], result["summary"]);
    assert_eq!(compaction["firstKeptEntryId"], result["firstKeptEntryId"]);
    assert_eq!(compaction["fromHook"], false);
    let before_compact = &events(&sandbox, "session_before_compact")[0];
    assert_eq!(before_compact["customInstructions"], "focus on beta");
    assert_eq!(
        before_compact["preparation"]["firstKeptEntryId"],
        result["firstKeptEntryId"]
    );
    let summarized = before_compact["preparation"]["messagesToSummarize"]
        .as_array()
        .unwrap();
    assert_eq!(summarized[0]["content"][0]["text"], "alpha");
    assert_eq!(before_compact["branchEntries"].as_array().unwrap().len(), 6);
    let compacted = &events(&sandbox, "session_compact")[0];
    assert_eq!(compacted["compactionEntry"], *compaction);
    assert_eq!(compacted["fromExtension"], false);
}

#[test]
fn a_plugin_can_give_the_compaction_or_cancel_it() {
    let sandbox = Sandbox::new();
    let handlers = json!([
        {"event": "session_before_compact", "if_contains": "cancel me", "result": {"cancel": true}},
        {"event": "session_before_compact", "id": "give", "result": {"compaction": {"summary": "PLUGIN SUMMARY", "tokensBefore": 7, "details": {"mine": 1}}}},
        {"event": "session_compact"},
    ]);
    let (command, file) = rpc(&sandbox, summary_script(), handlers);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "alpha");
    let cancelled = request(
        &mut client,
        "c1",
        json!({"type": "compact", "customInstructions": "cancel me"}),
    );
    assert_eq!(cancelled["error"], "Compaction cancelled");
    let end: Value = client
        .seen
        .iter()
        .rev()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "compaction_end")
        .expect("a compaction_end");
    assert_eq!(
        (end["aborted"].clone(), end.get("result")),
        (json!(true), None)
    );
    let given = request(&mut client, "c2", json!({"type": "compact"}));
    assert_eq!(given["data"]["summary"], "PLUGIN SUMMARY");
    assert_eq!(given["data"]["tokensBefore"], 7);
    assert_eq!(given["data"]["details"], json!({"mine": 1}));
    close(client);
    let compactions: Vec<Value> = lines(&file)
        .into_iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    assert_eq!(compactions.len(), 1, "the cancelled one wrote nothing");
    assert_eq!(compactions[0]["fromHook"], true);
    assert_eq!(
        events(&sandbox, "session_compact")[0]["fromExtension"],
        true
    );
}

#[test]
fn the_context_is_compacted_automatically_when_it_nears_the_window() {
    let sandbox = Sandbox::new();
    // A window of 16384 + 600 tokens: a first run's context (the tool definitions alone are
    // more than 600 tokens) passes the threshold.
    let script = json!({
        "turns": [{"text": "reply"}],
        "models": [{"id": "tiny", "contextWindow": 16984}],
        "summary": "AUTO SUMMARY",
    });
    let (command, file) = rpc(
        &sandbox,
        script,
        json!([
            {"event": "auto_compaction_start"},
            {"event": "session_compact"},
            {"event": "auto_compaction_end"}
        ]),
    );
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "first");
    let (_, start) = client.until(|l| l["type"] == "compaction_start");
    assert_eq!(start["reason"], "threshold");
    let (_, end) = client.until(|l| l["type"] == "compaction_end");
    assert_eq!(end["reason"], "threshold");
    assert_eq!(end["aborted"], false);
    assert!(
        end["result"]["summary"]
            .as_str()
            .unwrap()
            .starts_with("AUTO SUMMARY")
    );

    // Turned off, nothing more is compacted.
    request(
        &mut client,
        "off",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    assert_eq!(
        request(&mut client, "s", json!({"type": "get_state"}))["data"]["autoCompactionEnabled"],
        false
    );
    let lines_of_run = prompt(&mut client, "p2", "second");
    assert!(!lines_of_run.iter().any(|l| l["type"] == "compaction_start"));
    client.send(&json!({"id": "s2", "type": "get_state"}));
    let (between, _) = client.until(|l| l["id"] == "s2");
    assert!(
        !between.iter().any(|l| l["type"] == "compaction_start"),
        "{between:?}"
    );
    close(client);
    let count = lines(&file)
        .iter()
        .filter(|e| e["type"] == "compaction")
        .count();
    assert_eq!(count, 1);
    assert_eq!(events(&sandbox, "session_compact").len(), 1);
    // oh-my-pi's events for a compaction the host started by itself, around pi's own.
    let order: Vec<String> = read_behave_log(&sandbox.root().join("behave.log"))
        .into_iter()
        .map(|l| l.tag)
        .filter(|t| t.contains("compact"))
        .collect();
    assert_eq!(
        order,
        [
            "auto_compaction_start",
            "session_compact",
            "auto_compaction_end"
        ]
    );
    assert_eq!(
        events(&sandbox, "auto_compaction_start"),
        [json!({"type": "auto_compaction_start", "reason": "threshold"})]
    );
    let end = &events(&sandbox, "auto_compaction_end")[0];
    assert_eq!(
        (&end["reason"], &end["aborted"], &end["willRetry"]),
        (&json!("threshold"), &json!(false), &json!(false)),
        "{end}"
    );
    assert!(
        end["result"]["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("AUTO SUMMARY")),
        "{end}"
    );
}

#[test]
fn a_plugin_command_navigates_the_tree_with_and_without_a_summary() {
    let sandbox = Sandbox::new();
    let handlers = json!([{"event": "session_before_tree"}, {"event": "session_tree"}]);
    let (command, file) = rpc(&sandbox, summary_script(), handlers);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "one");
    prompt(&mut client, "p2", "two");
    let ids: Vec<String> = lines(&file)[1..]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    let (u1, a1, u2, a2) = (&ids[0], &ids[1], &ids[2], &ids[3]);

    // To a user message: the leaf goes to its parent.
    client.send(&json!({"id": "t1", "type": "prompt", "message": format!("/go tree {u2}")}));
    assert_eq!(client.response("t1")["success"], true);
    let texts: Vec<Value> = messages(&mut client)
        .iter()
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert_eq!(texts, [json!("one"), json!("reply to one")]);
    prompt(&mut client, "p3", "three");

    // Back to the first branch's end, summarizing the branch left behind.
    client.send(&json!({"id": "t2", "type": "prompt", "message": format!("/go treesum {a2}")}));
    assert_eq!(client.response("t2")["success"], true);
    let context = messages(&mut client);
    let last = context.last().unwrap();
    assert_eq!(last["role"], "branchSummary", "{context:?}");
    assert!(
        last["summary"]
            .as_str()
            .unwrap()
            .contains("SCRIPTED SUMMARY")
    );
    assert_eq!(
        context.len(),
        5,
        "one, reply, two, reply, the summary: {context:?}"
    );

    // An unknown entry is reported as the plugin's error.
    client.send(&json!({"id": "t3", "type": "prompt", "message": "/go tree nothere"}));
    let (_, error) = client.until(|l| l["type"] == "extension_error");
    assert_eq!(
        (error["event"].clone(), error["error"].clone()),
        (json!("navigate_tree"), json!("Entry nothere not found"))
    );
    close(client);

    let trees = events(&sandbox, "session_tree");
    assert_eq!(
        trees[0],
        json!({"type": "session_tree", "newLeafId": a1, "oldLeafId": a2})
    );
    let entries = lines(&file);
    let summary = entries
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap();
    assert_eq!(summary["parentId"], a2.as_str());
    assert_eq!(summary["fromId"], a2.as_str());
    assert_eq!(summary["fromHook"], false);
    let label = entries.iter().find(|e| e["type"] == "label").unwrap();
    assert_eq!(
        (label["targetId"].clone(), label["label"].clone()),
        (summary["id"].clone(), json!("kept"))
    );
    assert_eq!(trees[1]["summaryEntry"], *summary);
    assert_eq!(trees[1]["fromExtension"], false);
    assert_eq!(
        trees[1]["oldLeafId"], entries[6]["id"],
        "the leaf was three's reply"
    );

    let befores = events(&sandbox, "session_before_tree");
    let preparation = &befores[1]["preparation"];
    assert_eq!(preparation["targetId"], a2.as_str());
    assert_eq!(preparation["commonAncestorId"], a1.as_str());
    assert_eq!(preparation["userWantsSummary"], true);
    assert_eq!(preparation["label"], "kept");
    let summarized: Vec<&Value> = preparation["entriesToSummarize"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["message"]["content"][0]["text"])
        .collect();
    assert_eq!(summarized, [&json!("three"), &json!("reply to three")]);
    let _ = u1;
}

#[test]
fn session_before_tree_can_give_the_summary_or_cancel() {
    let sandbox = Sandbox::new();
    let handlers = json!([
        {"event": "session_before_tree", "if_contains": "\"userWantsSummary\":false", "result": {"cancel": true}},
        {"event": "session_before_tree", "id": "give", "result": {"summary": {"summary": "FROM PLUGIN", "details": {"x": 1}}}},
        {"event": "session_tree"},
    ]);
    let (command, file) = rpc(&sandbox, summary_script(), handlers);
    let mut client = Client::start(command);
    prompt(&mut client, "p1", "one");
    prompt(&mut client, "p2", "two");
    let ids: Vec<String> = lines(&file)[1..]
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect();
    client.send(&json!({"id": "t1", "type": "prompt", "message": format!("/go tree {}", ids[1])}));
    client.response("t1");
    assert_eq!(messages(&mut client).len(), 4, "cancelled: the leaf stayed");
    client
        .send(&json!({"id": "t2", "type": "prompt", "message": format!("/go treesum {}", ids[1])}));
    client.response("t2");
    close(client);
    let summary = lines(&file)
        .into_iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap();
    assert_eq!(summary["summary"], "FROM PLUGIN");
    assert_eq!(summary["details"], json!({"x": 1}));
    assert_eq!(summary["fromHook"], true);
    let trees = events(&sandbox, "session_tree");
    assert_eq!(
        trees.len(),
        1,
        "no session_tree for the cancelled navigation"
    );
    assert_eq!(trees[0]["fromExtension"], true);
}
