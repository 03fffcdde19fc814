//! The session store against real files in a temporary directory.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use pi_hooks_session::{
    SessionError, SessionStore, encode_cwd, most_recent, new_session_path, session_dir,
};
use serde_json::{Value, json};

fn new_session(root: &Path) -> SessionStore {
    let cwd = Path::new("/home/me/project");
    let path = new_session_path(&session_dir(&root.join("agent"), cwd));
    SessionStore::create(path, cwd).expect("create a session")
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn append_raw(path: &Path, bytes: &str) {
    OpenOptions::new()
        .append(true)
        .open(path)
        .unwrap()
        .write_all(bytes.as_bytes())
        .unwrap();
}

/// What a store shows, to compare with the file reopened once the store is dropped (a store
/// locks its file, so the two cannot be open at once).
#[derive(Debug, PartialEq)]
struct Shown {
    header: Value,
    id: String,
    entries: Vec<Value>,
    branch: Vec<Value>,
    leaf: Option<String>,
    context: Vec<Value>,
}

fn shown(session: &SessionStore) -> Shown {
    Shown {
        header: session.header().clone(),
        id: session.id().to_owned(),
        entries: session.entries().to_vec(),
        branch: session.branch(),
        leaf: session.leaf_id().map(str::to_owned),
        context: session.context_messages(),
    }
}

fn is_entry_id(id: &str) -> bool {
    id.len() == 8 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_iso_millis(timestamp: &str) -> bool {
    let bytes = timestamp.as_bytes();
    bytes.len() == 24
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 => *b == b'-',
            10 => *b == b'T',
            13 | 16 => *b == b':',
            19 => *b == b'.',
            23 => *b == b'Z',
            _ => b.is_ascii_digit(),
        })
}

/// Appends one entry of each kind the agent loop and plugins write.
fn fill(session: &mut SessionStore) -> Vec<String> {
    vec![
        session
            .append_message(&json!({"role": "user", "content": "hello", "timestamp": 1}))
            .unwrap(),
        session
            .append_custom("workflow:state", Some(json!({"step": 1, "done": false})))
            .unwrap(),
        session
            .append_message(
                &json!({"role": "assistant", "content": [{"type": "text", "text": "hi"}],
                "provider": "anthropic", "model": "claude"}),
            )
            .unwrap(),
        session.append_custom("marker", None).unwrap(),
        session
            .append_custom_message("note", json!("remember this"), true, Some(json!({"k": 1})))
            .unwrap(),
        session.append_session_info("  My session  ").unwrap(),
    ]
}

#[test]
fn round_trip_keeps_entries_branch_and_leaf() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    let mut ids = fill(&mut session);
    ids.push(session.append_label(&ids[0], Some("start")).unwrap());
    let path = session.path().unwrap().to_path_buf();
    assert_eq!(
        path.parent().unwrap(),
        dir.path().join("agent/sessions/--home-me-project--")
    );

    let before = shown(&session);
    drop(session);
    let (reopened, warnings) = SessionStore::open(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(shown(&reopened), before);
    assert_eq!(reopened.leaf_id(), ids.last().map(String::as_str));
    assert_eq!(reopened.session_name().as_deref(), Some("My session"));
    assert_eq!(reopened.label(&ids[0]), Some("start"));
    let branch_ids: Vec<_> = reopened.branch().iter().map(|e| e["id"].clone()).collect();
    assert_eq!(
        branch_ids,
        ids.iter().map(|id| json!(id)).collect::<Vec<_>>()
    );

    // The header as pi writes it, with the uuid and time of the file name.
    let header = reopened.header();
    assert_eq!(header["type"], "session");
    assert_eq!(header["version"], 3);
    assert_eq!(header["cwd"], "/home/me/project");
    let name = path.file_name().unwrap().to_str().unwrap();
    let stamp = header["timestamp"]
        .as_str()
        .unwrap()
        .replace([':', '.'], "-");
    assert_eq!(name, format!("{stamp}_{}.jsonl", reopened.id()));
}

