//! The models an OpenAI-compatible provider offers: pi's `<agentDir>/models.json` (read as pi
//! reads it, see pi's `docs/models.md`) and the one `--provider NAME --base-url URL --model ID`
//! names on the command line.
//!
//! Only providers and models whose `api` is `openai-completions` are offered; the others
//! (`anthropic-messages`, `openai-responses`, `google-generative-ai`) are left out, and asking
//! for one by name says so.

use std::path::Path;

use serde_json::{Value, json};

/// `--base-url` default for the provider `openai` when models.json does not name it.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment variable the API key of a command-line provider comes from.
pub const OPENAI_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// One model of an OpenAI-compatible provider, ready to be asked.
#[derive(Debug, Clone)]
pub struct ProviderModel {
    /// pi's `Model` object: `{id, name, api, provider, baseUrl, reasoning, input, cost,
    /// contextWindow, maxTokens}` (plus `headers` and `compat` when configured).
    pub info: Value,
    /// The API key as configured: `!command`, a template with `$VAR`s, or the key itself
    /// (resolved at request time by [`resolve_config_value`], as pi does); `None` sends no
    /// `Authorization`.
    pub api_key: Option<String>,
    /// The command line's provider (`$OPENAI_API_KEY`): a key that does not resolve sends no
    /// `Authorization` rather than failing (a `models.json` key that does not resolve fails
    /// the request, as in pi).
    pub key_optional: bool,
    /// Extra request headers, values resolved as `api_key` is.
    pub headers: Vec<(String, String)>,
    /// How far the server follows OpenAI (pi's `compat`, detected and configured).
    pub compat: Compat,
}

/// pi's `OpenAICompletionsCompat`, the fields this provider uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compat {
    /// Send `store: false`.
    pub supports_store: bool,
    /// Send the system prompt as a `developer` message for reasoning models.
    pub supports_developer_role: bool,
    /// Send `stream_options: {include_usage: true}`.
    pub supports_usage_in_streaming: bool,
    /// `max_completion_tokens` or `max_tokens`.
    pub max_tokens_field: String,
    /// Name the tool on `tool` messages.
    pub requires_tool_result_name: bool,
    /// Put an assistant message between tool results and a user message.
    pub requires_assistant_after_tool_result: bool,
    /// Send earlier thinking as text.
    pub requires_thinking_as_text: bool,
    /// Send `strict: false` in tool definitions.
    pub supports_strict_mode: bool,
}

impl Compat {
    /// pi's `detectCompat`: what a provider name and base URL imply.
    pub fn detect(provider: &str, base_url: &str) -> Compat {
        let has = |s: &str| base_url.contains(s);
        let zai = provider == "zai" || has("api.z.ai");
        let moonshot = provider.starts_with("moonshotai") || has("api.moonshot.");
        let cf_workers = provider == "cloudflare-workers-ai" || has("api.cloudflare.com");
        let cf_gateway = provider == "cloudflare-ai-gateway" || has("gateway.ai.cloudflare.com");
        let non_standard = ["cerebras", "xai", "opencode"].contains(&provider)
            || [
                "cerebras.ai",
                "api.x.ai",
                "chutes.ai",
                "deepseek.com",
                "opencode.ai",
            ]
            .iter()
            .any(|s| has(s))
            || zai
            || moonshot
            || cf_workers
            || cf_gateway;
        let max_tokens = has("chutes.ai") || moonshot || cf_gateway;
        Compat {
            supports_store: !non_standard,
            supports_developer_role: !non_standard,
            supports_usage_in_streaming: true,
            max_tokens_field: if max_tokens {
                "max_tokens"
            } else {
                "max_completion_tokens"
            }
            .into(),
            requires_tool_result_name: false,
            requires_assistant_after_tool_result: false,
            requires_thinking_as_text: false,
            supports_strict_mode: !moonshot && !cf_gateway,
        }
    }

