//! Load reports as text for a person and as JSON for scripts.
//!
//! Text: every path, name, version, description, registration name, error and warning a
//! repository or a plugin controls goes through `display::escape`, so none of it can move the
//! cursor, rewrite a line or fake one (a file name with a newline and `Loaded:` in it, say).
//! JSON needs no such care: serde_json escapes control characters itself.

use std::fmt::Write;

use serde_json::{Value, json};

use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::load::{LoadError, LoadReport, LoadWarning, Untrusted};
use pi_hooks_host::plugin::{LoadedPlugin, Runs};

/// The JSON description of one loaded plugin.
pub fn plugin_json(plugin: &LoadedPlugin) -> Value {
    let r = plugin.registrations();
    let runs = plugin.runs();
    json!({
        "path": plugin.path,
        "name": plugin.name(),
        "version": plugin.version(),
        "description": plugin.description(),
        "abi": plugin.abi(),
        "source": plugin.origin,
        "trust": plugin.trust,
        "sha256": plugin.sha256(),
        "events": r.event_names(),
        "commands": r.commands,
        "tools": r.tools,
        "renderers": r.renderers.iter().map(|x| &x.custom_type).collect::<Vec<_>>(),
        "flags": r.flags,
        "shortcuts": r.shortcuts,
        "warnings": plugin.warnings,
        "runs": runs.key(),
        "grant": match &runs {
            Runs::Confined(grant) => json!({"summary": grant.summary(), "source": grant.source}),
            _ => Value::Null,
        },
        "loadMicros": pi_hooks_host::observe::trace::micros(plugin.load_timing().load),
        "initMicros": pi_hooks_host::observe::trace::micros(plugin.load_timing().init),
    })
}

/// `{"plugins": [...], "untrusted": [...], "errors": [...], "warnings": [...]}`.
pub fn report_json(report: &LoadReport) -> Value {
    json!({
        "plugins": report.plugins.iter().map(plugin_json).collect::<Vec<_>>(),
        "untrusted": report.untrusted,
        "errors": report.errors,
        "warnings": report.warnings,
    })
}

