//! `pi-hooks demo-model`: the scripted model (the embedded demo, or `--script FILE`) served as
//! a local OpenAI-compatible endpoint on 127.0.0.1, so that pi itself (or any OpenAI client,
//! `pi-hooks run --provider ... --base-url ...` included) can play the demo with no key and
//! no network: `POST /v1/chat/completions` (streamed or not, tool calls included) and
//! `GET /v1/models`. It prints the `models.json` entry that points pi at it, and with
//! `--write-models-json` adds it to the agent directory's `models.json`.
//!
//! `${SCRATCH}` is a scratch folder the server makes at start (with the `build/output.txt` the
//! demo looks at, put back at each prompt's first turn) and removes when it stops (SIGINT,
//! SIGTERM, SIGHUP); `${CWD}` is the server's working directory, since a request does not say
//! where its client runs. Both are announced on start.
//!
//! The HTTP side (`http`) is a few dozen lines over `std::net` and `httparse`; it stays in
//! the CLI, out of the host library.

mod completions;
mod http;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use serde_json::{Value, json};

use super::run::{load_script, scripted_model};
use super::{CommandError, current_dir, write_stderr, write_stdout};
use completions::{DemoEndpoint, Reply, error_body};
use pi_hooks_agent::model::Model;
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::plugin_files::paths::agent_dir;

/// The provider name of the models.json entry.
pub const PROVIDER: &str = "pi-hooks-demo";

/// The port served on without `--port`.
const DEFAULT_PORT: u16 = 8377;

/// `pi-hooks demo-model`'s options.
#[derive(Debug, Args)]
pub(super) struct DemoModelArgs {
    /// The port on 127.0.0.1 (0: any free port, announced on start).
    #[arg(long, default_value_t = DEFAULT_PORT, value_name = "N")]
    port: u16,
    /// A JSON script of assistant turns for the scripted model (default: the embedded demo).
    #[arg(long, value_name = "FILE")]
    script: Option<PathBuf>,
    /// Print pi's models.json entry for this endpoint (a whole models.json) and exit.
    #[arg(long, conflicts_with = "write_models_json")]
    print_models_json: bool,
    /// Add the provider `pi-hooks-demo` to `<agentDir>/models.json` (created if missing; the
    /// other providers are kept), then serve.
    #[arg(long)]
    write_models_json: bool,
    /// Write a line to stderr for each turn played (quiet by default, so that the server can
    /// run in the background of the terminal pi runs in).
    #[arg(long)]
    verbose: bool,
}

