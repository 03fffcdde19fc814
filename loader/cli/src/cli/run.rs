//! `pi-hooks run` and `pi-hooks rpc`: the wiring of one session. It picks the model (a script,
//! an OpenAI-compatible provider, or the embedded demo; see [`choose_model`]), opens or creates the session, loads the plugins, reports what did
//! not load on stderr, and hands everything to the print/JSON mode or the RPC mode.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use pi_hooks_abi::ffi::{PI_MODE_INTERACTIVE, PI_MODE_JSON, PI_MODE_PRINT, PI_MODE_RPC};

use super::plugin_flags::PluginFlags;
use super::render::run_load_lines;
use super::{Cli, Command, CommandError, Sources, write_stderr};
use crate::modes::core::CoreSetup;
use crate::modes::print::{self, Output};
use pi_hooks_agent::model::openai::models_json::{self, ModelsJson, ProviderModel};
use pi_hooks_agent::model::{Model, ModelCatalog, OpenAiModel, ScriptedModel};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::load::load_all;
use pi_hooks_host::plugin_files::paths::{agent_dir, resolve};
use pi_hooks_session::{SessionStore, most_recent, new_session_path, session_dir};

/// Options of `pi-hooks run`.
#[derive(Debug, Args)]
pub(super) struct RunArgs {
    /// Print mode: run the prompts and print the final assistant text. It is `run`'s
    /// default (`--mode json` is the other); the flag is accepted as pi accepts it.
    #[arg(short = 'p', long = "print")]
    _print: bool,
    /// Output: `text` (the final text) or `json` (the session header and every event as
    /// JSON lines).
    #[arg(long, value_enum, default_value = "text")]
    mode: OutputMode,
    #[command(flatten)]
    pub(super) session: SessionArgs,
    /// The prompts, run one after another (default: "Run the demo.").
    messages: Vec<String>,
}

/// Options of `pi-hooks chat`.
#[derive(Debug, Args)]
pub(super) struct ChatArgs {
    #[command(flatten)]
    pub(super) session: SessionArgs,
    /// Prompts to send first, one after another.
    messages: Vec<String>,
}

/// Options of `pi-hooks rpc`.
#[derive(Debug, Args)]
pub(super) struct RpcArgs {
    #[command(flatten)]
    pub(super) session: SessionArgs,
}

/// The model, session and plugin options `run` and `rpc` share. Both also take the flags the
/// loaded plugins register (`--NAME`, `--NAME VALUE`, `--NAME=VALUE`; see
/// [`super::plugin_flags`]).
#[derive(Debug, Args)]
pub(super) struct SessionArgs {
    /// A JSON script of assistant turns for the scripted model (default: the embedded demo).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["provider", "model", "base_url"])]
    script: Option<PathBuf>,
    /// An OpenAI-compatible provider: one of `<agentDir>/models.json`, or any name with
    /// `--base-url` (the key from `OPENAI_API_KEY`).
    #[arg(long, value_name = "NAME")]
    provider: Option<String>,
    /// The model id (with `--provider`, one of its models; alone, looked up in models.json).
    #[arg(long, value_name = "ID")]
    model: Option<String>,
    /// The provider's base URL, such as `http://localhost:8080/v1` (default for the provider
    /// `openai`: `https://api.openai.com/v1`).
    #[arg(long, value_name = "URL", requires = "provider")]
    base_url: Option<String>,
    /// Keep the session in memory only.
    #[arg(long, conflicts_with_all = ["session", "continue_session"])]
    no_session: bool,
    /// Use this session file (created when missing).
    #[arg(long, value_name = "FILE", conflicts_with = "continue_session")]
    session: Option<PathBuf>,
    /// Continue the most recent session of this directory.
    #[arg(short = 'c', long = "continue")]
    continue_session: bool,
    /// Keep session files in this folder (default: the agent directory's `sessions/<cwd>`
    /// folder, or what a plugin's `session_directory` handler names).
    #[arg(long, value_name = "DIR", conflicts_with = "no_session")]
    session_dir: Option<PathBuf>,
    /// Reload a plugin when its file is rebuilt (and load new plugin files, unload deleted
    /// ones), each with a line on stderr. For `chat` and `rpc`, whose session stays open;
    /// `run` exits after its prompts and refuses it.
    #[arg(long)]
    watch: bool,
    /// Run every plugin in a `pi-hooks serve` child process of its own: a crash or hang in
    /// one is reported, its tool calls are blocked meanwhile, and it is restarted while the
    /// session goes on (settings.json's `isolate` chooses plugins one by one).
    #[arg(long)]
    isolate: bool,
    /// Where no sandbox is available (any system but Linux), load a plugin that has a grant
    /// (a package's capabilities, settings.json's `sandbox`) unconfined, with a warning,
    /// instead of refusing it.
    #[arg(long = "unconfined-ok")]
    unconfined_ok: bool,
    #[command(flatten)]
    confine: super::confine::ConfineArg,
    /// Stop with exit code 1, before the session starts, when a plugin fails to load (named
    /// with --hook/-e, found in a plugin folder, or listed in settings.json) or a settings
    /// file is broken. Without it the failure is reported and the session goes on, as in pi.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    sources: Sources,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum OutputMode {
    Text,
    Json,
}

