//! The interactive mode (`pi-hooks`, `pi-hooks chat`) driven as a person drives it: the real
//! binary in a pseudo-terminal (tests/src/pty.rs), keys typed into it, the screen read back
//! through a terminal emulator. Covers streamed text, every dialog kind (and a timeout with
//! its countdown), statuses and widgets, slash completion of a plugin command, `/reload`
//! and `--watch` after a rebuild, Ctrl+C during a run, every way out (each leaving the
//! terminal as it was found), resizing, `!` commands and a plugin's `user_bash`, and a
//! plugin's stderr shown as a conversation line.

use std::path::{Path, PathBuf};
use std::time::Duration;

use pi_hooks_tests::fake_openai::{FakeOpenAi, Gate, Reply, chunk, usage_chunk};
use pi_hooks_tests::pty::{Pty, WAIT, keys, sandbox_command};
use pi_hooks_tests::reload::{define_string, replace_by_rename};
use pi_hooks_tests::{Sandbox, c_example_plugin, c_fixture, compile_c_text};
use serde_json::json;

const ROWS: u16 = 30;
const COLS: u16 = 100;
/// How long a quit may take (the agent thread's shutdown, plugins' `session_shutdown`).
const EXIT: Duration = Duration::from_secs(20);

/// The ui-tour example (plugins/examples/ui-tour), compiled into the sandbox.
fn ui_tour(sandbox: &Sandbox) -> PathBuf {
    c_example_plugin(&sandbox.lib(), "ui-tour", "ui_tour")
}

/// A scripted model whose one model is named `script` (after the file).
fn script(sandbox: &Sandbox, turns: serde_json::Value) -> String {
    let path = sandbox.script(&json!({ "turns": turns }));
    path.to_str().expect("UTF-8 path").to_owned()
}

/// Starts `pi-hooks args…` (no session file, no plugin folders, the scripted model) and
/// waits for its first frame.
fn start(sandbox: &Sandbox, args: &[&str]) -> Pty {
    let script = script(sandbox, json!([{"text": "answer to ${PROMPT}"}]));
    let mut all = vec!["--no-session", "--no-hooks", "--script", &script];
    all.extend_from_slice(args);
    let pty = Pty::start(sandbox, &all, ROWS, COLS);
    wait_ready(&pty, "script");
    pty
}

/// Waits until the footer's model line (`model`, right-aligned) is the last row, or the one
/// above a status line.
fn wait_ready(pty: &Pty, model: &str) {
    pty.wait_for(
        &format!("the footer naming the model {model:?}"),
        WAIT,
        |screen| {
            screen
                .lines()
                .rev()
                .take(2)
                .any(|row| row.ends_with(&format!("  {model}")))
        },
    );
}

/// Whether `row` is one of the rules around the editor or a dialog.
fn is_rule(row: &str) -> bool {
    !row.is_empty() && row.chars().all(|c| c == '─')
}

/// The rows of the screen between the editor's two rules (the last two rules).
fn editor_rows(rows: &[String]) -> Vec<String> {
    let rules: Vec<usize> = (0..rows.len()).filter(|&n| is_rule(&rows[n])).collect();
    match rules[..] {
        [.., top, bottom] => rows[top + 1..bottom].to_vec(),
        _ => Vec::new(),
    }
}

/// The editor's text as shown (its rows joined).
fn editor_text(screen: &str) -> String {
    let rows: Vec<String> = screen.lines().map(str::to_owned).collect();
    editor_rows(&rows).join("\n")
}

/// Sends `/quit` and checks a clean exit with the terminal given back.
fn quit(mut pty: Pty) {
    pty.type_text("/quit");
    pty.wait_for("/quit in the editor", WAIT, |s| editor_text(s) == "/quit");
    pty.send(keys::ENTER.as_bytes());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
    pty.assert_terminal_restored();
}

/// A C plugin with a command `/ver` that notifies `ver says <version>`, built as version
/// `version` into `<dir>/libver_probe.so`.
fn ver_plugin(dir: &Path, version: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("plugin folder");
    let code = r#"#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus ver(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args;
    return host->ui->notify(ctx, pi_str("ver says " VERSION), PI_NOTIFY_INFO);
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return h->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("ver"),
        .handler = ver, .description = pi_str("Say the plugin's version")));
}
PI_HOOKS_PLUGIN("ver-probe", VERSION, "says its version", init, NULL);
"#;
    compile_c_text(
        dir,
        "libver_probe",
        code,
        &[&define_string("VERSION", version)],
    )
}

