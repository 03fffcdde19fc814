//! The command line: the commands and their options, and the dispatch to
//! `run` (`pi-hooks run`, `pi-hooks rpc` and `pi-hooks serve`), `inspect`, `trust_cmd`
//! (`trust`, `untrust`), `bridge` (`bridge install`), `demo_model` (`demo-model`), `emit`,
//! `new` and `list`, with
//! [`render`] turning load reports into text and JSON.
//!
//! Every command writes its output through one writer: a reader that closes the pipe
//! early (`pi-hooks list --json | head -c 10`) ends the command quietly, with success.
//! Everything a repository or a plugin controls is escaped before it reaches a terminal.

mod bridge;
mod confine;
mod demo_model;
mod emit;
mod inspect;
mod inspect_package;
mod inspect_static;
mod install;
mod new;
mod pack;
mod plugin_flags;
mod remove;
pub mod render;
mod run;
mod sdk;
pub mod trace_output;
mod trust_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use plugin_flags::PluginFlags;

pub use render::report_json;

use pi_hooks_host::lifecycle::load::load_all;
use pi_hooks_host::plugin_files::paths::resolve;

/// Native plugin host for the pi coding agent's hooks.
#[derive(Debug, Parser)]
#[command(
    name = "pi-hooks",
    version,
    about,
    override_usage = "pi-hooks [OPTIONS]      the interactive mode (`pi-hooks chat [OPTIONS] [PROMPT]...` with prompts)\n       pi-hooks <COMMAND>",
    after_help = "With no command, or only options such as --provider, pi-hooks starts the interactive mode: `pi-hooks chat --help` lists its options."
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Trace what the plugins do, on stderr (or the file PI_HOOKS_TRACE_FILE names): each
    /// event's handlers in order with their time and decision, the UI calls and actions
    /// they make, their load and init times. `text` (the default) or `json` lines; also
    /// PI_HOOKS_TRACE=1|text|json.
    #[arg(
        long,
        global = true,
        value_enum,
        value_name = "FORMAT",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "text"
    )]
    trace: Option<trace_output::TraceFormat>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The interactive mode (also `pi-hooks` with no command): a terminal UI with the
    /// conversation, an editor with slash-command completion, `!` commands, and every
    /// status, widget, dialog and notification the plugins draw. The prompts given are sent
    /// first. Needs a terminal; without a model option the embedded demo script plays.
    Chat(run::ChatArgs),
    /// Run prompts through the agent with the plugins loaded (print or JSON mode). Without
    /// --script the embedded demo script plays: one harmless bash command, an `rm -rf` and a
    /// write to `.env` in a scratch folder of its own.
    Run(run::RunArgs),
    /// RPC mode: pi's JSONL protocol on stdin/stdout (commands in, responses, events and
    /// extension UI requests out) until stdin closes. Without --script the embedded demo
    /// script plays.
    Rpc(run::RpcArgs),
    /// Serve mode: the plugins behind the serve protocol on stdin/stdout (a `hello` line,
    /// then events, commands and tools in, results and plugin requests out; see
    /// docs/serve-protocol.md) until stdin closes. Runs no agent loop of its own.
    Serve {
        #[command(flatten)]
        sources: Sources,
        /// Load the --hook files only if their bytes have this SHA-256 (hex): for a host
        /// that checked the file before handing it to serve (`--isolate` does).
        #[arg(long = "pin-sha256", value_name = "HEX", hide = true)]
        pin_sha256: Option<String>,
        /// Write the protocol's lines to this file descriptor instead of stdout, and point
        /// stdout at stderr (`--isolate` does: a plugin's own writes to stdout then never
        /// reach the protocol).
        #[arg(long = "protocol-fd", value_name = "FD", hide = true)]
        protocol_fd: Option<i32>,
        /// On Linux: exchange the protocol's messages through the shared-memory rings mapped
        /// from this descriptor (`--isolate`'s transport, and the pi bridge's through its
        /// addon); the hello and the doorbells still go to --protocol-fd (stdout without it),
        /// and stdin's end still ends serve.
        #[arg(long = "ring-fd", value_name = "FD", hide = true)]
        ring_fd: Option<i32>,
        /// Confine this process to a grant (JSON, as the host resolved it) before the one
        /// --hook file is opened (`--isolate` does for a plugin with a grant).
        #[arg(long = "sandbox", value_name = "GRANT", hide = true)]
        sandbox: Option<String>,
        /// Who the one --hook plugin is (`package:<name>` or `library:<path>`): what its
        /// `identity` answers (`--isolate` passes the identity the host gave it).
        #[arg(long = "identity", value_name = "IDENTITY", hide = true)]
        identity: Option<String>,
        /// The one --hook plugin's own folder, what its `data_dir` answers (`--isolate`
        /// passes the folder it has in the host).
        #[arg(long = "data-dir", value_name = "DIR", hide = true)]
        data_dir: Option<std::path::PathBuf>,
    },
    /// Create a plugin project that builds as generated: one handler, a test, a README with
    /// the dev loop (Rust: a cdylib crate; C and C++: a Makefile and a CMakeLists.txt).
    New(new::NewArgs),
    /// What a C or C++ plugin author needs, from this binary alone: install the headers
    /// (pi_hooks.h, pi_hooks.hpp), a pkg-config file and a CMake package under a prefix
    /// (--prefix DIR, as scripts/install.sh does), or print a folder holding the headers
    /// (--print-include-dir, --cflags).
    Sdk(sdk::SdkArgs),
    /// Fire one event at one plugin without a session and print, as JSON, its decision and
    /// every host call it made (dialogs with the answers given, UI updates, messages,
    /// entries, exec). For testing a plugin from a shell script or CI.
    Emit(emit::EmitArgs),
    /// The pi bridge: a pi extension that runs these native plugins inside pi itself
    /// (through `pi-hooks serve`).
    Bridge {
        #[command(subcommand)]
        action: bridge::BridgeAction,
    },
    /// Serve the scripted demo model (or --script FILE) as a local OpenAI-compatible endpoint
    /// on 127.0.0.1 (streamed chat completions with tool calls, no key), and print the
    /// models.json entry that points pi at it: pi plays the demo with no key and no network.
    DemoModel(demo_model::DemoModelArgs),
    /// List the plugins that would load, from where, their trust state and load result.
    /// Exits 1 when a plugin named with --hook/-e failed to load.
    List {
        #[command(flatten)]
        sources: Sources,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show what a plugin library is (name, version, ABI, description, platform, SHA-256) read
    /// from the file without running any of its code; or show a package (a .tgz or a package
    /// folder), also without running it.
    ///
    /// What a plugin registers (events, commands, tools, flags, shortcuts) is known only by
    /// loading it, which runs its code: pass --run-code for that. Its name and version are
    /// read from the information block the plugin exports (PI_HOOKS_PLUGIN and the Rust SDK's
    /// plugin! write it); a library built with an older header shows only its platform and
    /// SHA-256 until --run-code.
    Inspect {
        /// The plugin library.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Load the plugin, running its code (even an untrusted project plugin's), to show
        /// what it registers and its warnings.
        #[arg(long)]
        run_code: bool,
    },
    /// Pack a plugin's libraries (one per platform) into NAME-VERSION.tgz, npm's layout with
    /// the manifest under `piHooks` in package.json; optionally signed. Loads each library in
    /// a child process to record what it registers.
    Pack(pack::PackArgs),
    /// Make a minisign key pair for `pack --sign` (an encrypted one when
    /// PI_HOOKS_KEY_PASSWORD is set).
    Keygen(pack::KeygenArgs),
    /// Install a package (.tgz, folder, or git URL): verify its signature, library, SHA-256,
    /// ABI and host version without running it, show its capabilities, record it under
    /// `packages` in settings.json as pi does.
    Install(install::InstallArgs),
    /// Update installed packages (all that are not pinned to a version, or NAME).
    Update(install::UpdateArgs),
    /// Remove an installed package: its `packages` entry and its files.
    Remove(remove::RemoveArgs),
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
    /// pi's `--approve`: trust the project for this run as far as pi's project trust goes
    /// (its plugins still load only once pinned with `pi-hooks trust`).
    #[arg(long, conflicts_with = "no_approve")]
    pub approve: bool,
    /// pi's `--no-approve`: no project plugin loads and the project's settings.json is not
    /// read, whatever `pi-hooks trust` pinned.
    #[arg(long = "no-approve")]
    pub no_approve: bool,
}