/// The human-readable listing, with each plugin's load and init time when `timing`.
pub fn report_text_with(report: &LoadReport, timing: bool) -> String {
    let mut out = String::new();
    if report.plugins.is_empty() {
        out.push_str("No plugins loaded.\n");
    } else {
        out.push_str("Loaded (in load order):\n");
    }
    for (i, plugin) in report.plugins.iter().enumerate() {
        let _ = writeln!(
            out,
            "  {}. {} {} (ABI {}) [{}, {}]\n     {}",
            i + 1,
            escape(plugin.name()),
            escape(plugin.version()),
            plugin.abi(),
            plugin.origin.label(),
            plugin.trust.describe(),
            escape(&plugin.path)
        );
        if !plugin.description().is_empty() {
            let _ = writeln!(out, "     {}", escape(plugin.description()));
        }
        match plugin.runs() {
            Runs::InProcess => {}
            Runs::Isolated => out.push_str("     runs isolated (a process of its own)\n"),
            Runs::Confined(grant) => {
                let _ = writeln!(
                    out,
                    "     runs confined (a sandboxed process of its own): {} [grant from {}]",
                    escape(&grant.summary()),
                    escape(&grant.source)
                );
            }
        }
        if timing {
            let time = plugin.load_timing();
            let _ = writeln!(
                out,
                "     loaded in {:.2} ms (init {:.2} ms)",
                time.load.as_secs_f64() * 1e3,
                time.init.as_secs_f64() * 1e3
            );
        }
        plugin_details(&mut out, plugin, "     ");
    }
    if !report.untrusted.is_empty() {
        out.push_str("Not loaded, waiting for trust:\n");
        for untrusted in &report.untrusted {
            let _ = writeln!(
                out,
                "  {} ({})\n     trust it with: {}",
                escape(&untrusted.path),
                untrusted.trust.describe(),
                escape(&untrusted.trust_command)
            );
        }
    }
    for line in error_and_warning_lines(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// One inspected plugin (`pi-hooks inspect`): a header naming it, then its file, hash, trust,
/// description, registrations and warnings.
pub fn inspect_text(plugin: &LoadedPlugin) -> String {
    let mut out = String::new();
    let trust = if plugin.origin.needs_trust() {
        let mut trust = format!("project plugin, {}", plugin.trust.describe());
        if plugin.trust != pi_hooks_host::plugin_files::trust::TrustState::Trusted {
            trust.push_str("; loaded because of --run-code");
        }
        trust
    } else {
        "not a project plugin, no trust needed".to_owned()
    };
    let _ = writeln!(
        out,
        "Plugin {} {} (ABI {})\n  path: {}\n  sha256: {}\n  trust: {trust}",
        escape(plugin.name()),
        escape(plugin.version()),
        plugin.abi(),
        escape(&plugin.path),
        plugin.sha256(),
    );
    if !plugin.description().is_empty() {
        let _ = writeln!(out, "  description: {}", escape(plugin.description()));
    }
    plugin_details(&mut out, plugin, "  ");
    out
}

/// A plugin's registrations (one line per kind it has) and its warnings, each line indented
/// by `indent`.
fn plugin_details(out: &mut String, plugin: &LoadedPlugin, indent: &str) {
    let r = plugin.registrations();
    let lists: [(&str, Vec<String>); 6] = [
        (
            "events",
            r.event_names()
                .iter()
                .map(|e| escape(e).into_owned())
                .collect(),
        ),
        (
            "commands",
            r.commands
                .iter()
                .map(|c| format!("/{}", escape(&c.name)))
                .collect(),
        ),
        (
            "tools",
            r.tools
                .iter()
                .map(|t| escape(&t.name).into_owned())
                .collect(),
        ),
        (
            "renderers",
            r.renderers
                .iter()
                .map(|x| escape(&x.custom_type).into_owned())
                .collect(),
        ),
        (
            "flags",
            r.flags
                .iter()
                .map(|f| format!("--{}", escape(&f.name)))
                .collect(),
        ),
        (
            "shortcuts",
            r.shortcuts
                .iter()
                .map(|s| escape(&s.key).into_owned())
                .collect(),
        ),
    ];
    for (label, items) in lists {
        if !items.is_empty() {
            let _ = writeln!(out, "{indent}{label}: {}", items.join(", "));
        }
    }
    for warning in &plugin.warnings {
        let _ = writeln!(out, "{indent}warning: {}", escape(warning));
    }
}

/// `Failed to load plugin "PATH": ERROR` for each error, then `Warning: PATH: WARNING` for
/// each warning about a source, escaped.
pub fn error_and_warning_lines(report: &LoadReport) -> Vec<String> {
    let errors = report.errors.iter().map(error_line);
    errors
        .chain(report.warnings.iter().map(warning_line))
        .collect()
}

/// What a session run tells stderr about its load before it starts, escaped: the errors,
/// each skipped project plugin with the command that trusts it, the warnings about sources,
/// and each loaded plugin's warnings (`Warning: plugin NAME (PATH): WARNING`).
pub fn run_load_lines(report: &LoadReport) -> Vec<String> {
    let mut lines: Vec<String> = report.errors.iter().map(error_line).collect();
    lines.extend(report.untrusted.iter().map(skipped_line));
    lines.extend(report.warnings.iter().map(warning_line));
    for plugin in &report.plugins {
        lines.extend(plugin.warnings.iter().map(|warning| {
            format!(
                "Warning: plugin {} ({}): {}",
                escape(plugin.name()),
                escape(&plugin.path),
                escape(warning)
            )
        }));
    }
    lines
}

/// `Failed to load plugin "PATH": ERROR`.
fn error_line(error: &LoadError) -> String {
    format!(
        "Failed to load plugin \"{}\": {}",
        escape(&error.path),
        escape(&error.error)
    )
}

/// `Warning: PATH: WARNING`.
fn warning_line(warning: &LoadWarning) -> String {
    format!(
        "Warning: {}: {}",
        escape(&warning.path),
        escape(&warning.warning)
    )
}

/// `Skipped project plugin PATH (STATE); trust it with: COMMAND`.
fn skipped_line(untrusted: &Untrusted) -> String {
    format!(
        "Skipped project plugin {} ({}); trust it with: {}",
        escape(&untrusted.path),
        untrusted.trust.describe(),
        escape(&untrusted.trust_command)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_hooks_host::plugin_files::discover::Origin;
    use pi_hooks_host::plugin_files::trust::TrustState;

    /// A report with hostile text in every field a repository controls.
    fn hostile_report() -> LoadReport {
        let path = "/p/.pi/hooks/x\u{1b}[2J\r\nLoaded (in load order):\u{202e}.so".to_owned();
        LoadReport {
            errors: vec![LoadError {
                path: path.clone(),
                error: "bad\nFailed to load plugin \"fake\"".to_owned(),
                named: false,
            }],
            untrusted: vec![Untrusted {
                path: path.clone(),
                source: Origin::Project,
                sha256: "00".repeat(32),
                trust: TrustState::New,
                trust_command: format!(
                    "pi-hooks trust {}",
                    pi_hooks_host::lifecycle::load::shell_quote(&path)
                ),
            }],
            warnings: vec![LoadWarning {
                path,
                warning: "set aside\u{1b}]0;title\u{7}".to_owned(),
            }],
            ..LoadReport::default()
        }
    }

    #[test]
    fn text_and_stderr_lines_carry_no_raw_control_character() {
        let report = hostile_report();
        let text = report_text_with(&report, false);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert_eq!(lines[0], "No plugins loaded.");
        assert_eq!(lines[1], "Not loaded, waiting for trust:");
        assert!(
            lines[2].starts_with("  /p/.pi/hooks/x\\e[2J\\r\\nLoaded (in load order):\\u{202e}.so")
        );
        assert_eq!(
            lines[3],
            "     trust it with: pi-hooks trust $'/p/.pi/hooks/x\\x1b[2J\\x0d\\x0aLoaded (in load order):\\xe2\\x80\\xae.so'"
        );
        assert!(lines[4].starts_with("Failed to load plugin \"/p/.pi/hooks/x\\e[2J"));
        assert!(lines[4].ends_with(": bad\\nFailed to load plugin \"fake\""));
        assert!(lines[5].starts_with("Warning: /p/.pi/hooks/x\\e[2J"));
        let run = run_load_lines(&report);
        assert_eq!(run.len(), 3);
        assert!(run[1].starts_with("Skipped project plugin /p/.pi/hooks/x\\e[2J"));
        assert!(
            run[2].ends_with(": set aside\\e]0;title\\u{7}"),
            "{}",
            run[2]
        );
        for line in lines.iter().copied().chain(run.iter().map(String::as_str)) {
            assert!(
                !line.chars().any(|c| c.is_control() || c == '\u{202e}'),
                "{line:?}"
            );
        }
    }

    #[test]
    fn json_keeps_the_exact_text_and_the_warnings() {
        let report = hostile_report();
        let json = report_json(&report);
        assert_eq!(json["warnings"][0]["path"], report.warnings[0].path);
        assert_eq!(json["warnings"][0]["warning"], report.warnings[0].warning);
        assert_eq!(json["untrusted"][0]["path"], report.untrusted[0].path);
        assert!(!json.to_string().contains('\u{1b}'));
    }
}