#[test]
fn a_prompt_streams_its_answer_while_the_run_goes_on() {
    let gate = Gate::new();
    let held = gate.clone();
    let server = FakeOpenAi::start(move |_| {
        Reply::Held(
            vec![
                chunk(json!({"role": "assistant", "content": ""}), None),
                chunk(json!({"content": "Streaming has"}), None),
            ],
            held.clone(),
            vec![
                chunk(json!({"content": " reached its end."}), None),
                chunk(json!({}), Some("stop")),
                usage_chunk(1200, 7),
            ],
        )
    });
    let sandbox = Sandbox::new();
    let mut command = sandbox_command(
        &sandbox,
        &[
            "--no-session",
            "--no-hooks",
            "--provider",
            "local",
            "--model",
            "m",
            "--base-url",
            &server.base_url,
        ],
    );
    command.env("OPENAI_API_KEY", "sk-test-key");
    let mut pty = Pty::spawn(command, ROWS, COLS);
    wait_ready(&pty, "m");
    pty.assert_terminal_taken();

    pty.type_text("Say hello");
    pty.wait_for("the prompt in the editor", WAIT, |s| {
        editor_text(s) == "Say hello"
    });
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for(
        "the first chunk shown while the stream is held",
        WAIT,
        |s| s.contains("Streaming has") && s.contains("Working... (Esc to interrupt)"),
    );
    let screen = pty.screen_text();
    assert!(screen.contains("› Say hello"), "{screen}");
    assert!(!screen.contains("reached its end"), "{screen}");
    assert_eq!(editor_text(&screen), "", "the editor empties on send");

    gate.open();
    pty.wait_for("the whole answer, the run over", WAIT, |s| {
        s.contains("Streaming has reached its end.") && !s.contains("Working...")
    });
    pty.wait_for("the usage in the footer", WAIT, |s| s.contains("↑1.2k ↓7"));
    quit(pty);
}

#[test]
fn dialogs_are_answered_cancelled_and_timed_out() {
    let sandbox = Sandbox::new();
    let tour = ui_tour(&sandbox);
    let mut pty = start(&sandbox, &["-e", tour.to_str().unwrap()]);

    // Every dialog answered by keys.
    pty.type_text("/tour full\r");
    pty.wait_for_text("Pick a colour");
    let screen = pty.screen_text();
    assert!(
        screen.contains("→ red") && screen.contains("  green") && screen.contains("  blue"),
        "{screen}"
    );
    pty.send(keys::DOWN.as_bytes());
    pty.wait_for_text("→ green");
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for_text("Say yes within 5 seconds");
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for_text("Your name");
    assert!(pty.screen_text().contains("type a name"), "the placeholder");
    pty.type_text("Ada");
    pty.wait_for("Ada in the input", WAIT, |s| {
        s.lines().any(|row| row == "Ada")
    });
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for_text("Write a note");
    // Enter is a new line in the editor dialog; Ctrl+S submits.
    pty.send(keys::ENTER.as_bytes());
    pty.type_text("more");
    pty.wait_for("the note's second line", WAIT, |s| {
        s.lines().any(|row| row == "more")
    });
    pty.send(keys::CTRL_S.as_bytes());
    pty.wait_for_text("tour answers: select=green confirm=yes input=Ada editor=first line|more");
    pty.wait_for_text("+-- tour card --");

    // Esc cancels the select; the confirm is left to time out (its countdown in the title);
    // Alt+Enter submits the editor as prefilled.
    pty.type_text("/tour full\r");
    pty.wait_for_text("Pick a colour");
    pty.send(keys::ESC.as_bytes());
    let countdown = |screen: &str| -> Option<u32> {
        screen.lines().find_map(|row| {
            let seconds = row.strip_prefix("Keep going? (")?.strip_suffix("s)")?;
            seconds.parse().ok()
        })
    };
    pty.wait_for("the confirm's countdown", WAIT, |s| {
        countdown(s).is_some_and(|n| (1..=5).contains(&n))
    });
    let first = countdown(&pty.screen_text()).unwrap_or(5);
    if first > 1 {
        pty.wait_for("the countdown going down", WAIT, |s| {
            countdown(s).is_some_and(|n| n < first)
        });
    }
    pty.wait_for_text("Your name");
    pty.type_text("Bob\r");
    pty.wait_for_text("Write a note");
    pty.send(keys::ALT_ENTER.as_bytes());
    pty.wait_for_text("tour answers: select=none confirm=no input=Bob editor=first line");
    quit(pty);
}

/// Whether the screen shows ui-tour's widgets, editor, footer and status where pi puts them:
/// the widget above, the empty editor between its rules, the widget below, the directory,
/// the model line, the status line last.
fn tour_layout(screen: &str, project: &str) -> bool {
    let rows: Vec<&str> = screen.lines().collect();
    let Some(above) = rows
        .iter()
        .position(|r| *r == "tour: a widget above the editor")
    else {
        return false;
    };
    let last = rows.len() - 1;
    above + 8 == last
        && rows[above + 1] == "tour: its second line"
        && is_rule(rows[above + 2])
        && rows[above + 3].is_empty()
        && is_rule(rows[above + 4])
        && rows[above + 5] == "tour: a widget below the editor"
        && rows[above + 6] == project
        && rows[above + 7].ends_with("  script")
        && rows[last] == "tour: done"
}