#[test]
fn every_line_is_json_with_id_parent_and_timestamp_in_pi_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    fill(&mut session);
    let lines = lines(session.path().unwrap());
    assert_eq!(lines.len(), 7);
    assert!(
        lines[0].starts_with(r#"{"type":"session","version":3,"id":""#),
        "{}",
        lines[0]
    );
    let mut previous = Value::Null;
    for line in &lines[1..] {
        let entry: Value = serde_json::from_str(line).expect("each line is JSON");
        assert!(is_entry_id(entry["id"].as_str().unwrap()), "{line}");
        assert_eq!(entry["parentId"], previous, "{line}");
        assert!(
            is_iso_millis(entry["timestamp"].as_str().unwrap()),
            "{line}"
        );
        previous = entry["id"].clone();
    }
    assert!(
        lines[1].starts_with(r#"{"type":"message","id":""#),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with(r#"{"type":"custom","customType":"workflow:state","data":{"#),
        "{}",
        lines[2]
    );
    assert!(
        lines[2].contains(r#"},"id":""#) && lines[2].ends_with(r#"Z"}"#),
        "{}",
        lines[2]
    );
    assert!(
        !lines[4].contains("\"data\""),
        "no data key when None: {}",
        lines[4]
    );
    assert!(
        lines[5].starts_with(r#"{"type":"custom_message","customType":"note","content":"remember this","display":true,"details":{"k":1},"id":""#),
        "{}",
        lines[5]
    );
    assert!(lines[6].contains(r#""name":"My session""#), "{}", lines[6]);
}

#[test]
fn a_torn_last_line_is_skipped_then_cut_off_before_the_next_append() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    let ids = fill(&mut session);
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    // A crash in the middle of writing an entry: half a line, no line feed.
    append_raw(&path, r#"{"type":"message","id":"deadbeef","parentId":"#);

    let (mut reopened, warnings) = SessionStore::open(&path).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("line 8"), "{}", warnings[0]);
    assert!(
        warnings[0].contains(&path.display().to_string()),
        "{}",
        warnings[0]
    );
    assert_eq!(reopened.entries().len(), ids.len());
    assert_eq!(reopened.leaf_id(), ids.last().map(String::as_str));

    let next = reopened
        .append_message(&json!({"role": "user", "content": "again"}))
        .unwrap();
    assert_eq!(
        reopened.entry(&next).unwrap()["parentId"],
        json!(ids.last().unwrap())
    );
    let lines = lines(&path);
    assert_eq!(lines.len(), 8, "the fragment is gone: {lines:#?}");
    for line in &lines {
        serde_json::from_str::<Value>(line).expect("every line is whole JSON");
    }

    let before = shown(&reopened);
    drop(reopened);
    let (again, warnings) = SessionStore::open(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(shown(&again), before);
    assert_eq!(again.leaf_id(), Some(next.as_str()));
}

#[test]
fn a_garbled_last_line_with_a_line_feed_is_an_error_not_crash_residue() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    session.append_custom("k", None).unwrap();
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    // Every writer ends a line with its line feed in the same write: a complete line was
    // written, and maybe acknowledged, so it is not skipped (or cut) as an interrupted write.
    append_raw(&path, "\0\0\0\0\n\n");
    let damaged = fs::read(&path).unwrap();
    let error = SessionStore::open(&path).unwrap_err();
    assert!(
        matches!(error, SessionError::Corrupt { line: 3, .. }),
        "{error}"
    );
    assert_eq!(fs::read(&path).unwrap(), damaged, "the file is left alone");
}

#[test]
fn a_whole_last_line_without_a_line_feed_gets_one_before_the_next_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    session.append_custom("k", None).unwrap();
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, text.trim_end()).unwrap();

    let (mut reopened, warnings) = SessionStore::open(&path).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    reopened.append_custom("k", Some(json!(2))).unwrap();
    drop(reopened);
    let (again, _) = SessionStore::open(&path).unwrap();
    assert_eq!(again.entries().len(), 2);
    assert_eq!(again.entries()[1]["data"], 2);
}

#[test]
fn garbage_in_the_middle_is_an_error_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    fill(&mut session);
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let mut lines = lines(&path);
    lines[3] = "{ not json".into();
    let damaged = lines.join("\n") + "\n";
    fs::write(&path, &damaged).unwrap();

    let error = SessionStore::open(&path).unwrap_err();
    assert!(
        matches!(error, SessionError::Corrupt { line: 4, .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("line 4"), "{message}");
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        damaged,
        "the file is left alone"
    );
}

#[test]
fn other_bad_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let not_json = dir.path().join("a.jsonl");
    fs::write(&not_json, "hello\n").unwrap();
    assert!(matches!(
        SessionStore::open(&not_json),
        Err(SessionError::NotASession { .. })
    ));
    let newer = dir.path().join("b.jsonl");
    fs::write(
        &newer,
        "{\"type\":\"session\",\"version\":9,\"id\":\"u\",\"cwd\":\"/\"}\n",
    )
    .unwrap();
    let error = SessionStore::open(&newer).unwrap_err();
    assert!(
        matches!(error, SessionError::UnsupportedVersion { .. }),
        "{error}"
    );
    let missing = SessionStore::open(&dir.path().join("none.jsonl")).unwrap_err();
    assert!(matches!(missing, SessionError::Read { .. }), "{missing}");

    let session = new_session(dir.path());
    let taken = session.path().unwrap().to_path_buf();
    let error = SessionStore::create(taken, Path::new("/")).unwrap_err();
    assert!(
        matches!(error, SessionError::AlreadyExists { .. }),
        "{error}"
    );
}

#[test]
fn old_versions_are_migrated_without_rewriting_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.jsonl");
    let v2 = concat!(
        r#"{"type":"session","version":2,"id":"u-1","timestamp":"2025-12-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"aaaaaaaa","parentId":null,"timestamp":"2025-12-01T00:00:01.000Z","message":{"role":"hookMessage","customType":"x","content":"hi","display":true,"timestamp":1}}"#,
        "\n",
    );
    fs::write(&path, v2).unwrap();
    let (mut session, warnings) = SessionStore::open(&path).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(session.header()["version"], 3);
    assert_eq!(session.entries()[0]["message"]["role"], "custom");
    session.append_custom("k", None).unwrap();
    assert!(
        fs::read_to_string(&path).unwrap().starts_with(v2),
        "old lines untouched"
    );
    let before = session.entries().to_vec();
    drop(session);
    let (again, _) = SessionStore::open(&path).unwrap();
    assert_eq!(again.entries(), before);
}