    /// Applies a configured `compat` object (unknown fields are pi's and ignored here).
    fn apply(&mut self, config: &Value) {
        let flag = |name: &str, field: &mut bool| {
            if let Some(value) = config.get(name).and_then(Value::as_bool) {
                *field = value;
            }
        };
        flag("supportsStore", &mut self.supports_store);
        flag("supportsDeveloperRole", &mut self.supports_developer_role);
        flag(
            "supportsUsageInStreaming",
            &mut self.supports_usage_in_streaming,
        );
        flag(
            "requiresToolResultName",
            &mut self.requires_tool_result_name,
        );
        flag(
            "requiresAssistantAfterToolResult",
            &mut self.requires_assistant_after_tool_result,
        );
        flag(
            "requiresThinkingAsText",
            &mut self.requires_thinking_as_text,
        );
        flag("supportsStrictMode", &mut self.supports_strict_mode);
        if let Some(field) = config.get("maxTokensField").and_then(Value::as_str) {
            self.max_tokens_field = field.to_owned();
        }
    }
}

/// A provider model named on the command line (`--provider NAME --base-url URL --model ID`),
/// its key from `OPENAI_API_KEY`.
pub fn command_line_model(provider: &str, base_url: &str, id: &str) -> ProviderModel {
    let info = model_info(provider, base_url, &json!({"id": id}), &json!({}));
    ProviderModel {
        compat: Compat::detect(provider, base_url),
        info,
        api_key: Some(format!("${OPENAI_API_KEY_ENV}")),
        key_optional: true,
        headers: Vec::new(),
    }
}

/// What `models.json` offers.
#[derive(Debug, Default)]
pub struct ModelsJson {
    /// The OpenAI-compatible models, in file order.
    pub models: Vec<ProviderModel>,
    /// `(provider, id, api)` of the models left out because they speak another API.
    pub other_api: Vec<(String, String, String)>,
}

impl ModelsJson {
    /// Reads `path`; a missing file offers nothing. The error names the file and the field.
    pub fn read(path: &Path) -> Result<ModelsJson, String> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ModelsJson::default()),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let root: Value = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{} is not valid JSON: {e}; fix it or move it away",
                path.display()
            )
        })?;
        Self::parse(&root).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads a parsed `models.json`.
    pub fn parse(root: &Value) -> Result<ModelsJson, String> {
        let mut out = ModelsJson::default();
        let Some(providers) = root.get("providers") else {
            return Ok(out);
        };
        let providers = providers
            .as_object()
            .ok_or("\"providers\" must be an object of providers by name")?;
        for (name, provider) in providers {
            let Some(models) = provider.get("models") else {
                // An override of a built-in provider (baseUrl, modelOverrides): nothing new.
                continue;
            };
            let models = models
                .as_array()
                .ok_or_else(|| format!("providers.{name}.models must be an array"))?;
            let base_url = provider.get("baseUrl").and_then(Value::as_str);
            let api = provider.get("api").and_then(Value::as_str);
            let headers = match provider.get("headers") {
                None => Vec::new(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(k, v)| {
                        v.as_str()
                            .map(|v| (k.clone(), v.to_owned()))
                            .ok_or_else(|| format!("providers.{name}.headers.{k} must be a string"))
                    })
                    .collect::<Result<_, _>>()?,
                Some(_) => return Err(format!("providers.{name}.headers must be an object")),
            };
            for (n, model) in models.iter().enumerate() {
                let Some(id) = model.get("id").and_then(Value::as_str) else {
                    return Err(format!("providers.{name}.models[{n}] has no string \"id\""));
                };
                let api = model.get("api").and_then(Value::as_str).or(api);
                if api != Some("openai-completions") {
                    let api = api.unwrap_or("(none)").to_owned();
                    out.other_api.push((name.clone(), id.to_owned(), api));
                    continue;
                }
                let base_url = base_url.ok_or_else(|| {
                    format!("providers.{name} has models but no \"baseUrl\"; add the server's URL, such as http://localhost:11434/v1")
                })?;
                let mut compat = Compat::detect(name, base_url);
                compat.apply(provider.get("compat").unwrap_or(&Value::Null));
                compat.apply(model.get("compat").unwrap_or(&Value::Null));
                let mut model_headers = headers.clone();
                if let Some(Value::Object(map)) = model.get("headers") {
                    for (k, v) in map {
                        if let Some(v) = v.as_str() {
                            model_headers.retain(|(have, _)| have != k);
                            model_headers.push((k.clone(), v.to_owned()));
                        }
                    }
                }
                out.models.push(ProviderModel {
                    info: model_info(name, base_url, model, provider),
                    api_key: provider
                        .get("apiKey")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    headers: model_headers,
                    key_optional: false,
                    compat,
                });
            }
        }
        Ok(out)
    }
}