#[test]
fn statuses_widgets_and_the_title_surround_the_editor() {
    let sandbox = Sandbox::new();
    let tour = ui_tour(&sandbox);
    let project = sandbox.project().display().to_string();
    let mut pty = start(&sandbox, &["-e", tour.to_str().unwrap()]);
    pty.type_text("/tour quick\r");
    pty.wait_for(
        "the widgets, editor, footer and status in place",
        WAIT,
        |s| tour_layout(s, &project),
    );
    pty.wait_for(
        "the notices and the card drawn by its renderer",
        WAIT,
        |s| {
            s.contains(
                "Warning: tour: a warning\n\nError: tour: an error\n\ntour answers: no dialogs",
            ) && s.contains("+-- tour card --\n| the tour is over\n+----------------")
        },
    );
    assert_eq!(pty.title().as_deref(), Some("pi-hooks tour"));

    pty.type_text("/tour clear\r");
    pty.wait_for("the status and widgets gone", WAIT, |s| {
        let rows: Vec<&str> = s.lines().collect();
        let last = rows.len() - 1;
        !s.contains("tour: done")
            && !s.contains("tour: a widget")
            && rows[last].ends_with("  script")
            && rows[last - 1] == project
            && is_rule(rows[last - 2])
    });
    quit_keeping(&mut pty);
    assert_eq!(
        pty.title(),
        None,
        "the title from before the session is back"
    );
}

#[test]
fn a_title_with_bidi_controls_is_shown_without_them() {
    let sandbox = Sandbox::new();
    let plugin = c_fixture(&sandbox.lib(), "title_bidi", &[]);
    let mut pty = start(&sandbox, &["-e", plugin.to_str().unwrap()]);
    pty.type_text("/title now\r");
    let deadline = std::time::Instant::now() + WAIT;
    while pty.title().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    // U+202E would show "report" + "exe.txt" reversed; U+2067 and U+200B are invisible.
    assert_eq!(
        pty.title().as_deref(),
        Some("reporttxt.exe xy[2J done"),
        "{}",
        pty.screen_text()
    );
    quit_keeping(&mut pty);
}

#[test]
fn a_plugin_command_is_completed_and_run() {
    let sandbox = Sandbox::new();
    let tour = ui_tour(&sandbox);
    let mut pty = start(&sandbox, &["-e", tour.to_str().unwrap()]);
    pty.type_text("/to");
    pty.wait_for("the command suggested", WAIT, |s| {
        s.lines().any(|r| {
            r.starts_with("→ /tour") && r.ends_with("Show every UI element a plugin can draw")
        })
    });
    pty.send(keys::TAB.as_bytes());
    pty.wait_for("the command taken, its arguments suggested", WAIT, |s| {
        editor_text(s) == "/tour"
            && s.contains("→ quick            no dialogs")
            && s.contains("  full             every dialog")
            && s.contains("  clear            remove the status and widgets")
    });
    pty.type_text("q");
    pty.wait_for("only quick suggested", WAIT, |s| {
        editor_text(s) == "/tour q" && s.contains("→ quick") && !s.contains("every dialog")
    });
    pty.send(keys::TAB.as_bytes());
    pty.wait_for("the argument taken", WAIT, |s| {
        editor_text(s) == "/tour quick"
    });
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for_text("tour answers: no dialogs");
    pty.wait_for("the status line", WAIT, |s| s.ends_with("tour: done"));
    assert_eq!(editor_text(&pty.screen_text()), "", "the editor empties");
    quit(pty);
}

#[test]
fn reload_after_a_rebuild_runs_the_new_version() {
    let sandbox = Sandbox::new();
    let plugin = ver_plugin(&sandbox.lib(), "1.0.0");
    let mut pty = start(&sandbox, &["-e", plugin.to_str().unwrap()]);
    pty.type_text("/ver\r");
    pty.wait_for_text("ver says 1.0.0");

    let v2 = ver_plugin(&sandbox.root().join("v2"), "2.0.0");
    replace_by_rename(&v2, &plugin);
    pty.type_text("/reload\r");
    pty.wait_for_text(&format!(
        "pi-hooks:   reloaded ver-probe 2.0.0 from {}",
        plugin.display()
    ));
    pty.wait_for_text("pi-hooks: reloaded 1 plugin in");
    pty.type_text("/ver\r");
    pty.wait_for_text("ver says 2.0.0");
    quit(pty);
}

