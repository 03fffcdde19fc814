//! Compaction and branch-summary preparation against pi itself: for every session file in
//! `tests/fixtures/compaction/`, pi 0.73.1's answers were recorded in `<name>.golden.json` by
//! `scripts/pi-golden/compaction.mjs` (its header says how to regenerate them); this test opens
//! each file with the real [`SessionStore`] (from a scratch copy: the store locks and may cut
//! its file) and compares pi-hooks' port field by field: the `session_before_compact`
//! preparation as a plugin receives it (or pi's reason for having none), the file lists, the
//! transcripts a summarizing model would read, the context's token estimate, and
//! `collectEntriesForBranchSummary` / `prepareBranchEntries` for every pair the script tried.

use std::path::{Path, PathBuf};

use pi_hooks_session::SessionStore;
use pi_hooks_session::branch_summary::{
    collect_entries_for_branch_summary, prepare_branch_entries,
};
use pi_hooks_session::compaction::{
    CompactionSettings, estimate_context_tokens, prepare_compaction,
};
use pi_hooks_session::context;
use pi_hooks_session::summarize::{
    branch_summary_for_model, compaction_summary_for_model, convert_to_llm, serialize_conversation,
};
use serde_json::{Value, json};

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compaction")
}

fn read_json(path: &Path) -> Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// Asserts `ours == pi`, naming where they first differ (object keys and array items walked).
fn assert_same(ours: &Value, pi: &Value, at: &str) {
    match (ours, pi) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let here = format!("{at}.{key}");
                match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => assert_same(x, y, &here),
                    (x, y) => panic!("{here}: pi-hooks has {x:?}, pi has {y:?}"),
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (index, (x, y)) in a.iter().zip(b).enumerate() {
                assert_same(x, y, &format!("{at}[{index}]"));
            }
            assert_eq!(a.len(), b.len(), "{at}: lengths differ");
        }
        _ => assert_eq!(ours, pi, "{at}"),
    }
}

/// The transcript of `messages`, each summary's wrapper (worded by us, not as pi words it)
/// replaced by the marker `scripts/pi-golden/compaction.mjs` puts in place of pi's.
fn conversation(messages: &[Value]) -> Value {
    let mut text = serialize_conversation(&convert_to_llm(messages));
    for message in messages {
        let summary = message["summary"].as_str().unwrap_or_default();
        let (wrapped, role) = match message["role"].as_str() {
            Some("branchSummary") => (branch_summary_for_model(summary), "branchSummary"),
            Some("compactionSummary") => {
                (compaction_summary_for_model(summary), "compactionSummary")
            }
            _ => continue,
        };
        assert!(
            text.contains(&wrapped),
            "the transcript holds the {role} wrapper"
        );
        text = text.replacen(&wrapped, &format!("[{role}: {summary}]"), 1);
    }
    Value::String(text)
}

struct Opened {
    store: SessionStore,
    golden: Value,
    _scratch: tempfile::TempDir,
}

/// Opens a scratch copy of fixture `name` and reads its golden file.
fn open(name: &str) -> Opened {
    let scratch = tempfile::tempdir().expect("a scratch folder");
    let copy = scratch.path().join(name);
    std::fs::copy(fixtures_dir().join(name), &copy).expect("copy the fixture");
    let (store, warnings) = SessionStore::open(&copy).expect("the fixture opens");
    assert!(warnings.is_empty(), "{name}: {warnings:?}");
    let golden = read_json(&fixtures_dir().join(name.replace(".jsonl", ".golden.json")));
    Opened {
        store,
        golden,
        _scratch: scratch,
    }
}

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures/compaction")
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".jsonl"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "fixtures missing: {names:?}");
    names
}