/// The run's scratch folder, with the `build/output.txt` the demo looks at.
fn scratch_folder() -> Result<tempfile::TempDir, CommandError> {
    let scratch = tempfile::Builder::new()
        .prefix("pi-hooks-demo-")
        .tempdir()
        .map_err(|e| CommandError::failed(format!("cannot create a scratch folder: {e}")))?;
    fill_scratch(scratch.path())
        .map_err(|e| CommandError::failed(format!("cannot fill the scratch folder: {e}")))?;
    Ok(scratch)
}

/// Puts the demo's `build/output.txt` into the scratch folder `scratch` (again).
pub(super) fn fill_scratch(scratch: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(scratch.join("build"))
        .and_then(|()| std::fs::write(scratch.join("build/output.txt"), "built\n"))
}

/// A session ready for a mode: the scratch folder lives as long as this does.
struct Prepared {
    setup: CoreSetup,
    _scratch: Option<tempfile::TempDir>,
    /// The command line parsed again once the plugin flags were known, when that changed
    /// what the first pass took for prompts.
    reparsed: Option<Cli>,
}

/// Picks the model, loads the plugins (load problems on stderr), gives the plugin flags of
/// the command line their values, and opens the session.
fn prepare(
    args: &SessionArgs,
    mode: u32,
    input_source: &'static str,
    flags: &PluginFlags,
) -> Result<Prepared, CommandError> {
    let cwd = args.sources.cwd();
    let agent = agent_dir().map_err(CommandError::setup)?;
    let options = args.sources.options()?;
    let models_json = agent.join("models.json");
    let defaults = pi_hooks_host::plugin_files::settings::default_model(&agent, &cwd);
    let chosen = choose_model(args, &models_json, defaults)?;
    let idle = pi_hooks_host::plugin_files::settings::stream_idle_timeout(&agent, &cwd)
        .unwrap_or(pi_hooks_agent::model::openai::transport::DEFAULT_IDLE_TIMEOUT);
    let (model, scratch): (Box<dyn Model>, _) = match chosen {
        Chosen::Provider(models) => (
            Box::new(OpenAiModel::new(models).with_idle_timeout(idle)),
            None,
        ),
        Chosen::Demo(offered) => {
            let (scripted, scratch) = scripted_model(args.script.as_deref(), &cwd)?;
            if offered.is_empty() {
                (Box::new(scripted), scratch)
            } else {
                let catalog = ModelCatalog::new(vec![
                    Box::new(scripted),
                    Box::new(OpenAiModel::new(offered).with_idle_timeout(idle)),
                ]);
                (Box::new(catalog), scratch)
            }
        }
    };
    pi_hooks_host::isolate::enable(args.isolate);
    pi_hooks_host::sandbox::set_unconfined_ok(args.unconfined_ok);
    if let Some(grant) = &args.confine.confine {
        let mut plugins = Vec::new();
        for hook in &options.explicit {
            let path = resolve(hook, &options.cwd);
            if path.is_dir() {
                return Err(CommandError::usage(format!(
                    "--confine confines plugin files, and -e {} is a folder: name its library (-e {}/libNAME.so)",
                    escape(hook),
                    escape(hook)
                )));
            }
            plugins.push(path);
        }
        super::confine::confine(grant, &plugins, &options.cwd, &agent)?;
    }
    let report = load_all(&options);
    for line in run_load_lines(&report)
        .into_iter()
        .chain(flags.shadow_warnings(&report))
    {
        write_stderr(&line);
    }
    if args.strict && !report.errors.is_empty() {
        return Err(CommandError::failed(format!(
            "--strict: {} plugin source(s) failed to load (see above); the session was not started. Fix or remove them, or run without --strict to report them and go on",
            report.errors.len()
        )));
    }
    if pi_hooks_host::library::system_loader_stuck() {
        // The stuck initialiser holds the system loader's lock, which every new thread needs
        // (glibc takes it to register thread-local destructors): tools and timed events would
        // hang. Say so instead of starting a session that cannot finish.
        return Err(CommandError::failed(
            "a plugin's static initialiser never returned (see above), so this process cannot start threads any more; the session was not started. Remove or fix that plugin",
        ));
    }
    // Before the session file is created: a wrong flag leaves nothing behind.
    let reparsed = flags.apply(&report)?;
    let session = open_session(args, &agent, &cwd, &report, mode)?;
    Ok(Prepared {
        setup: CoreSetup {
            report,
            model,
            session,
            cwd,
            mode,
            input_source,
            discovery: Some(options),
            watch: args.watch,
        },
        _scratch: scratch,
        reparsed,
    })
}