#[test]
fn watch_shows_its_reload_line_in_the_conversation() {
    let sandbox = Sandbox::new();
    let plugin = ver_plugin(&sandbox.lib(), "1.0.0");
    let mut pty = start(&sandbox, &["--watch", "-e", plugin.to_str().unwrap()]);
    let v2 = ver_plugin(&sandbox.root().join("v2"), "2.0.0");
    replace_by_rename(&v2, &plugin);
    pty.wait_for_text(&format!(
        "reloaded ver-probe 2.0.0 from {}",
        plugin.display()
    ));
    let rows = pty.rows();
    let line = rows
        .iter()
        .position(|r| r.contains("reloaded ver-probe 2.0.0"))
        .unwrap_or_default();
    let editor = rows.iter().position(|r| is_rule(r)).unwrap_or_default();
    assert!(
        line < editor,
        "the line is in the conversation:\n{}",
        rows.join("\n")
    );
    pty.type_text("/ver\r");
    pty.wait_for_text("ver says 2.0.0");
    quit(pty);
}

/// The state letter of process `pid` in /proc (`None`: no such process).
fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S ...`: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

#[test]
fn ctrl_c_aborts_a_run_and_the_session_goes_on() {
    let sandbox = Sandbox::new();
    let script = script(
        &sandbox,
        json!([
            {"toolCalls": [{"name": "bash", "arguments": {"command": "${PROMPT}"}}]},
            {"text": "ran: ${PROMPT}"}
        ]),
    );
    let mut pty = Pty::start(
        &sandbox,
        &["--no-session", "--no-hooks", "--script", &script],
        ROWS,
        COLS,
    );
    wait_ready(&pty, "script");
    let pid_file = sandbox.root().join("sleep.pid");
    pty.type_text(&format!(
        "echo $$ > {}; exec sleep 30\r",
        pid_file.display()
    ));
    pty.wait_for("the tool running", WAIT, |s| {
        s.contains("… $ echo $$") && s.contains("Working...")
    });
    let deadline = std::time::Instant::now() + WAIT;
    let pid: u32 = loop {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            && std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| c.starts_with("sleep"))
        {
            break pid;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the sleep never started:\n{}",
            pty.screen_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    };

    pty.send(keys::CTRL_C.as_bytes());
    pty.wait_for("the run aborted", WAIT, |s| {
        s.contains("Operation aborted") && !s.contains("Working...")
    });
    let deadline = std::time::Instant::now() + WAIT;
    while process_state(pid).is_some_and(|state| state != 'Z') {
        assert!(
            std::time::Instant::now() < deadline,
            "sleep ({pid}) still runs after the abort"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(pty.running(), "one Ctrl+C does not quit");

    pty.type_text("echo again\r");
    pty.wait_for_text("ran: echo again");
    quit(pty);
}

#[test]
fn ctrl_c_twice_quits_and_restores_the_terminal() {
    let sandbox = Sandbox::new();
    let mut pty = start(&sandbox, &[]);
    pty.assert_terminal_taken();
    pty.type_text("some draft");
    pty.wait_for("the draft", WAIT, |s| editor_text(s) == "some draft");
    pty.send(keys::CTRL_C.as_bytes());
    pty.wait_for("the draft cleared", WAIT, |s| editor_text(s).is_empty());
    pty.send(format!("{}{}", keys::CTRL_C, keys::CTRL_C).as_bytes());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0);
    pty.assert_terminal_restored();
}

#[test]
fn quit_restores_the_terminal_and_says_where_the_session_is() {
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "noted"}]));
    let mut pty = Pty::start(&sandbox, &["--no-hooks", "--script", &script], ROWS, COLS);
    wait_ready(&pty, "script");
    pty.type_text("remember this\r");
    pty.wait_for_text("noted");
    quit_keeping(&mut pty);
    let screen = pty.contents();
    assert!(
        screen.contains("pi-hooks: session saved in ")
            && screen.contains("(continue it with `pi-hooks chat --continue`)"),
        "{screen}"
    );
}

/// `/quit`, for a test that reads the screen afterwards.
fn quit_keeping(pty: &mut Pty) {
    pty.type_text("/quit\r");
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0, "{}", pty.screen_text());
    pty.assert_terminal_restored();
}

#[test]
fn ctrl_d_on_an_empty_editor_quits() {
    let sandbox = Sandbox::new();
    let mut pty = start(&sandbox, &[]);
    pty.send(keys::CTRL_D.as_bytes());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0);
    pty.assert_terminal_restored();
}

#[test]
fn sigterm_quits_with_143_and_restores_the_terminal() {
    let sandbox = Sandbox::new();
    let mut pty = start(&sandbox, &[]);
    pty.type_text("unsent");
    pty.wait_for("the draft", WAIT, |s| editor_text(s) == "unsent");
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pty.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 143);
    pty.assert_terminal_restored();
}

#[test]
fn resizing_redraws_at_the_new_size() {
    let sandbox = Sandbox::new();
    let mut pty = start(&sandbox, &[]);
    pty.type_text("typed before");
    pty.wait_for("the draft", WAIT, |s| editor_text(s) == "typed before");
    for (rows, cols) in [(20u16, 60u16), (40, 120)] {
        pty.resize(rows, cols);
        pty.wait_for(&format!("the layout at {rows}x{cols}"), WAIT, |s| {
            let lines: Vec<&str> = s.lines().collect();
            let last = lines.len() - 1;
            lines.len() == rows as usize
                && lines[last].ends_with("  script")
                && lines[last].chars().count() == cols as usize
                && is_rule(lines[last - 2])
                && lines[last - 2].chars().count() == cols as usize
                && lines[last - 3] == "typed before"
        });
    }
    pty.send(keys::CTRL_U.as_bytes());
    pty.wait_for("the draft deleted", WAIT, |s| editor_text(s).is_empty());
    quit(pty);
}

/// A C plugin whose `user_bash` handler answers the command `ask-plugin` itself and leaves
/// every other command to the shell.
fn user_bash_plugin(dir: &Path) -> PathBuf {
    let code = r#"#include <string.h>
#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus on_bash(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    PiStr command = {0};
    (void)ud; (void)ctx;
    host->values->as_str(host->values->get(event, pi_str("command")), &command);
    if (command.len == 10 && memcmp(command.ptr, "ask-plugin", 10) == 0)
        return host->results->set_json(result, pi_str(
            "{\"result\":{\"output\":\"from plugin\",\"exitCode\":0,\"cancelled\":false,\"truncated\":false}}"));
    return PI_OK;
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return h->registry->on(plugin, pi_str("user_bash"), on_bash, NULL);
}
PI_HOOKS_PLUGIN("bash-answer", "1.0.0", "answers one ! command", init, NULL);
"#;
    compile_c_text(dir, "libbash_answer", code, &[])
}

#[test]
fn bang_commands_run_in_the_shell_or_are_answered_by_a_plugin() {
    let sandbox = Sandbox::new();
    let plugin = user_bash_plugin(&sandbox.lib());
    let mut pty = start(&sandbox, &["-e", plugin.to_str().unwrap()]);
    pty.type_text("!echo hi\r");
    pty.wait_for("the command and its output", WAIT, |s| {
        s.contains("! echo hi\n  hi")
    });
    pty.type_text("!ask-plugin\r");
    pty.wait_for("the plugin's answer", WAIT, |s| {
        s.contains("! ask-plugin\n  from plugin")
    });
    pty.type_text("!exit 3\r");
    pty.wait_for("the exit code", WAIT, |s| {
        s.contains("! exit 3\n  (exit 3)")
    });
    let screen = pty.screen_text();
    assert!(
        !screen.contains("not found"),
        "the shell never ran ask-plugin:\n{screen}"
    );
    quit(pty);
}

#[test]
fn a_plugins_stderr_is_a_conversation_line() {
    let sandbox = Sandbox::new();
    let code = r#"#include <stdio.h>
#include "pi_hooks.h"
static PiStatus shout(void *ud, PiStr args, PiContext *ctx) {
    (void)ud; (void)args; (void)ctx;
    fprintf(stderr, "shout: written to stderr\n");
    fflush(stderr);
    return PI_OK;
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    return h->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("shout"),
        .handler = shout, .description = pi_str("Write to stderr")));
}
PI_HOOKS_PLUGIN("shout", "1.0.0", "writes to stderr", init, NULL);
"#;
    let plugin = compile_c_text(&sandbox.lib(), "libshout", code, &[]);
    let mut pty = start(&sandbox, &["-e", plugin.to_str().unwrap()]);
    pty.type_text("/shout\r");
    pty.wait_for_text("shout: written to stderr");
    // Drawn once, in the conversation, with the editor and footer intact below it.
    pty.wait_for("the screen settled", WAIT, |s| editor_text(s).is_empty());
    let rows = pty.rows();
    let screen = rows.join("\n");
    let lines: Vec<usize> = (0..rows.len())
        .filter(|&n| rows[n].contains("shout: written"))
        .collect();
    assert_eq!(lines.len(), 1, "{screen}");
    assert_eq!(rows[lines[0]], "shout: written to stderr", "{screen}");
    let editor = rows.iter().position(|r| is_rule(r)).expect("the editor");
    assert!(lines[0] < editor, "{screen}");
    assert!(rows[rows.len() - 1].ends_with("  script"), "{screen}");
    quit(pty);
}

/// The checks of `assert_terminal_restored` can fail: a program that leaves raw mode, the
/// alternate screen, a hidden cursor and bracketed paste on is caught after its exit.
#[test]
fn the_harness_sees_a_terminal_left_in_raw_mode() {
    let mut command = portable_pty::CommandBuilder::new("sh");
    command.args([
        "-c",
        r"stty raw -echo; printf '\033[?1049h\033[?2004h\033[?25lleft behind'",
    ]);
    let mut pty = Pty::spawn(command, ROWS, COLS);
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0);
    assert_eq!(pty.cooked_flags(), (false, false));
    pty.with_screen(|s| {
        assert!(s.alternate_screen() && s.hide_cursor() && s.bracketed_paste());
    });
    let restored = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pty.assert_terminal_restored()
    }));
    assert!(restored.is_err());
}

#[test]
fn a_multi_line_paste_keeps_its_lines() {
    let sandbox = Sandbox::new();
    let mut pty = start(&sandbox, &[]);
    // Terminals send a pasted line break as CR (some as CR LF).
    pty.type_text("\u{1b}[200~line one\rline two\r\nline three\u{1b}[201~");
    pty.wait_for("three lines in the editor", WAIT, |s| {
        editor_text(s) == "line one\nline two\nline three"
    });
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for("the prompt sent as written", WAIT, |s| {
        s.contains("› line one\n  line two\n  line three")
    });
    pty.wait_for_text("answer to line one");
    quit(pty);
}

/// A C plugin with a command `/ask` that asks two selects, neither with a timeout.
fn two_dialogs_plugin(dir: &Path) -> PathBuf {
    let code = r#"#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus ask(void *ud, PiStr args, PiContext *ctx) {
    PiStr options[] = {pi_str("one"), pi_str("two")};
    int64_t picked = -1;
    (void)ud; (void)args;
    host->ui->select(ctx, pi_str("First question"), options, 2, NULL, &picked);
    host->ui->select(ctx, pi_str("Second question"), options, 2, NULL, &picked);
    return host->ui->notify(ctx, pi_str("both asked"), PI_NOTIFY_INFO);
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return h->registry->register_command(plugin, &PI_COMMAND(.name = pi_str("ask"),
        .handler = ask, .description = pi_str("Ask two questions")));
}
PI_HOOKS_PLUGIN("two-dialogs", "1.0.0", "asks two questions", init, NULL);
"#;
    compile_c_text(dir, "libtwo_dialogs", code, &[])
}

#[test]
fn quitting_while_a_plugin_asks_ends_at_once() {
    let sandbox = Sandbox::new();
    let plugin = two_dialogs_plugin(&sandbox.lib());
    let mut pty = start(&sandbox, &["-e", plugin.to_str().unwrap()]);
    pty.type_text("/ask\r");
    pty.wait_for_text("First question");
    // The first Ctrl+C cancels the first question (the plugin asks the second at once),
    // the second quits: the second question must not keep the process alive.
    pty.send(format!("{}{}", keys::CTRL_C, keys::CTRL_C).as_bytes());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0);
    pty.assert_terminal_restored();
}

#[test]
fn a_hang_up_ends_the_session() {
    // With a session file: its "session saved" line is written to a terminal that is gone.
    let sandbox = Sandbox::new();
    let script = script(&sandbox, json!([{"text": "noted"}]));
    let mut pty = Pty::start(&sandbox, &["--no-hooks", "--script", &script], ROWS, COLS);
    wait_ready(&pty, "script");
    pty.type_text("remember this\r");
    pty.wait_for_text("noted");
    pty.hang_up();
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 128 + 1, "SIGHUP's exit code");
}

#[test]
fn a_hang_up_ends_the_session_when_sighup_is_not_sent() {
    // A parent that ignores SIGHUP and does not pass it on (nohup, a shell's trap): the
    // terminal is gone all the same.
    let sandbox = Sandbox::new();
    let code_file = sandbox.root().join("exit-code");
    let script = script(&sandbox, json!([{"text": "hi"}]));
    let mut command = sandbox_command(
        &sandbox,
        &["--no-session", "--no-hooks", "--script", &script],
    );
    let wrapper = format!(
        r#"trap "" HUP; "$0" "$@"; echo $? > '{}'"#,
        code_file.display()
    );
    command
        .get_argv_mut()
        .splice(0..0, ["sh".into(), "-c".into(), wrapper.into()]);
    let mut pty = Pty::spawn(command, ROWS, COLS);
    wait_ready(&pty, "script");
    pty.hang_up();
    let status = pty.wait_exit(EXIT);
    let code = std::fs::read_to_string(&code_file).unwrap_or_else(|e| {
        panic!("the wrapper wrote no exit code ({e}); it ended with {status:?}")
    });
    assert_eq!(code.trim(), "129");
}

#[test]
fn a_dialog_is_shown_whole_in_a_small_terminal() {
    // 10 rows: the widgets (3), the select (7) and the footer (3) do not all fit; the
    // question and its options must.
    let sandbox = Sandbox::new();
    let tour = ui_tour(&sandbox);
    let script = script(&sandbox, json!([{"text": "ok"}]));
    let tour = tour.to_str().unwrap();
    let args = [
        "--no-session",
        "--no-hooks",
        "--script",
        &script,
        "-e",
        tour,
    ];
    let mut pty = Pty::start(&sandbox, &args, 10, 60);
    wait_ready(&pty, "script");
    pty.type_text("/tour full\r");
    pty.wait_for("the whole select", WAIT, |s| {
        s.contains("Pick a colour\n→ red\n  green\n  blue\n↑↓ navigate · Enter select · Esc cancel")
    });
    pty.send(keys::DOWN.as_bytes());
    pty.wait_for_text("→ green");
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for("the whole confirm", WAIT, |s| {
        s.contains("Say yes within 5 seconds\n→ Yes\n  No")
    });
    pty.send(format!("{}{}", keys::CTRL_C, keys::CTRL_C).as_bytes());
    let status = pty.wait_exit(EXIT);
    assert_eq!(status.exit_code(), 0);
    pty.assert_terminal_restored();
}

/// pi 0.73.1's rule for plugin shortcuts: a key of one of its seventeen reserved built-in
/// actions (Ctrl+C, Ctrl+P, ...) is skipped with "conflicts with built-in shortcut. Skipping.";
/// a key of another built-in action (Ctrl+V pastes an image) is taken with a warning that
/// names the action; the user's `keybindings.json` decides which keys those are.
#[test]
fn a_plugin_shortcut_runs_and_a_reserved_key_is_refused() {
    let sandbox = Sandbox::new();
    let tour = ui_tour(&sandbox);
    // The user moved the thinking toggle from Ctrl+T to F9: Ctrl+T is only the tree's
    // "hide tool results" filter now, which is not reserved.
    std::fs::create_dir_all(sandbox.agent_dir()).unwrap();
    std::fs::write(
        sandbox.agent_dir().join("keybindings.json"),
        r#"{"app.thinking.toggle": "f9"}"#,
    )
    .unwrap();
    let greedy = compile_c_text(
        &sandbox.lib(),
        "greedy_keys",
        r#"#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus said(PiContext *ctx, const char *text) {
    return host->ui->notify(ctx, pi_str(text), PI_NOTIFY_INFO);
}
static PiStatus on_c(void *ud, PiContext *ctx) { (void)ud; return said(ctx, "greedy: ctrl+c"); }
static PiStatus on_p(void *ud, PiContext *ctx) { (void)ud; return said(ctx, "greedy: ctrl+p"); }
static PiStatus on_v(void *ud, PiContext *ctx) { (void)ud; return said(ctx, "greedy: ctrl+v"); }
static PiStatus on_t(void *ud, PiContext *ctx) { (void)ud; return said(ctx, "greedy: ctrl+t"); }
static PiStatus on_9(void *ud, PiContext *ctx) { (void)ud; return said(ctx, "greedy: f9"); }
static PiStatus key(PiPlugin *plugin, const char *name, PiShortcutHandler handler) {
    return host->registry->register_shortcut(plugin, &(PiShortcutDef){
        .struct_size = sizeof(PiShortcutDef), .key = pi_str(name), .handler = handler});
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    PiStatus status = key(plugin, "ctrl+c", on_c);
    if (status == PI_OK) status = key(plugin, "ctrl+p", on_p);
    if (status == PI_OK) status = key(plugin, "ctrl+v", on_v);
    if (status == PI_OK) status = key(plugin, "ctrl+t", on_t);
    if (status == PI_OK) status = key(plugin, "f9", on_9);
    return status;
}
PI_HOOKS_PLUGIN("greedy-keys", "1.0.0", "wants pi's keys", init, NULL);
"#,
        &[],
    );
    let mut pty = start(
        &sandbox,
        &["-e", tour.to_str().unwrap(), "-e", greedy.to_str().unwrap()],
    );
    let path = greedy.to_str().unwrap();
    // pi's warnings, in pi's words and order (one per shortcut that meets a built-in key).
    for line in [
        format!(
            "Extension shortcut 'ctrl+c' from {path} conflicts with built-in shortcut. Skipping."
        ),
        format!(
            "Extension shortcut 'ctrl+p' from {path} conflicts with built-in shortcut. Skipping."
        ),
        format!(
            "Extension shortcut conflict: 'ctrl+v' is built-in shortcut for app.clipboard.pasteImage and {path}. Using {path}."
        ),
        format!(
            "Extension shortcut conflict: 'ctrl+t' is built-in shortcut for app.tree.filter.noTools and {path}. Using {path}."
        ),
        format!("Extension shortcut 'f9' from {path} conflicts with built-in shortcut. Skipping."),
    ] {
        // The line may wrap: compared without the white space the wrapping moves.
        let wanted: String = line.split_whitespace().collect();
        pty.wait_for(&line, Duration::from_secs(20), |screen| {
            screen
                .split_whitespace()
                .collect::<String>()
                .contains(&wanted)
        });
    }
    pty.send(b"\x11"); // Ctrl+Q, ui-tour's shortcut
    pty.wait_for_text("tour: ctrl+q pressed");
    pty.send(b"\x16"); // Ctrl+V: the plugin's, as in pi
    pty.wait_for_text("greedy: ctrl+v");
    pty.send(b"\x14"); // Ctrl+T: free since keybindings.json moved the thinking toggle
    pty.wait_for_text("greedy: ctrl+t");
    pty.send(b"\x10"); // Ctrl+P: reserved, the plugin's handler never runs
    std::thread::sleep(Duration::from_millis(300));
    assert!(!pty.screen_text().contains("greedy: ctrl+p"));
    assert_eq!(
        editor_text(&pty.screen_text()),
        "",
        "the keys typed nothing"
    );
    quit(pty);
}

#[test]
fn model_switches_with_a_dialog_or_by_name() {
    let sandbox = Sandbox::new();
    let script = sandbox.script(&json!({
        "models": [{"id": "small"}, {"id": "large"}],
        "turns": [{"text": "answer from ${PROMPT}"}]
    }));
    let mut pty = Pty::start(
        &sandbox,
        &[
            "--no-session",
            "--no-hooks",
            "--script",
            script.to_str().unwrap(),
        ],
        ROWS,
        COLS,
    );
    wait_ready(&pty, "small");
    pty.type_text("/model");
    pty.wait_for("/model in the editor", WAIT, |s| editor_text(s) == "/model");
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for("the model dialog", WAIT, |s| {
        s.contains("Select a model")
            && s.contains("→ scripted/small")
            && s.contains("  scripted/large")
    });
    pty.send(keys::DOWN.as_bytes());
    pty.send(keys::ENTER.as_bytes());
    pty.wait_for_text("Model: large");
    wait_ready(&pty, "large");
    pty.type_text("/model small");
    pty.wait_for("/model small in the editor", WAIT, |s| {
        editor_text(s) == "/model small"
    });
    pty.send(keys::ENTER.as_bytes());
    wait_ready(&pty, "small");
    quit(pty);
}

/// pi 0.73.1's `ctx.fork` from a plugin command in its terminal: `skipConversationRestore`
/// is ignored (the session goes on from the forked file), the user message forked off goes
/// back into the editor, and the conversation is drawn again without the removed turn.
#[test]
fn a_plugin_command_s_fork_redraws_and_puts_the_message_back_into_the_editor() {
    let sandbox = Sandbox::new();
    let go = pi_hooks_tests::c_fixture(&sandbox.lib(), "session_go", &[]);
    // A plugin that asks pi not to restore the conversation (pi 0.73.1 ignores it).
    let skipper = compile_c_text(
        &sandbox.lib(),
        "skipper",
        r#"#include "pi_hooks.h"
static const PiHostApi *host;
static PiStatus before_fork(void *ud, const PiValue *event, PiContext *ctx, PiResult *result) {
    (void)ud; (void)event; (void)ctx;
    return host->results->set_bool(result, pi_str("skipConversationRestore"), true);
}
static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    host = h;
    return host->registry->on(plugin, pi_str("session_before_fork"), before_fork, NULL);
}
PI_HOOKS_PLUGIN("skipper", "1.0.0", "asks to skip the conversation restore", init, NULL);
"#,
        &[],
    );
    let session = sandbox.root().join("s.jsonl");
    let script = script(&sandbox, json!([{"text": "answer to ${PROMPT}"}]));
    let mut pty = Pty::start(
        &sandbox,
        &[
            "--session",
            session.to_str().unwrap(),
            "--no-hooks",
            "--script",
            &script,
            "-e",
            go.to_str().unwrap(),
            "-e",
            skipper.to_str().unwrap(),
        ],
        ROWS,
        COLS,
    );
    wait_ready(&pty, "script");
    pty.type_text("first question\r");
    // The run over, so that the second question is a prompt and not a message queued for
    // the run's next turn.
    pty.wait_for("the first answer, the run over", WAIT, |s| {
        s.contains("answer to first question") && !s.contains("Working...")
    });
    pty.type_text("second question\r");
    pty.wait_for("the second answer, the run over", WAIT, |s| {
        s.contains("answer to second question") && !s.contains("Working...")
    });
    // The prompt's job ends just after the run: a command typed before would run beside it.
    std::thread::sleep(Duration::from_millis(500));
    // The id of the second user message, from the session file.
    let text = std::fs::read_to_string(&session).unwrap();
    let second = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|e| {
            e["message"]["role"] == "user"
                && e["message"]["content"][0]["text"] == "second question"
        })
        .expect("the second user message")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    pty.type_text(&format!("/go fork {second}\r"));
    pty.wait_for_text("Forked to new session");
    pty.wait_for("the forked-off message in the editor", WAIT, |s| {
        editor_text(s) == "second question"
    });
    let screen = pty.screen_text();
    assert!(
        !screen.contains("answer to second question"),
        "the removed turn is gone from the screen:\n{screen}"
    );
    assert!(screen.contains("answer to first question"), "{screen}");
    pty.send(keys::CTRL_C.as_bytes()); // clears the editor
    pty.wait_for("an empty editor", WAIT, |s| editor_text(s).is_empty());
    quit(pty);
}
