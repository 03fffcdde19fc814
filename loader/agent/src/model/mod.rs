//! The model behind the agent loop: the [`Model`] trait; the [`ScriptedModel`], which plays
//! a JSON script of assistant turns, deterministic and offline; the [`OpenAiModel`], an
//! OpenAI-compatible chat-completions provider; and the [`ModelCatalog`], which offers
//! several of them in one session.
//!
//! Every model call goes through the provider request hook, as in pi: the model builds its
//! request body ([`Model::request_body`]), plugins see it in `before_provider_request` (any
//! result other than "nothing" replaces it), the model is called with the final body, and
//! `after_provider_response` follows.

mod catalog;
pub mod openai;
mod scripted;

use serde_json::Value;

pub use crate::tools::CancelToken;

pub use catalog::ModelCatalog;
pub use openai::OpenAiModel;
pub use scripted::{DEMO_SCRIPT, ScriptedModel};

/// What the model is asked.
pub struct ModelRequest<'a> {
    /// The system prompt.
    pub system_prompt: &'a str,
    /// The messages, after the `context` event.
    pub messages: &'a [Value],
    /// The active tools as `{name, description, parameters}`.
    pub tools: &'a [Value],
}

/// A streaming event of an assistant message, as pi's `assistantMessageEvent`.
pub type AssistantEvent = Value;

/// What changes a provider request's HTTP headers just before it is sent: given the headers
/// as assembled (name, value), gives the ones to send. The agent sets it to the plugins'
/// `before_provider_headers` (pi 0.80.4).
pub type HeadersHook =
    std::sync::Arc<dyn Fn(Vec<(String, String)>) -> Vec<(String, String)> + Send + Sync>;

/// A model (a provider and the models it offers).
pub trait Model: Send {
    /// The selected model, as pi's `Model` object: `{id, name, api, provider, contextWindow,
    /// maxTokens, ...}`.
    fn info(&self) -> Value;
    /// Every model this provider offers (`get_available_models`, cycling); the selected one
    /// included.
    fn available(&self) -> Vec<Value> {
        vec![self.info()]
    }
    /// Selects the model `provider`/`id` among [`Model::available`]; returns its info. The
    /// error is pi's: `Model not found: <provider>/<id>`.
    fn select(&mut self, provider: &str, id: &str) -> Result<Value, String> {
        let info = self.info();
        if info["provider"] == provider && info["id"] == id {
            Ok(info)
        } else {
            Err(format!("Model not found: {provider}/{id}"))
        }
    }
    /// Starts a new prompt (the scripted model rewinds).
    fn new_prompt(&mut self, prompt: &str);
    /// Sets the [`HeadersHook`] its HTTP requests pass through; a model that sends no HTTP
    /// request (the scripted one) has no headers and ignores it.
    fn set_headers_hook(&mut self, _hook: HeadersHook) {}
    /// The provider request body for `request` (what `before_provider_request` shows).
    fn request_body(&self, request: &ModelRequest<'_>) -> Value;
    /// Produces the next assistant message from the (possibly replaced) request `body`,
    /// streaming its events through `on_event` (each gets the event and the partial message
    /// so far). Once `cancel` is set (an abort) it returns what it has at once, without
    /// waiting for the rest of the answer; the caller marks the message aborted.
    fn complete(
        &mut self,
        body: &Value,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AssistantEvent, &Value),
    ) -> Value;
    /// Answers a summarization request (compaction, branch summaries): one user message
    /// `prompt` under `system_prompt`, at most `max_tokens` long; the summary text, or why
    /// the model could not answer.
    fn summarize(
        &mut self,
        system_prompt: &str,
        prompt: &str,
        max_tokens: u64,
    ) -> Result<String, String>;
}

/// Whether two model infos name the same model (pi's `modelsAreEqual`: provider and id).
pub fn same_model(a: &Value, b: &Value) -> bool {
    a["provider"] == b["provider"] && a["id"] == b["id"]
}
