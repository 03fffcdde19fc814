//! The real pi in RPC mode with the pi bridge installed by `pi-hooks bridge install`, talking
//! to a [`FakeOpenAi`] server, for the bridge's end-to-end tests. Which pi is the caller's
//! [`Pi`]: [`crate::tools::pi16`] (pi 1.6.0 on node 22, the pi pi-hooks follows) for most
//! tests, [`crate::tools::pi073`] (pi 0.73.1) for the smaller set that keeps its users
//! working. Either is installed on first use; an install that cannot happen (no node or npm,
//! no registry) fails the test saying what to do, never a silent skip.

use std::process::Command;

use crate::Sandbox;
use crate::fake_openai::FakeOpenAi;
use crate::rpc_client::RpcClient;
use crate::tools::Pi;

/// Installs the bridge into the sandbox's agent directory with `pi-hooks bridge install`
/// (so it finds `pi-hooks` through the `pi-hooks.json` the install writes) and points pi's
/// `models.json` at `server`.
pub fn prepare(sandbox: &Sandbox, server: &FakeOpenAi) {
    let install = sandbox.run(&["bridge", "install"]);
    assert!(
        install.status.success(),
        "pi-hooks bridge install failed: {}",
        String::from_utf8_lossy(&install.stderr)
    );
    std::fs::write(
        sandbox.agent_dir().join("models.json"),
        server.models_json().to_string(),
    )
    .expect("write models.json");
}

/// `pi --mode rpc --provider fake --model fake-model <extra>` of `pi` in the sandbox's
/// project, with its HOME and agent directory, offline.
pub fn pi_rpc(pi: &Pi, sandbox: &Sandbox, extra: &[&str]) -> RpcClient {
    pi_rpc_with_model(pi, sandbox, "fake", "fake-model", extra)
}

/// `pi --mode rpc --provider <provider> --model <model> <extra>` of `pi` in the sandbox's
/// project, with its HOME and agent directory, offline.
pub fn pi_rpc_with_model(
    pi: &Pi,
    sandbox: &Sandbox,
    provider: &str,
    model: &str,
    extra: &[&str],
) -> RpcClient {
    let mut command = pi_command_of(pi, sandbox);
    command
        .args(["--mode", "rpc", "--provider", provider, "--model", model])
        .args(extra);
    RpcClient::start(command)
}

/// `pi` (any installed version) in the sandbox's project, with its HOME
/// and agent directory, offline, and none of pi-hooks' own variables from the test's
/// environment; the caller adds the mode, the arguments and more environment.
pub fn pi_command_of(pi: &Pi, sandbox: &Sandbox) -> Command {
    let mut command = pi.command();
    command
        .current_dir(sandbox.project())
        .env("HOME", sandbox.home())
        .env("PI_CODING_AGENT_DIR", sandbox.agent_dir())
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .env_remove("PI_HOOKS_BIN")
        .env_remove("PI_HOOKS_CACHE_DIR")
        .env_remove("PI_HOOKS_LOG")
        .env_remove("PI_HOOKS_TRACE")
        .env_remove("PI_HOOKS_TRACE_FILE")
        .env_remove("PI_HOOKS_BOUNDARY_CONTEXT")
        .env_remove("PI_HOOKS_BRIDGE_TRANSPORT")
        .env_remove("PI_HOOKS_BRIDGE_RING_ADDON")
        .env_remove("PI_HOOKS_BRIDGE_RING_WAIT_US");
    command
}

/// pi's arguments for RPC mode with the fake model of the tests' `models.json`.
pub const RPC_WITH_FAKE_MODEL: [&str; 6] = [
    "--mode",
    "rpc",
    "--provider",
    "fake",
    "--model",
    "fake-model",
];

/// `pi --mode rpc --provider fake --model fake-model <extra>` of `pi` ([`pi_command_of`]),
/// with `env` added to its environment.
pub fn pi_rpc_of(
    pi: &Pi,
    sandbox: &Sandbox,
    extra: &[&str],
    env: &[(String, String)],
) -> RpcClient {
    let mut command = pi_command_of(pi, sandbox);
    command
        .args(RPC_WITH_FAKE_MODEL)
        .args(extra)
        .envs(env.iter().map(|(k, v)| (k, v)));
    RpcClient::start(command)
}
