//! The built-in tools run for real: real files in a temp dir, real bash processes.

use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pi_hooks_agent::tools::builtin::builtin_tools;
use pi_hooks_agent::tools::{CancelToken, Tool, ToolInvocation, ToolOutput};
use serde_json::{Value, json};

fn tool(name: &str) -> Box<dyn Tool> {
    builtin_tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// Runs a tool; returns its result and the partial results it streamed.
fn run_full(
    name: &str,
    args: Value,
    cwd: &Path,
    cancel: &CancelToken,
) -> (Result<ToolOutput, String>, Vec<ToolOutput>) {
    let updates = Mutex::new(Vec::new());
    let on_update = |out: ToolOutput| updates.lock().unwrap().push(out);
    let call = ToolInvocation {
        tool_call_id: "call-1",
        args: &args,
        cwd,
        cancel,
        file_ticket: None,
        on_update: &on_update,
    };
    let result = tool(name).execute(&call);
    (result, updates.into_inner().unwrap())
}

fn run(name: &str, args: Value, cwd: &Path) -> Result<ToolOutput, String> {
    run_full(name, args, cwd, &CancelToken::new()).0
}

fn text(out: &ToolOutput) -> &str {
    out.content[0]["text"].as_str().expect("text block")
}

fn ok_text(name: &str, args: Value, cwd: &Path) -> (String, Value) {
    let out = run(name, args, cwd).unwrap_or_else(|e| panic!("{name} failed: {e}"));
    assert!(!out.is_error);
    (text(&out).to_string(), out.details)
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

// ---------------------------------------------------------------------------------------------
// read
// ---------------------------------------------------------------------------------------------

#[test]
fn read_returns_text_with_offset_limit_and_at_prefix() {
    let dir = tmp();
    fs::write(dir.path().join("notes.txt"), "alpha\nbeta\ngamma\ndelta\n").unwrap();

    let (t, details) = ok_text("read", json!({"path": "notes.txt"}), dir.path());
    assert_eq!(t, "alpha\nbeta\ngamma\ndelta\n");
    assert!(details.is_null());

    let (t, _) = ok_text(
        "read",
        json!({"path": "@notes.txt", "offset": 2, "limit": 2}),
        dir.path(),
    );
    assert_eq!(
        t,
        "beta\ngamma\n\n[2 more lines in file. Use offset=4 to continue]"
    );

    let abs = dir.path().join("notes.txt");
    let (t, _) = ok_text(
        "read",
        json!({"path": abs.to_str().unwrap(), "offset": 4}),
        dir.path(),
    );
    assert_eq!(t, "delta\n");

    let err = run(
        "read",
        json!({"path": "notes.txt", "offset": 50}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(err, "Offset 50 is beyond end of file (5 lines total)");
}

#[test]
fn read_truncates_long_files_at_2000_lines() {
    let dir = tmp();
    let body: String = (1..=3000).map(|i| format!("row {i}\n")).collect();
    fs::write(dir.path().join("big.txt"), &body).unwrap();

    let (t, details) = ok_text("read", json!({"path": "big.txt"}), dir.path());
    assert!(t.starts_with("row 1\nrow 2\n"));
    assert!(
        t.ends_with("row 2000\n\n[Showing lines 1-2000 of 3001. Use offset=2001 to continue]"),
        "{}",
        &t[t.len() - 120..]
    );
    assert!(!t.contains("row 2001"));
    let tr = &details["truncation"];
    assert_eq!(tr["truncated"], true);
    assert_eq!(tr["truncatedBy"], "lines");
    assert_eq!(tr["totalLines"], 3001);
    assert_eq!(tr["outputLines"], 2000);
    assert_eq!(tr["totalBytes"], body.len());

    let (t, _) = ok_text(
        "read",
        json!({"path": "big.txt", "offset": 2001}),
        dir.path(),
    );
    assert!(t.starts_with("row 2001\n") && t.ends_with("row 3000\n"));
}

#[test]
fn read_missing_file_names_the_path() {
    let dir = tmp();
    let err = run("read", json!({"path": "nope/missing.txt"}), dir.path()).unwrap_err();
    let abs = dir.path().join("nope/missing.txt");
    assert_eq!(
        err,
        format!(
            "ENOENT: no such file or directory, access '{}'",
            abs.display()
        )
    );
}

#[test]
fn read_returns_images_as_base64_blocks() {
    use base64::Engine;
    let dir = tmp();
    let png: Vec<u8> = [
        &b"\x89PNG\r\n\x1a\n"[..],
        &[0, 0, 0, 13],
        b"IHDR",
        &[1, 2, 3, 4, 5, 6, 7, 8, 0xff],
    ]
    .concat();
    fs::write(dir.path().join("pic.bin"), &png).unwrap();

    let out = run("read", json!({"path": "pic.bin"}), dir.path()).unwrap();
    assert_eq!(out.content.len(), 2);
    assert_eq!(
        out.content[0],
        json!({"type": "text", "text": "Read image file [image/png]"})
    );
    assert_eq!(out.content[1]["type"], "image");
    assert_eq!(out.content[1]["mimeType"], "image/png");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(out.content[1]["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(decoded, png);
}

// ---------------------------------------------------------------------------------------------
// write / edit
// ---------------------------------------------------------------------------------------------

#[test]
fn write_creates_parent_directories() {
    let dir = tmp();
    let (t, details) = ok_text(
        "write",
        json!({"path": "a/b/c.txt", "content": "hello\n"}),
        dir.path(),
    );
    assert_eq!(t, "Successfully wrote 6 bytes to a/b/c.txt");
    assert!(details.is_null());
    assert_eq!(
        fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "hello\n"
    );

    ok_text(
        "write",
        json!({"path": "a/b/c.txt", "content": "over"}),
        dir.path(),
    );
    assert_eq!(
        fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
        "over"
    );
}

#[test]
fn edit_replaces_once_and_reports_a_diff() {
    let dir = tmp();
    let file = dir.path().join("lib.rs");
    fs::write(&file, "fn a() {}\nfn b() {\n    1\n}\nfn c() {}\n").unwrap();

    let (t, details) = ok_text(
        "edit",
        json!({"path": "lib.rs", "oldText": "    1\n", "newText": "    2\n    3\n"}),
        dir.path(),
    );
    assert_eq!(t, "Successfully replaced 1 block(s) in lib.rs.");
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "fn a() {}\nfn b() {\n    2\n    3\n}\nfn c() {}\n"
    );
    let diff = details["diff"].as_str().unwrap();
    assert!(diff.contains("-3     1"), "{diff}");
    assert!(
        diff.contains("+3     2") && diff.contains("+4     3"),
        "{diff}"
    );
    assert!(diff.contains(" 2 fn b() {"), "{diff}");
    assert_eq!(details["firstChangedLine"], 3);
}

#[test]
fn edit_errors_like_pi() {
    let dir = tmp();
    let file = dir.path().join("dup.txt");
    fs::write(&file, "x = 1\ny = 2\nx = 1\n").unwrap();

    let err = run(
        "edit",
        json!({"path": "dup.txt", "oldText": "z = 3", "newText": "q"}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "Could not find the exact text in dup.txt. The old text must match exactly including all whitespace and newlines."
    );
    let err = run(
        "edit",
        json!({"path": "dup.txt", "oldText": "x = 1", "newText": "x = 9"}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "Found 2 occurrences of the text in dup.txt. The text must be unique. Please provide more context to make it unique."
    );
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        "x = 1\ny = 2\nx = 1\n",
        "a failed edit leaves the file alone"
    );

    let err = run(
        "edit",
        json!({"path": "gone.txt", "oldText": "a", "newText": "b"}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(err, "Could not edit file: gone.txt. Error code: ENOENT.");
}

// ---------------------------------------------------------------------------------------------
// bash
// ---------------------------------------------------------------------------------------------

#[test]
fn bash_runs_in_cwd_and_merges_stderr() {
    let dir = tmp();
    fs::write(dir.path().join("marker"), "").unwrap();
    let (t, details) = ok_text(
        "bash",
        json!({"command": "ls; echo to-stderr >&2"}),
        dir.path(),
    );
    assert_eq!(t, "marker\nto-stderr\n");
    assert!(details.is_null());

    let (t, _) = ok_text("bash", json!({"command": "true"}), dir.path());
    assert_eq!(t, "(no output)");
}

#[test]
fn bash_nonzero_exit_is_an_error_with_output() {
    let dir = tmp();
    let err = run(
        "bash",
        json!({"command": "echo partial; exit 3"}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(err, "partial\n\n\nCommand exited with code 3");
    let err = run("bash", json!({"command": "exit 7"}), dir.path()).unwrap_err();
    assert_eq!(err, "(no output)\n\nCommand exited with code 7");
}

#[test]
fn bash_keeps_the_tail_and_saves_the_full_output() {
    let dir = tmp();
    let (result, updates) = run_full(
        "bash",
        json!({"command": "seq 1 3000"}),
        dir.path(),
        &CancelToken::new(),
    );
    let out = result.unwrap();
    let t = text(&out);
    let (body, notice) = t.split_once("\n\n[").expect("a truncation notice");
    assert!(body.starts_with("1001\n1002\n"), "{}", &body[..20]);
    assert!(body.ends_with("\n3000"));
    assert!(!body.contains("\n1000\n"));
    assert_eq!(body.lines().count(), 2000);

    let details = &out.details;
    let full_path = details["fullOutputPath"]
        .as_str()
        .expect("fullOutputPath")
        .to_string();
    assert_eq!(
        notice,
        format!("Showing lines 1001-3000 of 3000. Full output: {full_path}]")
    );
    let tr = &details["truncation"];
    assert_eq!(tr["truncated"], true);
    assert_eq!(tr["truncatedBy"], "lines");
    assert_eq!(tr["totalLines"], 3000);
    assert_eq!(tr["outputLines"], 2000);
    let expected: String = (1..=3000).map(|i| format!("{i}\n")).collect();
    assert_eq!(tr["totalBytes"], expected.len());
    assert_eq!(
        fs::read_to_string(&full_path).unwrap(),
        expected,
        "the temp file holds everything"
    );

    assert!(!updates.is_empty(), "partial output is streamed");
    assert!(
        updates.last().unwrap().content[0]["text"]
            .as_str()
            .unwrap()
            .ends_with("3000")
    );
    fs::remove_file(full_path).unwrap();
}

#[test]
fn bash_byte_truncation_uses_the_50kb_notice() {
    let dir = tmp();
    // 1000 lines of 100 characters: under the line limit, over 50 KB.
    let out = run(
        "bash",
        json!({"command": "for i in $(seq 1000); do printf '%0100d\\n' $i; done"}),
        dir.path(),
    )
    .unwrap();
    let t = text(&out);
    let full_path = out.details["fullOutputPath"].as_str().unwrap().to_string();
    assert_eq!(out.details["truncation"]["truncatedBy"], "bytes");
    let kept = out.details["truncation"]["outputLines"].as_u64().unwrap();
    assert_eq!(kept, 506, "(51200 - 100) / 101 + 1 whole lines fit");
    assert!(
        t.ends_with(&format!(
            "[Showing lines 495-1000 of 1000 (50.0KB limit). Full output: {full_path}]"
        )),
        "{t:.80}"
    );
    assert_eq!(fs::metadata(&full_path).unwrap().len(), 101_000);
    fs::remove_file(full_path).unwrap();
}

#[test]
fn bash_large_output_is_spooled_not_kept() {
    let dir = tmp();
    // 5 MB in 50,000 lines of 100 characters.
    let start = Instant::now();
    let out = run(
        "bash",
        json!({"command": "head -c 5000000 /dev/zero | tr '\\0' a | fold -w 100"}),
        dir.path(),
    )
    .unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    let tr = &out.details["truncation"];
    assert_eq!(tr["totalLines"], 50_000);
    assert_eq!(
        tr["totalBytes"], 5_049_999,
        "fold leaves the last line open"
    );
    assert!(tr["outputBytes"].as_u64().unwrap() <= 50 * 1024);
    assert!(text(&out).len() < 52 * 1024);
    let full_path = out.details["fullOutputPath"].as_str().unwrap().to_string();
    assert_eq!(fs::metadata(&full_path).unwrap().len(), 5_049_999);
    fs::remove_file(full_path).unwrap();
}

#[test]
fn bash_timeout_kills_fast() {
    let dir = tmp();
    let start = Instant::now();
    let err = run(
        "bash",
        json!({"command": "echo started; sleep 5", "timeout": 1}),
        dir.path(),
    )
    .unwrap_err();
    let elapsed = start.elapsed();
    assert_eq!(err, "started\n\n\nCommand timed out after 1 seconds");
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
    assert!(
        elapsed < Duration::from_millis(3500),
        "killed fast, took {elapsed:?}"
    );
}

#[test]
fn bash_timeout_kills_the_whole_process_group() {
    let dir = tmp();
    let err = run(
        "bash",
        json!({"command": "sleep 30 & echo $! > bg.pid; wait", "timeout": 1}),
        dir.path(),
    )
    .unwrap_err();
    assert!(err.ends_with("Command timed out after 1 seconds"), "{err}");
    let pid: u32 = fs::read_to_string(dir.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The background sleep was in the group: it must be gone (or a zombie about to be reaped).
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let alive = status
            .lines()
            .any(|l| l.starts_with("State:") && !l.contains("Z"));
        if !alive {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "background child {pid} survived the timeout"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn bash_cancel_aborts_the_command() {
    let dir = tmp();
    let cancel = CancelToken::new();
    let canceller = {
        let cancel = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            cancel.cancel();
        })
    };
    let start = Instant::now();
    let (result, _) = run_full(
        "bash",
        json!({"command": "echo before; sleep 10"}),
        dir.path(),
        &cancel,
    );
    canceller.join().unwrap();
    let err = result.unwrap_err();
    assert_eq!(err, "before\n\n\nCommand aborted");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );

    let pre_cancelled = CancelToken::new();
    pre_cancelled.cancel();
    let (result, _) = run_full(
        "bash",
        json!({"command": "touch ran"}),
        dir.path(),
        &pre_cancelled,
    );
    assert_eq!(result.unwrap_err(), "Command aborted");
    assert!(!dir.path().join("ran").exists());
}

// ---------------------------------------------------------------------------------------------
// ls / find / grep
// ---------------------------------------------------------------------------------------------

#[test]
fn ls_sorts_marks_directories_and_limits() {
    let dir = tmp();
    for f in ["b.txt", "A.txt", ".hidden", "c.md"] {
        fs::write(dir.path().join(f), "").unwrap();
    }
    fs::create_dir(dir.path().join("sub")).unwrap();

    let (t, details) = ok_text("ls", json!({}), dir.path());
    assert_eq!(t, ".hidden\nA.txt\nb.txt\nc.md\nsub/");
    assert!(details.is_null());

    let (t, details) = ok_text("ls", json!({"path": ".", "limit": 2}), dir.path());
    assert_eq!(
        t,
        ".hidden\nA.txt\n\n[2 entries limit reached. Use limit=4 for more]"
    );
    assert_eq!(details, json!({"entryLimitReached": 2}));

    fs::create_dir(dir.path().join("empty")).unwrap();
    assert_eq!(
        ok_text("ls", json!({"path": "empty"}), dir.path()).0,
        "(empty directory)"
    );
    let err = run("ls", json!({"path": "b.txt"}), dir.path()).unwrap_err();
    assert_eq!(
        err,
        format!("Not a directory: {}", dir.path().join("b.txt").display())
    );
    let err = run("ls", json!({"path": "missing"}), dir.path()).unwrap_err();
    assert_eq!(
        err,
        format!("Path not found: {}", dir.path().join("missing").display())
    );
}

fn project() -> tempfile::TempDir {
    let dir = tmp();
    let p = dir.path();
    fs::create_dir_all(p.join("src/nested")).unwrap();
    fs::create_dir_all(p.join("target/debug")).unwrap();
    fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
    fs::write(
        p.join("src/main.rs"),
        "fn main() {\n    let needle = 1;\n}\n",
    )
    .unwrap();
    fs::write(
        p.join("src/nested/util.rs"),
        "// Needle here\npub fn util() {}\n",
    )
    .unwrap();
    fs::write(p.join("src/readme.md"), "needle in markdown\n").unwrap();
    fs::write(
        p.join("target/debug/gen.rs"),
        "needle in ignored build output\n",
    )
    .unwrap();
    fs::write(p.join("debug.log"), "needle in an ignored log\n").unwrap();
    fs::write(p.join(".env.rs"), "needle hidden\n").unwrap();
    dir
}

#[test]
fn find_respects_gitignore_and_returns_relative_paths() {
    let dir = project();
    let (t, details) = ok_text("find", json!({"pattern": "*.rs"}), dir.path());
    assert_eq!(t, ".env.rs\nsrc/main.rs\nsrc/nested/util.rs");
    assert!(details.is_null());

    let (t, _) = ok_text("find", json!({"pattern": "*.log"}), dir.path());
    assert_eq!(t, "No files found matching pattern");

    let (t, _) = ok_text("find", json!({"pattern": "src/**/*.rs"}), dir.path());
    assert_eq!(t, "src/main.rs\nsrc/nested/util.rs");

    let (t, _) = ok_text(
        "find",
        json!({"pattern": "*.rs", "path": "src/nested"}),
        dir.path(),
    );
    assert_eq!(t, "util.rs");

    let (t, details) = ok_text("find", json!({"pattern": "*.rs", "limit": 2}), dir.path());
    assert_eq!(
        t,
        ".env.rs\nsrc/main.rs\n\n[2 results limit reached. Use limit=4 for more, or refine pattern]"
    );
    assert_eq!(details, json!({"resultLimitReached": 2}));

    let err = run(
        "find",
        json!({"pattern": "*", "path": "nowhere"}),
        dir.path(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        format!("Path not found: {}", dir.path().join("nowhere").display())
    );
}

#[test]
fn grep_formats_matches_and_respects_gitignore() {
    let dir = project();
    let (t, details) = ok_text("grep", json!({"pattern": "needle"}), dir.path());
    assert_eq!(
        t,
        ".env.rs:1: needle hidden\nsrc/main.rs:2:     let needle = 1;\nsrc/readme.md:1: needle in markdown"
    );
    assert!(details.is_null());

    let (t, _) = ok_text(
        "grep",
        json!({"pattern": "NEEDLE", "ignoreCase": true, "glob": "*.rs"}),
        dir.path(),
    );
    assert_eq!(
        t,
        ".env.rs:1: needle hidden\nsrc/main.rs:2:     let needle = 1;\nsrc/nested/util.rs:1: // Needle here"
    );

    let (t, _) = ok_text(
        "grep",
        json!({"pattern": "needle", "path": "src/main.rs", "context": 1}),
        dir.path(),
    );
    assert_eq!(
        t,
        "main.rs-1- fn main() {\nmain.rs:2:     let needle = 1;\nmain.rs-3- }"
    );

    let (t, _) = ok_text(
        "grep",
        json!({"pattern": "fn main(", "literal": true}),
        dir.path(),
    );
    assert_eq!(t, "src/main.rs:1: fn main() {");
    assert!(
        run("grep", json!({"pattern": "fn main("}), dir.path()).is_err(),
        "an invalid regex is an error"
    );

    let (t, _) = ok_text("grep", json!({"pattern": "absent-word"}), dir.path());
    assert_eq!(t, "No matches found");
}

#[test]
fn grep_limits_matches_and_cuts_long_lines() {
    let dir = tmp();
    let body: String = (1..=10).map(|i| format!("hit {i}\n")).collect();
    fs::write(dir.path().join("many.txt"), body).unwrap();
    fs::write(
        dir.path().join("wide.txt"),
        format!("hit {}\n", "x".repeat(700)),
    )
    .unwrap();

    let (t, details) = ok_text("grep", json!({"pattern": "hit", "limit": 3}), dir.path());
    assert_eq!(
        t,
        "many.txt:1: hit 1\nmany.txt:2: hit 2\nmany.txt:3: hit 3\n\n[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    );
    assert_eq!(details, json!({"matchLimitReached": 3}));

    let (t, details) = ok_text(
        "grep",
        json!({"pattern": "hit", "path": "wide.txt"}),
        dir.path(),
    );
    assert_eq!(
        t,
        format!(
            "wide.txt:1: hit {}... [truncated]\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]",
            "x".repeat(496)
        )
    );
    assert_eq!(details, json!({"linesTruncated": true}));
}
