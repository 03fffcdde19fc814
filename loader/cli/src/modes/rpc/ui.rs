//! The RPC mode's [`UiService`]: pi's `extension_ui_request` / `extension_ui_response`
//! sub-protocol. A dialog writes its request line and blocks the calling plugin's thread
//! until the response with its id arrives (read by the input task, which never waits on a
//! dialog), its timeout passes, or stdin closes; fire-and-forget methods only write the line.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::modes::core::LineWriter;
use pi_hooks_host::services::UiService;
use pi_hooks_session::ids::new_uuid;

/// Dialogs waiting for their `extension_ui_response`.
pub struct RpcUi {
    out: LineWriter,
    waiting: Mutex<HashMap<String, Sender<Value>>>,
    closed: AtomicBool,
    /// Status and widget keys currently set (`(method, key field, key)`), cleared on reload.
    shown: Mutex<Vec<(&'static str, &'static str, String)>>,
}

impl RpcUi {
    /// A UI writing its requests to `out`.
    pub fn new(out: LineWriter) -> Arc<Self> {
        Arc::new(RpcUi {
            out,
            waiting: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            shown: Mutex::new(Vec::new()),
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Sender<Value>>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands an `extension_ui_response` to the dialog with its `id`; a response for no
    /// waiting dialog (answered, timed out, unknown) is ignored, as pi ignores it.
    pub fn resolve(&self, response: Value) {
        let Some(id) = response.get("id").and_then(Value::as_str) else {
            return;
        };
        if let Some(waiter) = self.waiting().remove(id) {
            let _ = waiter.send(response);
        }
    }

    /// Stdin closed: every waiting dialog answers its default, new ones at once.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.waiting().clear();
    }

    /// Writes `{"type":"extension_ui_request","id":…, <request fields>}`.
    fn write_request(&self, id: &str, request: Value) {
        let mut line = Map::new();
        line.insert("type".into(), "extension_ui_request".into());
        line.insert("id".into(), id.into());
        if let Value::Object(fields) = request {
            line.extend(fields);
        }
        self.out.line(&Value::Object(line));
    }
}

impl UiService for RpcUi {
    fn dialog(&self, request: Value, timeout: Option<Duration>) -> Option<Value> {
        if self.closed.load(Ordering::Acquire) {
            return None;
        }
        let id = new_uuid();
        let (sender, receiver) = channel();
        self.waiting().insert(id.clone(), sender);
        self.write_request(&id, request);
        let answer = match timeout {
            Some(timeout) => receiver.recv_timeout(timeout).ok(),
            None => receiver.recv().ok(),
        };
        self.waiting().remove(&id);
        answer
    }

    fn fire(&self, request: Value) {
        let kinds = [
            ("setStatus", "statusKey", "statusText"),
            ("setWidget", "widgetKey", "widgetLines"),
        ];
        for (method, key_field, content) in kinds {
            if request["method"] != method {
                continue;
            }
            if let Some(key) = request[key_field].as_str() {
                let mut shown = self.shown.lock().unwrap_or_else(|e| e.into_inner());
                shown.retain(|(m, _, k)| !(*m == method && k == key));
                if request.get(content).is_some() {
                    shown.push((method, key_field, key.to_owned()));
                }
            }
        }
        self.write_request(&new_uuid(), request);
    }

    /// Sends a clearing `setStatus` / `setWidget` (no text, no lines) for every key set.
    fn reset(&self) {
        let shown = std::mem::take(&mut *self.shown.lock().unwrap_or_else(|e| e.into_inner()));
        for (method, key_field, key) in shown {
            let mut request = Map::new();
            request.insert("method".into(), method.into());
            request.insert(key_field.into(), key.into());
            self.write_request(&new_uuid(), Value::Object(request));
        }
    }
}