/// Runs `pi-hooks demo-model`.
pub(super) fn demo_model(args: DemoModelArgs) -> Result<ExitCode, CommandError> {
    if args.print_models_json {
        if args.port == 0 {
            return Err(CommandError::usage(
                "--print-models-json needs the port the server will use (--port N, not 0)",
            ));
        }
        let model = load_script(args.script.as_deref())?;
        write_stdout(&format!(
            "{:#}\n",
            models_json(&model.available(), args.port)
        ))?;
        return Ok(ExitCode::SUCCESS);
    }
    let cwd = current_dir();
    let (model, scratch) = scripted_model(args.script.as_deref(), &cwd)?;
    let listener = TcpListener::bind(("127.0.0.1", args.port)).map_err(|e| {
        CommandError::failed(format!(
            "cannot listen on 127.0.0.1:{}: {e}; choose another port with --port N (0 for any free one)",
            args.port
        ))
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| CommandError::failed(format!("cannot tell which port was bound: {e}")))?
        .port();
    let models = model.available();
    let entry = models_json(&models, port);
    let mut text = format!(
        "pi-hooks demo-model: serving the scripted {} at http://127.0.0.1:{port}/v1 (OpenAI chat completions, streamed, with tool calls; any key)\n",
        match &args.script {
            Some(path) => format!("model of {}", escape(&path.display().to_string())),
            None => "demo model".to_owned(),
        }
    );
    if let Some(scratch) = &scratch {
        text.push_str(&format!(
            "  ${{SCRATCH}} is {} (build/output.txt is put back at each prompt's first turn; removed when this server stops)\n",
            escape(&scratch.path().display().to_string())
        ));
    }
    text.push_str(&format!(
        "  ${{CWD}} is {} (this server's working directory)\n",
        escape(&cwd.display().to_string())
    ));
    if args.write_models_json {
        let file = agent_dir()
            .map_err(CommandError::setup)?
            .join("models.json");
        let done = write_models_json(&file, &entry["providers"][PROVIDER])?;
        text.push_str(&format!(
            "{done} the provider {PROVIDER} {} {}\n",
            if done == "Added" { "to" } else { "in" },
            escape(&file.display().to_string())
        ));
    } else {
        text.push_str(&format!(
            "pi's models.json entry (put it in ~/.pi/agent/models.json, or start with --write-models-json):\n{entry:#}\n"
        ));
    }
    let first = models
        .first()
        .and_then(|m| m["id"].as_str())
        .unwrap_or("demo");
    text.push_str(&format!(
        "Then: pi --provider {PROVIDER} --model {} \"Run the demo.\"\nStop with Ctrl+C.\n",
        escape(first)
    ));
    write_stdout(&text)?;

    let verbose = args.verbose;
    let endpoint = Arc::new(DemoEndpoint::new(
        model,
        scratch.as_ref().map(|s| s.path().to_path_buf()),
    ));
    std::thread::Builder::new()
        .name("demo-model-accept".into())
        .spawn(move || accept(&listener, &endpoint, verbose))
        .map_err(|e| CommandError::failed(format!("cannot start the server thread: {e}")))?;
    let signal = pi_hooks_host::services::runtime::handle().block_on(stop_signal());
    drop(scratch);
    if verbose {
        write_stderr(&format!("pi-hooks demo-model: stopped (signal {signal})"));
    }
    Ok(ExitCode::from(128u8.saturating_add(signal as u8)))
}

/// Serves every connection on a thread of its own.
fn accept(listener: &TcpListener, endpoint: &Arc<DemoEndpoint>, verbose: bool) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of file descriptors, say: wait a little rather than spin.
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        };
        let endpoint = Arc::clone(endpoint);
        let _ = std::thread::Builder::new()
            .name("demo-model-request".into())
            .spawn(move || serve(stream, &endpoint, verbose));
    }
}