#[test]
fn in_memory_sessions_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = SessionStore::in_memory(dir.path());
    let ids = fill(&mut session);
    assert_eq!(session.path(), None);
    assert!(!session.is_persisted());
    assert_eq!(session.entries().len(), ids.len());
    assert_eq!(session.branch().len(), ids.len());
    assert_eq!(session.header()["cwd"], json!(dir.path().to_string_lossy()));
    assert_eq!(session.context_messages().len(), 3);
    session.sync().unwrap();
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn most_recent_picks_the_newest_session_file() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions");
    assert_eq!(most_recent(&sessions), None, "no directory yet");
    let base = SystemTime::now() - Duration::from_secs(3600);
    let mut paths: Vec<PathBuf> = Vec::new();
    for (age, name) in [(30, "a"), (10, "b"), (20, "c")] {
        let path = sessions.join(format!("{name}.jsonl"));
        SessionStore::create(path.clone(), Path::new("/w")).unwrap();
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(base - Duration::from_secs(age))
            .unwrap();
        paths.push(path);
    }
    // Newer, but not sessions: skipped.
    fs::write(sessions.join("z.jsonl"), "not a session\n").unwrap();
    fs::write(sessions.join("notes.txt"), "{}\n").unwrap();
    assert_eq!(most_recent(&sessions), Some(paths[1].clone()));
}

#[test]
fn context_messages_shape_custom_messages_as_pi() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    session
        .append_message(&json!({"role": "user", "content": "go"}))
        .unwrap();
    session
        .append_custom("state", Some(json!({"x": 1})))
        .unwrap();
    let with_details = session
        .append_custom_message(
            "note",
            json!("plain text"),
            true,
            Some(json!({"why": "test"})),
        )
        .unwrap();
    session
        .append_custom_message(
            "blocks",
            json!([{"type": "text", "text": "as blocks"}]),
            false,
            None,
        )
        .unwrap();

    let messages = session.context_messages();
    assert_eq!(
        messages.len(),
        3,
        "custom entries are not sent: {messages:#?}"
    );
    assert_eq!(messages[0], json!({"role": "user", "content": "go"}));
    let stamp = session.entry(&with_details).unwrap()["timestamp"]
        .as_str()
        .unwrap()
        .to_owned();
    let millis = messages[1]["timestamp"]
        .as_i64()
        .expect("milliseconds, as pi's getTime()");
    assert!(millis > 1_700_000_000_000, "{stamp} -> {millis}");
    assert_eq!(
        messages[1],
        json!({"role": "custom", "customType": "note", "content": "plain text", "display": true,
            "details": {"why": "test"}, "timestamp": millis})
    );
    assert_eq!(messages[2]["role"], "custom");
    assert_eq!(messages[2]["display"], false);
    assert_eq!(
        messages[2]["content"],
        json!([{"type": "text", "text": "as blocks"}])
    );
    assert!(messages[2].get("details").is_none());
}

