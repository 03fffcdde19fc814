//! `pi-hooks serve` driven as the pi bridge drives it, for the tests of what crosses serve:
//! started with `behave` plugins, and one `event` request at a time.

use serde_json::{Value, json};

use crate::rpc_client::RpcClient;
use crate::{Sandbox, behave_command};

/// `pi-hooks serve --no-hooks` with `behave` instances (`(name, config)`), its `hello` read.
pub fn start(sandbox: &Sandbox, plugins: &[(&str, Value)]) -> RpcClient {
    let mut client = RpcClient::start(behave_command(sandbox, plugins, &["serve", "--no-hooks"]));
    let hello = client.next_line();
    assert_eq!(hello["type"], "hello", "{hello}");
    client
}

/// Sends the `event` request `name` with `payload` as `id`; its `result` (or `error`) line.
pub fn event(client: &mut RpcClient, id: &str, name: &str, payload: Value) -> Value {
    client.send(&json!({"type": "event", "id": id, "name": name, "payload": payload}));
    client
        .until(|l| (l["type"] == "result" || l["type"] == "error") && l["id"] == id)
        .1
}