impl Sources {
    fn cwd(&self) -> PathBuf {
        let here = current_dir();
        match &self.cwd {
            Some(dir) => resolve(&dir.to_string_lossy(), &here),
            None => here,
        }
    }

    /// The discovery options of these sources in this process.
    fn options(
        &self,
    ) -> Result<pi_hooks_host::plugin_files::discover::DiscoveryOptions, CommandError> {
        if self.approve || self.no_approve {
            pi_hooks_host::plugin_files::pi_trust::set_override(Some(self.approve));
        }
        pi_hooks_host::lifecycle::load::default_options(
            self.cwd(),
            self.hooks.clone(),
            self.no_hooks,
        )
        .map_err(CommandError::setup)
    }
}

/// Why a command ended early.
#[derive(Debug)]
enum CommandError {
    /// The reader of stdout went away (a closed pipe): nothing more to say to anyone.
    StdoutClosed,
    /// A message for stderr (already escaped where it quotes outside text) and the exit code.
    Failed {
        /// The message, printed as `pi-hooks: <message>`.
        message: String,
        /// The exit code.
        code: u8,
    },
}

impl CommandError {
    /// Exit code 1: the command ran and failed.
    fn failed(message: impl Into<String>) -> Self {
        CommandError::Failed {
            message: message.into(),
            code: 1,
        }
    }

    /// Exit code 2: the command line is wrong (as clap's own usage errors).
    fn usage(message: impl Into<String>) -> Self {
        CommandError::Failed {
            message: message.into(),
            code: 2,
        }
    }

    /// Exit code 2: the command could not start (its environment is unusable, such as a
    /// relative agent directory).
    fn setup(message: impl Into<String>) -> Self {
        CommandError::Failed {
            message: message.into(),
            code: 2,
        }
    }
}

