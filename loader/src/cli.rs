//! The command line: `pi-hooks list`, `inspect`, `trust`, `untrust`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

use crate::load::{LoadError, LoadReport, Untrusted, load_all, load_file};
use crate::paths::{agent_dir, resolve};
use crate::plugin::LoadedPlugin;
use crate::trust::{TrustStore, sha256_hex};

/// Native plugin host for the pi coding agent's hooks.
#[derive(Debug, Parser)]
#[command(name = "pi-hooks", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run prompts through the agent with the plugins loaded (print or JSON mode). Without
    /// --script the embedded demo script plays: one harmless bash command, an `rm -rf` and a
    /// write to `.env` in a scratch folder of its own.
    Run(RunArgs),
    /// List the plugins that would load, from where, their trust state and load result.
    List {
        #[command(flatten)]
        sources: Sources,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Load one plugin file and show its ABI, name, version and registrations.
    Inspect {
        /// The plugin library.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Trust project plugins (pins their current SHA-256 in the user's trust store).
    Trust {
        /// Plugin files to trust.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Withdraw trust from plugin files.
    Untrust {
        /// Plugin files to untrust.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// Options of `pi-hooks run`.
#[derive(Debug, Args)]
struct RunArgs {
    /// Print mode: run the prompts and print the final assistant text. It is the default
    /// until the interactive mode exists; the flag is accepted as pi accepts it.
    #[arg(short = 'p', long = "print")]
    _print: bool,
    /// Output: `text` (the final text) or `json` (the session header and every event as
    /// JSON lines).
    #[arg(long, value_enum, default_value = "text")]
    mode: OutputMode,
    /// A JSON script of assistant turns for the scripted model (default: the embedded demo).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Keep the session in memory only.
    #[arg(long, conflicts_with_all = ["session", "continue_session"])]
    no_session: bool,
    /// Use this session file (created when missing).
    #[arg(long, value_name = "FILE", conflicts_with = "continue_session")]
    session: Option<PathBuf>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    continue_session: bool,
    #[command(flatten)]
    sources: Sources,
    /// The prompts, run one after another (default: "Run the demo.").
    messages: Vec<String>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OutputMode {
    Text,
    Json,
}

/// Where plugins come from (shared by every command that loads plugins).
#[derive(Debug, Args)]
pub struct Sources {
    /// Load this plugin file or folder too (repeatable).
    #[arg(
        long = "hook",
        visible_alias = "extension",
        short = 'e',
        value_name = "PATH"
    )]
    pub hooks: Vec<String>,
    /// Skip plugin folders and settings; only --hook paths load.
    #[arg(long = "no-hooks", visible_alias = "no-extensions")]
    pub no_hooks: bool,
    /// The project directory (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

impl Sources {
    fn cwd(&self) -> PathBuf {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        match &self.cwd {
            Some(dir) => resolve(&dir.to_string_lossy(), &here),
            None => here,
        }
    }
}

/// Runs the command line.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run(args) => run(args),
        Command::List { sources, json } => {
            let options = crate::load::default_options(
                sources.cwd(),
                sources.hooks.clone(),
                sources.no_hooks,
            );
            let report = load_all(&options);
            if json {
                println!("{}", report_json(&report));
            } else {
                print!("{}", report_text(&report));
            }
            ExitCode::SUCCESS
        }
        Command::Inspect { file, json } => inspect(&file, json),
        Command::Trust { paths } => change_trust(&paths, true),
        Command::Untrust { paths } => change_trust(&paths, false),
    }
}

fn run(args: RunArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("pi-hooks: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run_inner(args: RunArgs) -> Result<u8, String> {
    use crate::agent::model::{Model, ScriptedModel};
    use crate::modes::print::{self, Output, PrintRun};
    use crate::session::{SessionStore, most_recent, new_session_path, session_dir};

    let cwd = args.sources.cwd();
    let agent = agent_dir();
    // The demo works in a scratch folder of its own, removed at exit.
    let scratch = tempfile::Builder::new()
        .prefix("pi-hooks-demo-")
        .tempdir()
        .map_err(|e| format!("cannot create a scratch folder: {e}"))?;
    std::fs::create_dir_all(scratch.path().join("build")).map_err(|e| e.to_string())?;
    std::fs::write(scratch.path().join("build/output.txt"), "built\n")
        .map_err(|e| e.to_string())?;
    let mut model = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read the script {}: {e}", path.display()))?;
            ScriptedModel::from_json(&text, &path.display().to_string())?
        }
        None => ScriptedModel::demo(),
    };
    model.set_variable("SCRATCH", &scratch.path().to_string_lossy());
    model.set_variable("CWD", &cwd.to_string_lossy());
    let session = if args.no_session {
        SessionStore::in_memory(&cwd)
    } else if let Some(path) = &args.session {
        let path = resolve(&path.to_string_lossy(), &cwd);
        if path.exists() {
            let (store, warnings) = SessionStore::open(&path).map_err(|e| e.to_string())?;
            warnings
                .iter()
                .for_each(|w| eprintln!("pi-hooks: warning: {w}"));
            store
        } else {
            SessionStore::create(path, &cwd).map_err(|e| e.to_string())?
        }
    } else {
        let dir = session_dir(&agent, &cwd);
        match most_recent(&dir).filter(|_| args.continue_session) {
            Some(path) => {
                let (store, warnings) = SessionStore::open(&path).map_err(|e| e.to_string())?;
                warnings
                    .iter()
                    .for_each(|w| eprintln!("pi-hooks: warning: {w}"));
                store
            }
            None => {
                SessionStore::create(new_session_path(&dir), &cwd).map_err(|e| e.to_string())?
            }
        }
    };
    let options = crate::load::default_options(
        cwd.clone(),
        args.sources.hooks.clone(),
        args.sources.no_hooks,
    );
    let report = load_all(&options);
    for error in &report.errors {
        eprintln!("Failed to load plugin \"{}\": {}", error.path, error.error);
    }
    for untrusted in &report.untrusted {
        eprintln!(
            "Skipped project plugin {} ({}); trust it with: {}",
            untrusted.path,
            untrusted.trust.describe(),
            untrusted.trust_command
        );
    }
    let prompts = if args.messages.is_empty() {
        vec!["Run the demo.".to_owned()]
    } else {
        args.messages
    };
    let output = if matches!(args.mode, OutputMode::Json) {
        Output::Json
    } else {
        Output::Text
    };
    let model: Box<dyn Model> = Box::new(model);
    let code = print::run(PrintRun {
        report,
        model,
        session,
        cwd,
        prompts,
        output,
    });
    Ok(u8::try_from(code).unwrap_or(1))
}

fn inspect(file: &Path, json: bool) -> ExitCode {
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let path = resolve(&file.to_string_lossy(), &here);
    let cache = crate::library::cache_dir(&agent_dir());
    let mut report = LoadReport::default();
    let ok = match load_file(&path, &cache) {
        Ok(plugin) => {
            report.plugins.push(plugin);
            true
        }
        Err(error) => {
            report.errors.push(LoadError {
                path: path.display().to_string(),
                error,
            });
            false
        }
    };
    if json {
        println!("{}", report_json(&report));
    } else {
        print!("{}", report_text(&report));
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn change_trust(paths: &[PathBuf], trust: bool) -> ExitCode {
    let agent = agent_dir();
    let mut store = match TrustStore::load(&agent) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("pi-hooks: {e}");
            return ExitCode::FAILURE;
        }
    };
    let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut failed = false;
    for path in paths {
        let path = resolve(&path.to_string_lossy(), &here);
        let canonical = match std::fs::canonicalize(&path) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("pi-hooks: {}: cannot resolve the path: {e}", path.display());
                failed = true;
                continue;
            }
        };
        if trust {
            match std::fs::read(&canonical) {
                Ok(bytes) => {
                    let sha = sha256_hex(&bytes);
                    store.trust(&canonical, &sha);
                    println!("trusted {} (sha256 {sha})", canonical.display());
                }
                Err(e) => {
                    eprintln!("pi-hooks: {}: cannot read the file: {e}", path.display());
                    failed = true;
                }
            }
        } else if store.untrust(&canonical) {
            println!("untrusted {}", canonical.display());
        } else {
            println!("{} was not trusted", canonical.display());
        }
    }
    if let Err(e) = store.save() {
        eprintln!("pi-hooks: {e}");
        return ExitCode::FAILURE;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The JSON description of one loaded plugin.
pub fn plugin_json(plugin: &LoadedPlugin) -> Value {
    let r = plugin.registrations();
    json!({
        "path": plugin.path,
        "name": plugin.name(),
        "version": plugin.version(),
        "description": plugin.description(),
        "abi": plugin.abi(),
        "source": plugin.origin,
        "trust": plugin.trust,
        "sha256": plugin.sha256,
        "events": r.event_names(),
        "commands": r.commands,
        "tools": r.tools,
        "renderers": r.renderers.iter().map(|x| &x.custom_type).collect::<Vec<_>>(),
        "flags": r.flags,
        "shortcuts": r.shortcuts,
    })
}

/// `{"plugins": [...], "untrusted": [...], "errors": [...]}`.
pub fn report_json(report: &LoadReport) -> Value {
    json!({
        "plugins": report.plugins.iter().map(plugin_json).collect::<Vec<_>>(),
        "untrusted": report.untrusted,
        "errors": report.errors,
    })
}

/// The human-readable listing.
pub fn report_text(report: &LoadReport) -> String {
    let mut out = String::new();
    if report.plugins.is_empty() {
        out.push_str("No plugins loaded.\n");
    } else {
        out.push_str("Loaded (in load order):\n");
    }
    for (i, plugin) in report.plugins.iter().enumerate() {
        let r = plugin.registrations();
        out.push_str(&format!(
            "  {}. {} {} (ABI {}) [{}, {}]\n     {}\n",
            i + 1,
            plugin.name(),
            plugin.version(),
            plugin.abi(),
            plugin.origin.label(),
            plugin.trust.describe(),
            plugin.path
        ));
        if !plugin.description().is_empty() {
            out.push_str(&format!("     {}\n", plugin.description()));
        }
        let lists = [
            ("events", r.event_names()),
            (
                "commands",
                r.commands.iter().map(|c| format!("/{}", c.name)).collect(),
            ),
            ("tools", r.tools.iter().map(|t| t.name.clone()).collect()),
            (
                "renderers",
                r.renderers.iter().map(|x| x.custom_type.clone()).collect(),
            ),
            (
                "flags",
                r.flags.iter().map(|f| format!("--{}", f.name)).collect(),
            ),
            (
                "shortcuts",
                r.shortcuts.iter().map(|s| s.key.clone()).collect(),
            ),
        ];
        for (label, items) in lists {
            if !items.is_empty() {
                out.push_str(&format!("     {label}: {}\n", items.join(", ")));
            }
        }
    }
    if !report.untrusted.is_empty() {
        out.push_str("Not loaded, waiting for trust:\n");
        for Untrusted {
            path,
            trust,
            trust_command,
            ..
        } in &report.untrusted
        {
            out.push_str(&format!(
                "  {path} ({})\n     trust it with: {trust_command}\n",
                trust.describe()
            ));
        }
    }
    for error in &report.errors {
        out.push_str(&format!(
            "Failed to load plugin \"{}\": {}\n",
            error.path, error.error
        ));
    }
    out
}