/// The scripted model of `--script` (or the demo), its `${CWD}` set and, when it names
/// `${SCRATCH}` (the demo does), a scratch folder of its own, removed when the run ends.
pub(super) fn scripted_model(
    script: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> Result<(ScriptedModel, Option<tempfile::TempDir>), CommandError> {
    let mut model = load_script(script)?;
    let scratch = if model.uses_variable("SCRATCH") {
        let scratch = scratch_folder()?;
        model.set_variable("SCRATCH", &scratch.path().to_string_lossy());
        Some(scratch)
    } else {
        None
    };
    model.set_variable("CWD", &cwd.to_string_lossy());
    Ok((model, scratch))
}

/// The scripted model of the script at `script`, or the embedded demo.
pub(super) fn load_script(script: Option<&std::path::Path>) -> Result<ScriptedModel, CommandError> {
    match script {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| {
                CommandError::failed(format!(
                    "cannot read the script {}: {e}",
                    escape(&path.display().to_string())
                ))
            })?;
            ScriptedModel::from_json(&text, &path.display().to_string())
                .map_err(|e| CommandError::failed(escape(&e)))
        }
        None => Ok(ScriptedModel::demo()),
    }
}

/// The model a run uses.
enum Chosen {
    /// The scripted model (`--script` or the demo) is selected; models.json's models are
    /// offered beside it.
    Demo(Vec<ProviderModel>),
    /// An OpenAI-compatible model, selected first, the others of models.json offered.
    Provider(Vec<ProviderModel>),
}