/// Reads one request and answers it; the connection closes after the answer. `verbose`: a
/// line on stderr for each turn played.
fn serve(mut stream: TcpStream, endpoint: &DemoEndpoint, verbose: bool) {
    let _ = stream.set_read_timeout(Some(http::IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(http::IO_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let request = match http::read_request(&mut stream) {
        Ok(request) => request,
        Err(http::ReadFailure::Refuse(status, message)) => {
            let _ = http::write_json(
                &mut stream,
                status,
                &error_body(&message, "invalid_request_error", None),
            );
            return;
        }
        Err(http::ReadFailure::Gone) => return,
    };
    let completions = request.path.ends_with("/chat/completions");
    let models = request.path.ends_with("/models");
    let reply = match (request.method.as_str(), completions, models) {
        ("POST", true, _) => {
            let (reply, played) = endpoint.complete(&request.body);
            if let Some(played) = played.filter(|_| verbose) {
                write_stderr(&format!(
                    "pi-hooks demo-model: turn {} of the prompt ({})",
                    played.turn + 1,
                    escape(&played.summary)
                ));
            }
            reply
        }
        ("GET", _, true) => Reply::Json(endpoint.models()),
        (_, true, _) | (_, _, true) => Reply::Error(
            405,
            error_body(
                &format!("{} is not allowed here", request.method),
                "invalid_request_error",
                None,
            ),
        ),
        _ => Reply::Error(
            404,
            error_body(
                &format!(
                    "no {} here: POST /v1/chat/completions or GET /v1/models",
                    request.path
                ),
                "invalid_request_error",
                None,
            ),
        ),
    };
    let _ = match reply {
        Reply::Json(body) => http::write_json(&mut stream, 200, &body),
        Reply::Error(status, body) => http::write_json(&mut stream, status, &body),
        Reply::Stream(chunks) => http::write_event_stream(
            &mut stream,
            chunks
                .iter()
                .map(Value::to_string)
                .chain(["[DONE]".to_owned()]),
        ),
    };
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// pi's models.json with the provider [`PROVIDER`] at `port` offering `models` (pi's `Model`
/// objects, as the scripted model lists them).
fn models_json(models: &[Value], port: u16) -> Value {
    let models: Vec<Value> = models
        .iter()
        .map(|m| {
            json!({"id": m["id"], "name": m["name"], "contextWindow": m["contextWindow"],
                "maxTokens": m["maxTokens"]})
        })
        .collect();
    json!({"providers": {PROVIDER: {
        "baseUrl": format!("http://127.0.0.1:{port}/v1"),
        "api": "openai-completions",
        "apiKey": "pi-hooks-demo",
        "models": models,
    }}})
}

/// Sets `providers.pi-hooks-demo` of the models.json at `file` to `provider`, keeping
/// everything else in it; creates the file when it is missing. A file that is not a JSON
/// object is left alone and named in the error. Returns "Added" or "Updated" (the provider
/// was there).
fn write_models_json(file: &Path, provider: &Value) -> Result<&'static str, CommandError> {
    let shown = || escape(&file.display().to_string()).into_owned();
    let mut document = match std::fs::read_to_string(file) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(document @ Value::Object(_)) => document,
            Ok(_) => {
                return Err(CommandError::failed(format!(
                    "{} is not a JSON object; add the provider by hand (see --print-models-json)",
                    shown()
                )));
            }
            Err(e) => {
                return Err(CommandError::failed(format!(
                    "{} is not valid JSON ({e}); it was left as it is; fix it or add the provider by hand (see --print-models-json)",
                    shown()
                )));
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => {
            return Err(CommandError::failed(format!(
                "cannot read {}: {e}",
                shown()
            )));
        }
    };
    if !document["providers"].is_object() {
        if !document["providers"].is_null() {
            return Err(CommandError::failed(format!(
                "the \"providers\" of {} is not an object; add the provider by hand (see --print-models-json)",
                shown()
            )));
        }
        document["providers"] = json!({});
    }
    let verb = if document["providers"][PROVIDER].is_null() {
        "Added"
    } else {
        "Updated"
    };
    document["providers"][PROVIDER] = provider.clone();
    let folder = file.parent().unwrap_or(Path::new("."));
    let written = std::fs::create_dir_all(folder).and_then(|()| {
        // Written beside it and renamed over it, with the old file's permissions (it may
        // hold keys), so that pi never reads half a file.
        let mut temporary = tempfile::NamedTempFile::new_in(folder)?;
        if let Ok(metadata) = std::fs::metadata(file) {
            temporary
                .as_file()
                .set_permissions(metadata.permissions())?;
        }
        temporary.write_all(format!("{document:#}\n").as_bytes())?;
        temporary.persist(file).map_err(|e| e.error)?;
        Ok(())
    });
    written.map_err(|e| CommandError::failed(format!("cannot write {}: {e}", shown())))?;
    Ok(verb)
}

/// Waits for SIGINT, SIGTERM or SIGHUP; returns its number.
#[cfg(unix)]
async fn stop_signal() -> i32 {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut interrupt), Ok(mut term), Ok(mut hangup)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = interrupt.recv() => libc::SIGINT,
        _ = term.recv() => libc::SIGTERM,
        _ = hangup.recv() => libc::SIGHUP,
    }
}

/// Waits for Ctrl+C; returns SIGINT's number.
#[cfg(not(unix))]
async fn stop_signal() -> i32 {
    let _ = tokio::signal::ctrl_c().await;
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_its_provider_into_models_json_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("agent/models.json");
        let entry = json!({"baseUrl": "http://127.0.0.1:1/v1"});
        assert_eq!(write_models_json(&file, &entry).ok(), Some("Added"));
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(written, json!({"providers": {PROVIDER: entry}}));
        std::fs::write(
            &file,
            r#"{"providers": {"ollama": {"baseUrl": "x"}, "pi-hooks-demo": {}}, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(write_models_json(&file, &entry).ok(), Some("Updated"));
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(
            written,
            json!({"providers": {"ollama": {"baseUrl": "x"}, PROVIDER: entry}, "other": 1})
        );
        std::fs::write(&file, "{ // a comment\n}").unwrap();
        assert!(write_models_json(&file, &entry).is_err());
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "{ // a comment\n}",
            "a file it cannot read as JSON is left alone"
        );
    }
}
