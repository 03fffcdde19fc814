//! [`OpenAiModel`]: an OpenAI-compatible chat-completions provider (OpenAI, llama.cpp's
//! server, vLLM, Ollama, LM Studio, proxies), streaming, as pi's `openai-completions` API.
//!
//! - [`models_json`]: the models on offer (pi's `models.json`, the command line).
//! - [`request`]: the request body, as pi builds it.
//! - [`transport`]: HTTP and server-sent events, and pi's wording of failures.
//! - [`decode`]: streamed chunks into pi's assistant message and its events.
//!
//! A failure anywhere (no connection, an HTTP error, a chunk that is not JSON, a stream cut
//! off) ends the assistant message with `stopReason: "error"` and a readable
//! `errorMessage`, as pi does; the session goes on.

pub mod decode;
pub mod models_json;
pub mod request;
pub mod transport;

use serde_json::{Value, json};

use self::decode::{OnEvent, StreamDecoder};
use self::models_json::{ProviderModel, resolve_config_value};
use self::transport::Chunk;
use super::{AssistantEvent, CancelToken, Model, ModelRequest};

/// The OpenAI-compatible models on offer, one of them selected.
pub struct OpenAiModel {
    models: Vec<ProviderModel>,
    selected: usize,
    /// The longest wait for the next stream event (`streamIdleTimeout`).
    idle_timeout: std::time::Duration,
    /// The plugins' `before_provider_headers`, applied to every request's headers.
    headers_hook: Option<super::HeadersHook>,
}

impl OpenAiModel {
    /// A provider over `models` (at least one), the first selected.
    pub fn new(models: Vec<ProviderModel>) -> OpenAiModel {
        assert!(!models.is_empty(), "an OpenAiModel needs a model");
        OpenAiModel {
            models,
            selected: 0,
            idle_timeout: transport::DEFAULT_IDLE_TIMEOUT,
            headers_hook: None,
        }
    }

    /// The same provider ending a turn whose stream goes `idle` without an event (silent, or
    /// trickling bytes that never make one) with "Request timed out." (settings.json's
    /// `streamIdleTimeout`; default [`transport::DEFAULT_IDLE_TIMEOUT`]).
    pub fn with_idle_timeout(mut self, idle: std::time::Duration) -> OpenAiModel {
        self.idle_timeout = idle;
        self
    }

    fn current(&self) -> &ProviderModel {
        &self.models[self.selected]
    }

    /// `{baseUrl}/chat/completions` and the headers of a request to the selected model.
    fn endpoint(&self) -> Result<(String, Vec<(String, String)>), String> {
        let model = self.current();
        let base = model.info["baseUrl"].as_str().unwrap_or_default();
        let url = format!("{}/chat/completions", base.trim_end_matches('/'));
        let mut headers = Vec::new();
        let provider = model.info["provider"].as_str().unwrap_or_default();
        if let Some(key) = &model.api_key {
            match resolve_config_value(key, &format!("API key for provider \"{provider}\"")) {
                Ok(key) if !key.is_empty() => {
                    headers.push(("Authorization".to_owned(), format!("Bearer {key}")));
                }
                Ok(_) => {}
                Err(_) if model.key_optional => {}
                Err(e) => return Err(e),
            }
        }
        for (name, value) in &model.headers {
            headers.push((
                name.clone(),
                resolve_config_value(value, &format!("provider \"{provider}\" header \"{name}\""))?,
            ));
        }
        Ok((url, headers))
    }

    /// Sends `body` and decodes the streamed answer; every failure ends the message with
    /// `stopReason: "error"`.
    ///
    /// An abort (`cancel`) ends the message at once with what arrived (the caller marks it
    /// aborted), even while the server is silent.
    fn stream(&self, body: &Value, cancel: &CancelToken, on_event: OnEvent<'_>) -> Value {
        let mut decoder = StreamDecoder::new(&self.current().info);
        let opened = self.endpoint().and_then(|(url, headers)| {
            let headers = match &self.headers_hook {
                Some(hook) => hook(headers),
                None => headers,
            };
            transport::open(&url, &headers, &body.to_string(), cancel, self.idle_timeout)
        });
        let mut events = match opened {
            Ok(events) => events,
            Err(_) if cancel.is_cancelled() => return decoder.finish(on_event),
            Err(error) => return decoder.fail(&error, on_event),
        };
        decoder.start(on_event);
        loop {
            match events.next_chunk() {
                Ok(Chunk::Data(chunk)) => decoder.chunk(&chunk, on_event),
                Ok(Chunk::End) => return decoder.finish(on_event),
                Err(_) if cancel.is_cancelled() => return decoder.finish(on_event),
                Err(error) => return decoder.fail(&error, on_event),
            }
        }
    }
}

impl Model for OpenAiModel {
    fn info(&self) -> Value {
        self.current().info.clone()
    }

    fn available(&self) -> Vec<Value> {
        self.models.iter().map(|m| m.info.clone()).collect()
    }

    fn select(&mut self, provider: &str, id: &str) -> Result<Value, String> {
        let at = self
            .models
            .iter()
            .position(|m| m.info["provider"] == provider && m.info["id"] == id)
            .ok_or_else(|| format!("Model not found: {provider}/{id}"))?;
        self.selected = at;
        Ok(self.info())
    }

    fn new_prompt(&mut self, _prompt: &str) {}

    fn set_headers_hook(&mut self, hook: super::HeadersHook) {
        self.headers_hook = Some(hook);
    }

    /// pi's chat-completions body (`model`, `messages`, `stream`, `stream_options`, `store`,
    /// `max_completion_tokens`, `tools`).
    fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        request::chat_body(self.current(), request, None)
    }

    fn complete(
        &mut self,
        body: &Value,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AssistantEvent, &Value),
    ) -> Value {
        self.stream(body, cancel, on_event)
    }

    /// Streams one request, as pi's `completeSimple` does, and joins the text blocks; an
    /// error reads as pi's: `Summarization failed: <errorMessage>`.
    fn summarize(
        &mut self,
        system_prompt: &str,
        prompt: &str,
        max_tokens: u64,
    ) -> Result<String, String> {
        let messages = [
            json!({"role": "user", "content": [{"type": "text", "text": prompt}], "timestamp": crate::now_ms()}),
        ];
        let request = ModelRequest {
            system_prompt,
            messages: &messages,
            tools: &[],
        };
        let body = request::chat_body(self.current(), &request, Some(max_tokens));
        let message = self.stream(&body, &CancelToken::new(), &mut |_, _| {});
        if message["stopReason"] == "error" {
            return Err(format!(
                "Summarization failed: {}",
                message["errorMessage"].as_str().unwrap_or("Unknown error")
            ));
        }
        Ok(message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