impl From<std::io::Error> for CommandError {
    fn from(error: std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            CommandError::StdoutClosed
        } else {
            CommandError::failed(format!("cannot write the output: {error}"))
        }
    }
}

/// Writes `text` to stdout and flushes it. A closed pipe is an error of kind `BrokenPipe`
/// (Rust ignores SIGPIPE), which the dispatch turns into a quiet, successful end.
fn write_stdout(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Writes one line to stderr. Nothing can be done when stderr itself is closed, so that is
/// ignored rather than turned into a panic.
fn write_stderr(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// The process's current directory (`.` if it cannot be read).
fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// Runs the command line.
pub fn main() -> ExitCode {
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // No command (or only options, such as `--provider`): the interactive mode. The global
    // `--trace` may stand before a command (`pi-hooks --trace list`).
    let first = argv
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .find(|a| !a.is_some_and(|a| a == "--trace" || a.starts_with("--trace=")))
        .flatten();
    let bare = match first {
        None => true,
        Some("-h" | "--help" | "-V" | "--version") => false,
        Some(first) => first.starts_with('-'),
    };
    if bare {
        argv.insert(1.min(argv.len()), "chat".into());
    }
    // `run` and `rpc` take the plugins' flags too: clap parses the rest first.
    let flags = PluginFlags::split(argv.clone());
    let cli = match &flags {
        Some(flags) => Cli::try_parse_from(flags.first_pass()).unwrap_or_else(|e| e.exit()),
        None => Cli::parse_from(argv),
    };
    trace_output::install(cli.trace);
    let result = match (cli.command, flags) {
        (Command::Run(args), Some(flags)) if flags.wants_help() => run::help(&args.session, &flags),
        (Command::Rpc(args), Some(flags)) if flags.wants_help() => run::help(&args.session, &flags),
        (Command::Chat(args), Some(flags)) if flags.wants_help() => {
            run::help(&args.session, &flags)
        }
        (Command::Chat(args), Some(flags)) => run::chat(args, &flags),
        (Command::Run(args), Some(flags)) => run::run(args, &flags),
        (Command::Rpc(args), Some(flags)) => run::rpc(args, &flags),
        (Command::Chat(_) | Command::Run(_) | Command::Rpc(_), None) => {
            unreachable!("PluginFlags::split takes every chat, run and rpc command line")
        }
        (
            Command::Serve {
                sources,
                pin_sha256,
                protocol_fd,
                ring_fd,
                sandbox,
                identity,
                data_dir,
            },
            _,
        ) => run::serve(
            &sources,
            pin_sha256.as_deref(),
            protocol_fd,
            ring_fd,
            sandbox.as_deref(),
            (identity.as_deref(), data_dir),
        ),
        (Command::Bridge { action }, _) => bridge::bridge(action),
        (Command::DemoModel(args), _) => demo_model::demo_model(args),
        (Command::Emit(args), _) => emit::emit(args),
        (Command::New(args), _) => new::new(args),
        (Command::Sdk(args), _) => sdk::sdk(args),
        (Command::List { sources, json }, _) => list(&sources, json, cli.trace),
        (
            Command::Inspect {
                file,
                json,
                run_code,
            },
            _,
        ) => inspect::inspect(&file, json, run_code),
        (Command::Pack(args), _) => pack::pack(args),
        (Command::Keygen(args), _) => pack::keygen(args),
        (Command::Install(args), _) => install::install(args),
        (Command::Update(args), _) => install::update(args),
        (Command::Remove(args), _) => remove::remove(args),
        (Command::Trust { paths }, _) => trust_cmd::change_trust(&paths, true),
        (Command::Untrust { paths }, _) => trust_cmd::change_trust(&paths, false),
    };
    match result {
        Ok(code) => code,
        Err(CommandError::StdoutClosed) => ExitCode::SUCCESS,
        Err(CommandError::Failed { message, code }) => {
            write_stderr(&format!("pi-hooks: {message}"));
            ExitCode::from(code)
        }
    }
}

/// `pi-hooks list`: with the trace on, the text shows each plugin's load and init time too
/// (the JSON always has them).
fn list(
    sources: &Sources,
    json: bool,
    trace: Option<trace_output::TraceFormat>,
) -> Result<ExitCode, CommandError> {
    let options = sources.options()?;
    // Loaded as a session loads them: a plugin with a grant (an installed package, by
    // default) runs confined in its child here too, and a plugin settings isolate, isolated.
    pi_hooks_host::isolate::enable(false);
    let report = load_all(&options);
    let packages = install::installed_packages(&options.agent_dir, &options.cwd);
    if json {
        let mut value = report_json(&report);
        value["packages"] = install::packages_json(&packages);
        write_stdout(&format!("{value}\n"))?;
    } else {
        let timing = trace_output::requested(trace).is_some();
        let mut text = render::report_text_with(&report, timing);
        text.push_str(&install::packages_text(&packages));
        write_stdout(&text)?;
    }
    // A plugin the command line named that did not load is what the user asked about.
    Ok(if report.errors.iter().any(|e| e.named) {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