/// pi's `Model` object for a models.json entry, with its documented defaults.
fn model_info(provider: &str, base_url: &str, model: &Value, provider_config: &Value) -> Value {
    let id = model["id"].as_str().unwrap_or_default();
    let mut info = json!({
        "id": id,
        "name": model.get("name").and_then(Value::as_str).unwrap_or(id),
        "api": "openai-completions",
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": model.get("reasoning").and_then(Value::as_bool).unwrap_or(false),
        "input": model.get("input").cloned().unwrap_or_else(|| json!(["text"])),
        "cost": model.get("cost").cloned().unwrap_or_else(|| json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0})),
        "contextWindow": model.get("contextWindow").and_then(Value::as_u64).unwrap_or(128_000),
        "maxTokens": model.get("maxTokens").and_then(Value::as_u64).unwrap_or(16_384),
    });
    for field in ["headers", "compat"] {
        if let Some(value) = model.get(field).or_else(|| provider_config.get(field)) {
            info[field] = value.clone();
        }
    }
    info
}

/// pi 1.6's value resolution for `apiKey` and `headers` (its
/// `dist/core/resolve-config-value.js`, since pi 0.77):
///
/// - `!command` runs the command with `sh -c` and uses its output, trimmed (at most 10 s, as
///   pi);
/// - anything else is a template: `$NAME` and `${NAME}` are replaced by the environment
///   variable's value, `$$` is a `$` and `$!` a `!`; a `$` not followed by a name (or a
///   `${…}` that is not a name) stays as it is; the rest is literal, so a plain `sk-…` or
///   `MY_KEY` is sent as written.
///
/// It fails as pi's `resolveConfigValueOrThrow` does, with pi's words: a variable that is
/// unset or empty, a command that fails or prints nothing. `description` says what the value
/// is (`API key for provider "local"`).
///
/// A difference from pi 0.73.1 (which pi-hooks followed before): there a plain value was
/// the name of an environment variable when one was set; in pi 1.6 it is literal.
pub fn resolve_config_value(value: &str, description: &str) -> Result<String, String> {
    if let Some(command) = value.strip_prefix('!') {
        let failed = || format!("Failed to resolve {description} from shell command: {command}");
        return run_with_limit(command, COMMAND_LIMIT)
            .filter(|text| !text.is_empty())
            .ok_or_else(failed);
    }
    let mut resolved = String::new();
    let mut missing: Vec<&str> = Vec::new();
    for part in template_parts(value) {
        match part {
            Part::Literal(text) => resolved.push_str(text),
            Part::Env(name) => match std::env::var(name) {
                Ok(text) if !text.is_empty() => resolved.push_str(&text),
                _ => {
                    if !missing.contains(&name) {
                        missing.push(name);
                    }
                }
            },
        }
    }
    match missing.as_slice() {
        [] => Ok(resolved),
        [one] => Err(format!(
            "Failed to resolve {description} from environment variable: {one}"
        )),
        many => Err(format!(
            "Failed to resolve {description} from environment variables: {}",
            many.join(", ")
        )),
    }
}