/// Picks the model from `--provider`, `--model`, `--base-url` and pi's `models.json` at
/// `models_json`:
///
/// - `--provider NAME` of models.json: its model `--model ID` (default its first);
///   `--base-url` moves it to another server;
/// - `--provider NAME --base-url URL --model ID` for a provider models.json does not name
///   (`openai` needs no `--base-url`): that server, the key from `OPENAI_API_KEY`;
/// - `--model ID` alone (or `PROVIDER/ID`): that model of models.json;
/// - nothing: pi's `defaultProvider` / `defaultModel` of settings.json (`defaults`) when
///   they name a model of models.json (or `openai` with `OPENAI_API_KEY` set); else the
///   scripted model, with models.json's models offered to `set_model`.
///
/// A models.json that cannot be read is an error when it was asked for, else a warning.
fn choose_model(
    args: &SessionArgs,
    models_json: &std::path::Path,
    defaults: (Option<String>, Option<String>),
) -> Result<Chosen, CommandError> {
    let asked = args.provider.is_some() || args.model.is_some();
    let file = match ModelsJson::read(models_json) {
        Ok(file) => file,
        Err(e) if asked && args.base_url.is_none() => {
            return Err(CommandError::failed(escape(&e)));
        }
        Err(e) => {
            write_stderr(&format!(
                "pi-hooks: warning: {}; its models are not offered",
                escape(&e)
            ));
            ModelsJson::default()
        }
    };
    let offered = file.models;
    if args.script.is_some() {
        return Ok(Chosen::Demo(offered));
    }
    if !asked {
        return Ok(default_model(offered, defaults, models_json));
    }
    let (provider, id) = match (&args.provider, &args.model) {
        (Some(provider), id) => (provider.clone(), id.clone()),
        (None, Some(model)) => match model.split_once('/') {
            Some((provider, id)) if offered.iter().any(|m| m.info["provider"] == provider) => {
                (provider.to_owned(), Some(id.to_owned()))
            }
            _ => {
                let Some(found) = offered.iter().find(|m| m.info["id"] == model.as_str()) else {
                    return Err(CommandError::failed(format!(
                        "no model \"{}\" in {}; name its provider with --provider NAME --base-url URL",
                        escape(model),
                        escape(&models_json.display().to_string())
                    )));
                };
                (
                    found.info["provider"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    Some(model.clone()),
                )
            }
        },
        (None, None) => unreachable!("asked"),
    };
    let of_provider: Vec<usize> = (0..offered.len())
        .filter(|&n| offered[n].info["provider"] == provider.as_str())
        .collect();
    let mut chosen = if of_provider.is_empty() {
        if let Some((_, id, api)) = file
            .other_api
            .iter()
            .find(|(p, m, _)| *p == provider && args.model.as_deref().is_none_or(|want| want == m))
        {
            return Err(CommandError::failed(format!(
                "{}/{} in {} uses the api \"{}\"; pi-hooks speaks only \"openai-completions\" (OpenAI-compatible servers)",
                escape(&provider),
                escape(id),
                escape(&models_json.display().to_string()),
                escape(api)
            )));
        }
        let base_url = match (&args.base_url, provider.as_str()) {
            (Some(url), _) => url.clone(),
            (None, "openai") => models_json::OPENAI_BASE_URL.to_owned(),
            (None, _) => {
                return Err(CommandError::failed(format!(
                    "provider \"{}\" is not in {}: give its server with --base-url URL (such as http://localhost:8080/v1), or add it to models.json",
                    escape(&provider),
                    escape(&models_json.display().to_string())
                )));
            }
        };
        let Some(id) = id else {
            return Err(CommandError::failed(format!(
                "--provider {} needs --model ID (the model name the server knows)",
                escape(&provider)
            )));
        };
        models_json::command_line_model(&provider, &base_url, &id)
    } else {
        let at = match &id {
            None => of_provider[0],
            Some(id) => *of_provider
                .iter()
                .find(|&&n| offered[n].info["id"] == id.as_str())
                .ok_or_else(|| {
                    let ids: Vec<&str> = of_provider
                        .iter()
                        .filter_map(|&n| offered[n].info["id"].as_str())
                        .collect();
                    CommandError::failed(format!(
                        "provider \"{}\" in {} has no model \"{}\"; it offers: {}",
                        escape(&provider),
                        escape(&models_json.display().to_string()),
                        escape(id),
                        escape(&ids.join(", "))
                    ))
                })?,
        };
        let mut model = offered[at].clone();
        if let Some(url) = &args.base_url {
            model.info["baseUrl"] = url.clone().into();
        }
        model
    };
    chosen.info["baseUrl"] = chosen.info["baseUrl"]
        .as_str()
        .unwrap_or_default()
        .trim_end_matches('/')
        .into();
    let mut models = vec![chosen];
    for model in offered {
        if !pi_hooks_agent::model::same_model(&model.info, &models[0].info) {
            models.push(model);
        }
    }
    Ok(Chosen::Provider(models))
}

/// The model settings.json's `defaultProvider` and `defaultModel` name, selected first with
/// models.json's others offered beside it; the scripted demo when they name none this host
/// can use (with a warning when they are set).
fn default_model(
    mut offered: Vec<ProviderModel>,
    defaults: (Option<String>, Option<String>),
    models_json: &std::path::Path,
) -> Chosen {
    let (Some(provider), Some(id)) = defaults else {
        return Chosen::Demo(offered);
    };
    if let Some(at) = offered
        .iter()
        .position(|m| m.info["provider"] == provider.as_str() && m.info["id"] == id.as_str())
    {
        let chosen = offered.remove(at);
        offered.insert(0, chosen);
        return Chosen::Provider(offered);
    }
    if provider == "openai" && std::env::var_os("OPENAI_API_KEY").is_some() {
        offered.insert(
            0,
            models_json::command_line_model("openai", models_json::OPENAI_BASE_URL, &id),
        );
        return Chosen::Provider(offered);
    }
    write_stderr(&format!(
        "pi-hooks: settings.json names the default model {}/{}, which is not an OpenAI-compatible model of {} (nor openai with OPENAI_API_KEY set); the scripted demo plays. Choose one with --provider NAME --model ID",
        escape(&provider),
        escape(&id),
        escape(&models_json.display().to_string())
    ));
    Chosen::Demo(offered)
}

/// pi's `session_directory` event, at startup when no `--session-dir` is given: every
/// handler gets `{cwd}` in load order, and the last truthy `sessionDir` names the folder for
/// session files (relative to `cwd`). A failing handler is reported on stderr as pi reports
/// it, `Extension "<path>" session_directory handler failed: <message>`, and skipped.
fn plugin_session_dir(
    report: &pi_hooks_host::lifecycle::load::LoadReport,
    cwd: &std::path::Path,
    mode: u32,
) -> Option<std::path::PathBuf> {
    use pi_hooks_host::host_api::context::{CallKind, CallScope};
    use pi_hooks_host::host_api::value::HostValue;
    let cwd_text = cwd.to_string_lossy();
    let payload =
        HostValue::from_json(serde_json::json!({"type": "session_directory", "cwd": cwd_text}));
    let scope = CallScope::new(CallKind::Event, &cwd_text, mode);
    let mut chosen = None;
    for plugin in &report.plugins {
        for outcome in plugin.call_event("session_directory", &payload, &scope) {
            if outcome.status != pi_hooks_abi::ffi::PI_OK {
                let message = outcome
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("status {}", outcome.status));
                write_stderr(&format!(
                    "Extension \"{}\" session_directory handler failed: {}",
                    escape(&plugin.path),
                    escape(&message)
                ));
                continue;
            }
            if let Some(dir) = outcome
                .result
                .as_ref()
                .and_then(|r| r.get("sessionDir"))
                .and_then(serde_json::Value::as_str)
                .filter(|d| !d.is_empty())
            {
                chosen = Some(resolve(dir, cwd));
            }
        }
    }
    chosen
}