#[test]
fn compaction_preparation_matches_pi() {
    let mut cut_somewhere = 0;
    let mut split = 0;
    let mut whole_turns = 0;
    for name in fixture_names() {
        let Opened { store, golden, .. } = open(&name);
        assert_eq!(store.leaf_id(), golden["leafId"].as_str(), "{name}: leaf");
        let branch = store.branch();
        let refs: Vec<&Value> = branch.iter().collect();
        let context_messages = context::build(&refs).messages;
        let cases = golden["compaction"].as_object().expect("compaction cases");
        assert_eq!(cases.len(), 2, "{name}");
        for (case, expected) in cases {
            let at = format!("{name} [{case}]");
            let settings: CompactionSettings =
                serde_json::from_value(expected["settings"].clone()).expect("settings");
            assert_same(
                &serde_json::to_value(estimate_context_tokens(&context_messages)).unwrap(),
                &expected["contextTokens"],
                &format!("{at} contextTokens"),
            );
            match prepare_compaction(&branch, &settings) {
                Err(why) => {
                    assert_eq!(expected["prepared"], Value::Null, "{at}: pi prepared one");
                    assert_eq!(json!(why.to_string()), expected["why"], "{at}: why not");
                }
                Ok(prepared) => {
                    assert_same(
                        &prepared.to_event_json(),
                        &expected["prepared"],
                        &format!("{at} prepared"),
                    );
                    assert_same(
                        &serde_json::to_value(prepared.file_lists()).unwrap(),
                        &expected["fileLists"],
                        &format!("{at} fileLists"),
                    );
                    assert_same(
                        &conversation(&prepared.messages_to_summarize),
                        &expected["conversation"],
                        &format!("{at} conversation"),
                    );
                    assert_same(
                        &conversation(&prepared.turn_prefix_messages),
                        &expected["turnPrefixConversation"],
                        &format!("{at} turnPrefixConversation"),
                    );
                    cut_somewhere += usize::from(!prepared.messages_to_summarize.is_empty());
                    split += usize::from(prepared.is_split_turn);
                    whole_turns += usize::from(
                        !prepared.is_split_turn && !prepared.messages_to_summarize.is_empty(),
                    );
                }
            }
        }
    }
    // The fixtures reach the interesting cases (so that matching pi means something).
    assert!(
        cut_somewhere >= 5,
        "{cut_somewhere} preparations summarize something"
    );
    assert!(split >= 4, "{split} split turns");
    assert!(whole_turns >= 1, "no cut between turns");
}

#[test]
fn branch_summary_collection_matches_pi() {
    let mut compared = 0;
    let mut prepared_compared = 0;
    for name in fixture_names() {
        let Opened { store, golden, .. } = open(&name);
        for case in golden["branchSummary"]
            .as_array()
            .expect("branchSummary cases")
        {
            let old = case["oldLeafId"].as_str();
            let target = case["targetId"].as_str().expect("targetId");
            let at = format!("{name} {old:?} -> {target}");
            let collected = collect_entries_for_branch_summary(&store, old, target);
            let ids: Vec<Value> = collected
                .entries
                .iter()
                .map(|entry| entry["id"].clone())
                .collect();
            assert_same(
                &Value::Array(ids),
                &case["entryIds"],
                &format!("{at} entries"),
            );
            assert_same(
                &json!(collected.common_ancestor_id),
                &case["commonAncestorId"],
                &format!("{at} commonAncestorId"),
            );
            for expected in case["prepared"].as_array().into_iter().flatten() {
                let budget = expected["budget"].as_u64().expect("budget");
                let at = format!("{at} budget {budget}");
                let prepared = prepare_branch_entries(&collected.entries, budget);
                assert_same(
                    &Value::Array(prepared.messages.clone()),
                    &expected["messages"],
                    &format!("{at} messages"),
                );
                assert_eq!(
                    json!(prepared.total_tokens),
                    expected["totalTokens"],
                    "{at}"
                );
                assert_same(
                    &serde_json::to_value(prepared.file_ops.file_lists()).unwrap(),
                    &expected["fileLists"],
                    &format!("{at} fileLists"),
                );
                assert_same(
                    &conversation(&prepared.messages),
                    &expected["conversation"],
                    &format!("{at} conversation"),
                );
                prepared_compared += 1;
            }
            compared += 1;
        }
    }
    assert!(compared >= 100, "only {compared} collections compared");
    assert!(
        prepared_compared >= 8,
        "only {prepared_compared} preparations compared"
    );
}