#[test]
fn branching_and_compaction_follow_the_current_branch() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    let a = session
        .append_message(&json!({"role": "user", "content": "a"}))
        .unwrap();
    let b = session
        .append_message(&json!({"role": "assistant", "content": "b"}))
        .unwrap();
    let c = session
        .append_message(&json!({"role": "user", "content": "c"}))
        .unwrap();

    // Back to `a`, then a summary of the branch left behind.
    let summary = session
        .append_branch_summary(Some(&a), "went to c", None, None)
        .unwrap();
    assert_eq!(session.entry(&summary).unwrap()["parentId"], json!(a));
    let d = session
        .append_message(&json!({"role": "user", "content": "d"}))
        .unwrap();
    let branch: Vec<_> = session.branch().iter().map(|e| e["id"].clone()).collect();
    assert_eq!(branch, [json!(a), json!(summary), json!(d)]);
    assert_eq!(session.entries().len(), 5, "every branch stays in the file");
    assert_eq!(session.children(&a).len(), 2);
    let roles: Vec<_> = session
        .context_messages()
        .iter()
        .map(|m| m["role"].clone())
        .collect();
    assert_eq!(roles, ["user", "branchSummary", "user"]);

    // Compaction: the summary, then from the first kept entry on.
    session.set_leaf(Some(&c)).unwrap();
    session
        .append_compaction("earlier talk", &b, 1234, None, None)
        .unwrap();
    let e = session
        .append_message(&json!({"role": "user", "content": "e"}))
        .unwrap();
    let messages = session.context_messages();
    assert_eq!(messages[0]["role"], "compactionSummary");
    assert_eq!(messages[0]["summary"], "earlier talk");
    assert_eq!(messages[0]["tokensBefore"], 1234);
    let contents: Vec<_> = messages[1..].iter().map(|m| m["content"].clone()).collect();
    assert_eq!(contents, ["b", "c", "e"]);

    assert!(matches!(
        session.set_leaf(Some("nope")),
        Err(SessionError::UnknownEntry { .. })
    ));
    assert!(matches!(
        session.append_label("nope", Some("x")),
        Err(SessionError::UnknownEntry { .. })
    ));

    // Reopening puts the leaf on the last entry of the file.
    session.set_leaf(Some(&a)).unwrap();
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    let (reopened, _) = SessionStore::open(&path).unwrap();
    assert_eq!(reopened.leaf_id(), Some(e.as_str()));
    assert_eq!(reopened.context_messages(), messages);
}

#[test]
fn sessions_are_filed_by_encoded_cwd() {
    assert_eq!(
        encode_cwd(Path::new("/home/will/projects/myapp")),
        "--home-will-projects-myapp--"
    );
    let dir = session_dir(Path::new("/root/.pi/agent"), Path::new("/srv/app"));
    assert_eq!(dir, PathBuf::from("/root/.pi/agent/sessions/--srv-app--"));
    let path = new_session_path(&dir);
    assert_eq!(path.parent(), Some(dir.as_path()));
    assert!(path.extension().is_some_and(|e| e == "jsonl"));
}

#[test]
fn synced_appends_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    session.set_sync_each_append(true);
    session.append_custom("k", None).unwrap();
    session.sync().unwrap();
    assert_eq!(lines(session.path().unwrap()).len(), 2);
}

#[test]
fn a_damaged_tail_is_not_cut_if_someone_else_wrote_since() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    let first = session.append_custom("k", None).unwrap();
    let path = session.path().unwrap().to_path_buf();
    drop(session);
    append_raw(&path, "{\"type\":");
    let (mut reopened, warnings) = SessionStore::open(&path).unwrap();
    assert_eq!(warnings.len(), 1);
    // A writer that ignores the lock went on after the fragment, on a line of its own.
    let theirs = r#"{"type":"custom","customType":"theirs","id":"0000beef","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z"}"#;
    append_raw(&path, &format!("\n{theirs}\n"));
    let before = fs::read(&path).unwrap();
    let ours = reopened.append_custom("k", None).unwrap();
    let after = fs::read(&path).unwrap();
    assert!(after.starts_with(&before), "nothing was cut");
    drop(reopened);

    let (again, warnings) = SessionStore::open(&path).unwrap();
    assert_eq!(
        warnings.len(),
        1,
        "the fragment, left in the file: {warnings:?}"
    );
    assert!(warnings[0].contains("line 3"), "{warnings:?}");
    let ids: Vec<_> = again.entries().iter().map(|e| e["id"].clone()).collect();
    assert_eq!(ids, [json!(first), json!("0000beef"), json!(ours)]);
    assert_eq!(again.entry(&ours).unwrap()["parentId"], json!(first));
}

#[test]
fn a_file_cut_shorter_by_someone_else_is_not_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut session = new_session(dir.path());
    session.append_custom("k", None).unwrap();
    let path = session.path().unwrap().to_path_buf();
    let header = lines(&path)[0].clone() + "\n";
    fs::write(&path, &header).unwrap();
    let error = session.append_custom("k", None).unwrap_err();
    assert!(
        matches!(error, SessionError::ChangedOnDisk { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        header,
        "nothing written"
    );
}