/// How long a `!command` may run (pi's `timeout: 10000`); it is then killed and fails.
const COMMAND_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// `sh -c command`'s standard output, trimmed, when it exits with 0 within `limit`.
fn run_with_limit(command: &str, limit: std::time::Duration) -> Option<String> {
    use std::io::Read;
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < limit => {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    // A grandchild still holding the pipe keeps the reader waiting: not waited for then.
    let bytes = if status.is_some() {
        reader.join().ok()?
    } else {
        Vec::new()
    };
    status
        .filter(std::process::ExitStatus::success)
        .map(|_| String::from_utf8_lossy(&bytes).trim().to_owned())
}

/// A piece of a config value template.
#[derive(Debug, PartialEq, Eq)]
enum Part<'a> {
    Literal(&'a str),
    Env(&'a str),
}

/// pi's `parseConfigValueTemplate`.
fn template_parts(config: &str) -> Vec<Part<'_>> {
    let is_name = |s: &str| {
        let mut chars = s.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let mut parts = Vec::new();
    let mut index = 0;
    while index < config.len() {
        let Some(dollar) = config[index..].find('$').map(|i| index + i) else {
            parts.push(Part::Literal(&config[index..]));
            break;
        };
        if dollar > index {
            parts.push(Part::Literal(&config[index..dollar]));
        }
        let rest = &config[dollar + 1..];
        if rest.starts_with('$') || rest.starts_with('!') {
            parts.push(Part::Literal(&rest[..1]));
            index = dollar + 2;
        } else if let Some(braced) = rest.strip_prefix('{') {
            match braced.find('}') {
                None => {
                    parts.push(Part::Literal("$"));
                    index = dollar + 1;
                }
                Some(end) => {
                    let name = &braced[..end];
                    if is_name(name) {
                        parts.push(Part::Env(name));
                    } else {
                        parts.push(Part::Literal(&config[dollar..dollar + 3 + end]));
                    }
                    index = dollar + 3 + end;
                }
            }
        } else {
            let len = rest
                .char_indices()
                .find(|&(i, c)| {
                    !(c.is_ascii_alphabetic() || c == '_' || (i > 0 && c.is_ascii_digit()))
                })
                .map_or(rest.len(), |(i, _)| i);
            if len > 0 {
                parts.push(Part::Env(&rest[..len]));
                index = dollar + 1 + len;
            } else {
                parts.push(Part::Literal("$"));
                index = dollar + 1;
            }
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_openai_providers_with_defaults_and_skips_other_apis() {
        let file = json!({"providers": {
            "ollama": {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions",
                       "apiKey": "ollama", "compat": {"supportsDeveloperRole": false},
                       "models": [{"id": "llama3.1:8b"}, {"id": "qwen", "contextWindow": 32000,
                                   "compat": {"maxTokensField": "max_tokens"}}]},
            "claude": {"baseUrl": "https://x", "api": "anthropic-messages", "models": [{"id": "c"}]},
            "anthropic": {"baseUrl": "https://proxy"}
        }});
        let read = ModelsJson::parse(&file).unwrap();
        assert_eq!(read.models.len(), 2);
        let first = &read.models[0];
        assert_eq!(first.info["contextWindow"], 128_000);
        assert_eq!(first.info["maxTokens"], 16_384);
        assert_eq!(first.info["name"], "llama3.1:8b");
        assert!(!first.compat.supports_developer_role && first.compat.supports_store);
        assert_eq!(read.models[1].compat.max_tokens_field, "max_tokens");
        assert_eq!(read.models[1].info["contextWindow"], 32_000);
        assert_eq!(
            read.other_api,
            vec![("claude".into(), "c".into(), "anthropic-messages".into())]
        );
    }

    #[test]
    fn a_bad_entry_names_its_field() {
        let error = ModelsJson::parse(
            &json!({"providers": {"p": {"api": "openai-completions", "models": [{"name": "x"}]}}}),
        )
        .unwrap_err();
        assert!(error.contains("providers.p.models[0]"), "{error}");
        let error = ModelsJson::parse(
            &json!({"providers": {"p": {"api": "openai-completions", "models": [{"id": "x"}]}}}),
        )
        .unwrap_err();
        assert!(error.contains("baseUrl"), "{error}");
    }

    #[test]
    fn config_values_resolve_as_pi_1_6_resolves_them() {
        let r = |v: &str| resolve_config_value(v, "API key for provider \"p\"");
        let path = std::env::var("PATH").unwrap();
        assert_eq!(r("sk-literal").unwrap(), "sk-literal");
        assert_eq!(r("PATH").unwrap(), "PATH");
        assert_eq!(r("$PATH").unwrap(), path);
        assert_eq!(r("${PATH}").unwrap(), path);
        assert_eq!(r("a-${PATH}-b").unwrap(), format!("a-{path}-b"));
        assert_eq!(
            r("$$PATH $!x $ ${not a name} ${x").unwrap(),
            "$PATH !x $ ${not a name} ${x"
        );
        assert_eq!(r("!echo ' from-command '").unwrap(), "from-command");
        assert_eq!(
            r("!exit 3").unwrap_err(),
            "Failed to resolve API key for provider \"p\" from shell command: exit 3"
        );
        assert_eq!(
            r("$PI_HOOKS_UNSET_X-$PI_HOOKS_UNSET_Y").unwrap_err(),
            "Failed to resolve API key for provider \"p\" from environment variables: PI_HOOKS_UNSET_X, PI_HOOKS_UNSET_Y"
        );
        assert_eq!(
            run_with_limit("sleep 5; echo late", std::time::Duration::from_millis(200)),
            None
        );
        assert_eq!(
            template_parts("$A1_b2c${D}"),
            [Part::Env("A1_b2c"), Part::Env("D")]
        );
    }
}