/// `run --help` and `rpc --help`: loads the plugins from the sources the command line names
/// (load problems on stderr) and prints the help with their flags.
pub(super) fn help(args: &SessionArgs, flags: &PluginFlags) -> Result<ExitCode, CommandError> {
    let report = load_all(&args.sources.options()?);
    for line in run_load_lines(&report) {
        write_stderr(&line);
    }
    flags.print_help(&report)
}

/// Runs the session; the exit code is the mode's.
pub(super) fn run(args: RunArgs, flags: &PluginFlags) -> Result<ExitCode, CommandError> {
    if args.session.watch {
        return Err(CommandError::usage(
            "run plays its prompts and exits, so --watch would never reload anything. For the edit-rebuild-reload loop keep a session open: `pi-hooks chat --watch -e FILE` (the terminal UI) or `pi-hooks rpc --watch -e FILE` (an RPC client); each rebuild of FILE is then reloaded into it",
        ));
    }
    let (output, mode) = match args.mode {
        OutputMode::Json => (Output::Json, PI_MODE_JSON),
        OutputMode::Text => (Output::Text, PI_MODE_PRINT),
    };
    let mut prepared = prepare(&args.session, mode, "interactive", flags)?;
    let messages = match prepared.reparsed.take().map(|cli| cli.command) {
        Some(Command::Run(again)) => again.messages,
        _ => args.messages,
    };
    let prompts = if messages.is_empty() {
        vec!["Run the demo.".to_owned()]
    } else {
        messages
    };
    let code = print::run(prepared.setup, prompts, output);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Runs the interactive mode until the person quits.
pub(super) fn chat(args: ChatArgs, flags: &PluginFlags) -> Result<ExitCode, CommandError> {
    let mut prepared = prepare(&args.session, PI_MODE_INTERACTIVE, "interactive", flags)?;
    let messages = match prepared.reparsed.take().map(|cli| cli.command) {
        Some(Command::Chat(again)) => again.messages,
        _ => args.messages,
    };
    let load_lines = run_load_lines(&prepared.setup.report);
    let code = crate::modes::interactive::run(prepared.setup, load_lines, messages);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// Runs the RPC mode until stdin closes.
pub(super) fn rpc(args: RpcArgs, flags: &PluginFlags) -> Result<ExitCode, CommandError> {
    let prepared = prepare(&args.session, PI_MODE_RPC, "rpc", flags)?;
    let code = crate::modes::rpc::run(prepared.setup);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `pi-hooks serve`: loads the plugins as the other modes do (load problems on stderr) and
/// serves them until stdin closes. `pin`: the SHA-256 the --hook files must have;
/// `protocol_fd`: where the protocol goes instead of stdout (before anything loads);
/// `ring_fd`: the shared-memory rings the messages go through after the hello (Linux);
/// `own`: the one --hook plugin's identity and folder, as the host that started this child
/// gave them (`--identity`, `--data-dir`).
pub(super) fn serve(
    sources: &Sources,
    pin: Option<&str>,
    protocol_fd: Option<i32>,
    ring_fd: Option<i32>,
    sandbox: Option<&str>,
    own: (Option<&str>, Option<std::path::PathBuf>),
) -> Result<ExitCode, CommandError> {
    let protocol = match protocol_fd {
        #[cfg(unix)]
        Some(fd) => Some(pi_hooks_host::serve::protocol_on_fd(fd).map_err(CommandError::failed)?),
        #[cfg(not(unix))]
        Some(_) => {
            return Err(CommandError::failed(
                "--protocol-fd is only offered on Unix",
            ));
        }
        None => None,
    };
    let ring = match (ring_fd, &protocol) {
        #[cfg(target_os = "linux")]
        (Some(fd), doorbell) => Some(
            pi_hooks_host::serve::ring_on_fd(
                fd,
                doorbell
                    .clone()
                    .unwrap_or_else(pi_hooks_host::serve::LineWriter::stdout),
            )
            .map_err(CommandError::failed)?,
        ),
        #[cfg(not(target_os = "linux"))]
        (Some(_), _) => {
            return Err(CommandError::failed("--ring-fd is only offered on Linux"));
        }
        (None, _) => None,
    };
    let options = sources.options()?;
    if let Some(pin) = pin {
        for hook in &options.explicit {
            pi_hooks_host::lifecycle::load::pin_sha256(
                &pi_hooks_host::plugin_files::paths::resolve(hook, &options.cwd),
                pin,
            );
        }
    }
    if own.0.is_some() || own.1.is_some() {
        assign_own(own, &options)?;
    }
    match sandbox {
        Some(grant) => confine_serve(grant, &options)?,
        // The serve a client starts (the pi bridge, an editor), not an isolated plugin's
        // child (those get --protocol-fd): plugins load as a session loads them, so one with a
        // grant (an installed package, by default) runs confined in its own child, and one
        // the settings' `isolate` key selects, isolated. A child never starts children.
        None if protocol_fd.is_none() => pi_hooks_host::isolate::enable(false),
        None => {}
    }
    if protocol_fd.is_some() {
        // An isolated plugin's child: what its plugin emits on the event bus during its init
        // goes to the host's bus with the hello (pi_hooks_host::services::event_bus).
        pi_hooks_host::services::event_bus::hold_emissions();
    }
    let report = load_all(&options);
    let load_lines = run_load_lines(&report);
    for line in &load_lines {
        write_stderr(line);
    }
    let setup = pi_hooks_host::serve::ServeSetup {
        report,
        cwd: sources.cwd(),
        mode: PI_MODE_RPC,
        discovery: options,
        load_lines,
        protocol,
        ring,
    };
    let code = pi_hooks_host::serve::run(setup);
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}

/// `serve --identity ID --data-dir DIR` (an isolated plugin's child): the one --hook plugin
/// is `ID` with its folder at `DIR`, as in the host that started this child.
fn assign_own(
    (identity, data_dir): (Option<&str>, Option<std::path::PathBuf>),
    options: &pi_hooks_host::plugin_files::discover::DiscoveryOptions,
) -> Result<(), CommandError> {
    let [hook] = options.explicit.as_slice() else {
        return Err(CommandError::usage(
            "--identity and --data-dir name one plugin's: give exactly one --hook",
        ));
    };
    let plugin = pi_hooks_host::plugin_files::paths::resolve(hook, &options.cwd);
    let identity = match identity {
        Some(text) => pi_hooks_host::plugin::own::parse_tagged(text)
            .map_err(|e| CommandError::usage(format!("--identity: {e}")))?,
        None => pi_hooks_host::identity::PluginIdentity::library(&plugin),
    };
    if let Some(dir) = &data_dir
        && !dir.is_absolute()
    {
        return Err(CommandError::usage(format!(
            "--data-dir {}: give an absolute path",
            escape(&dir.display().to_string())
        )));
    }
    pi_hooks_host::plugin::own::assign(&plugin, identity, data_dir);
    Ok(())
}

/// `serve --sandbox GRANT` (an isolated plugin's child, `pi_hooks_host::sandbox`): confines
/// this process to the grant before the --hook file is opened, so its static constructors
/// run confined too. It may still read the file and the settings files it reads.
fn confine_serve(
    grant: &str,
    options: &pi_hooks_host::plugin_files::discover::DiscoveryOptions,
) -> Result<(), CommandError> {
    let grant: pi_hooks_host::sandbox::Grant = serde_json::from_str(grant)
        .map_err(|e| CommandError::usage(format!("--sandbox: not a grant ({e})")))?;
    let [hook] = options.explicit.as_slice() else {
        return Err(CommandError::usage(
            "--sandbox confines one plugin: give exactly one --hook",
        ));
    };
    let plugin = pi_hooks_host::plugin_files::paths::resolve(hook, &options.cwd);
    let settings = [
        options.agent_dir.join("settings.json"),
        options.cwd.join(".pi").join("settings.json"),
    ];
    pi_hooks_host::sandbox::confine(grant, &plugin, &settings).map_err(CommandError::failed)
}

/// The session of this run: in memory, the named file (created when missing), the most recent
/// one of `cwd` (`--continue`), or a new file in the agent directory's sessions folder.
fn open_session(
    args: &SessionArgs,
    agent: &std::path::Path,
    cwd: &std::path::Path,
    report: &pi_hooks_host::lifecycle::load::LoadReport,
    mode: u32,
) -> Result<SessionStore, CommandError> {
    let failed = |e: &dyn std::fmt::Display| CommandError::failed(escape(&e.to_string()));
    let open = |path: &std::path::Path| {
        let (store, warnings) = SessionStore::open(path).map_err(|e| failed(&e))?;
        for warning in warnings {
            write_stderr(&format!("pi-hooks: warning: {}", escape(&warning)));
        }
        Ok(store)
    };
    if args.no_session {
        return Ok(SessionStore::in_memory(cwd));
    }
    if let Some(path) = &args.session {
        let path = resolve(&path.to_string_lossy(), cwd);
        return if path.exists() {
            open(&path)
        } else {
            SessionStore::create(path, cwd).map_err(|e| failed(&e))
        };
    }
    let dir = match &args.session_dir {
        Some(dir) => resolve(&dir.to_string_lossy(), cwd),
        None => plugin_session_dir(report, cwd, mode).unwrap_or_else(|| session_dir(agent, cwd)),
    };
    match most_recent(&dir).filter(|_| args.continue_session) {
        Some(path) => open(&path),
        None => SessionStore::create(new_session_path(&dir), cwd).map_err(|e| failed(&e)),
    }
}
