//! [`ModelCatalog`]: several models behind one [`Model`], so a session can switch between
//! them (`set_model`, cycling): the scripted demo beside the providers of pi's `models.json`,
//! say. Calls go to the model that offers the selected one; every model hears `new_prompt`.

use serde_json::Value;

use super::{AssistantEvent, CancelToken, Model, ModelRequest};

/// Models in the order they are offered; one of them selected.
pub struct ModelCatalog {
    models: Vec<Box<dyn Model>>,
    selected: usize,
}

impl ModelCatalog {
    /// A catalog over `models` (at least one); the first one's selected model is selected.
    pub fn new(models: Vec<Box<dyn Model>>) -> ModelCatalog {
        assert!(!models.is_empty(), "a ModelCatalog needs a model");
        ModelCatalog {
            models,
            selected: 0,
        }
    }

    fn current(&mut self) -> &mut dyn Model {
        self.models[self.selected].as_mut()
    }
}

impl Model for ModelCatalog {
    fn info(&self) -> Value {
        self.models[self.selected].info()
    }

    fn available(&self) -> Vec<Value> {
        let mut all: Vec<Value> = Vec::new();
        for model in self.models.iter().flat_map(|m| m.available()) {
            if !all.iter().any(|have| super::same_model(have, &model)) {
                all.push(model);
            }
        }
        all
    }

    fn select(&mut self, provider: &str, id: &str) -> Result<Value, String> {
        for (at, model) in self.models.iter_mut().enumerate() {
            if let Ok(info) = model.select(provider, id) {
                self.selected = at;
                return Ok(info);
            }
        }
        Err(format!("Model not found: {provider}/{id}"))
    }

    fn new_prompt(&mut self, prompt: &str) {
        for model in &mut self.models {
            model.new_prompt(prompt);
        }
    }

    fn request_body(&self, request: &ModelRequest<'_>) -> Value {
        self.models[self.selected].request_body(request)
    }

    fn complete(
        &mut self,
        body: &Value,
        cancel: &CancelToken,
        on_event: &mut dyn FnMut(AssistantEvent, &Value),
    ) -> Value {
        self.current().complete(body, cancel, on_event)
    }

    fn summarize(
        &mut self,
        system_prompt: &str,
        prompt: &str,
        max_tokens: u64,
    ) -> Result<String, String> {
        self.current().summarize(system_prompt, prompt, max_tokens)
    }
}
