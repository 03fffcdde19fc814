// Drives a whole `pi-hooks rpc` session with pi 0.73.1's own RpcClient, unchanged, through its
// public API only, and prints one JSON object with everything it observed (the integration
// test tests/tests/pi_rpc_client.rs asserts on it). Exits non-zero on any thrown error.
//
//   PI_HOOKS_BIN=target/debug/pi-hooks PI_HOOKS_ARGS='["--script","s.json","-e","lib.so"]' \
//   PI_E2E_CWD=/some/project node scripts/pi-e2e/rpc-client-session.mjs
//
// The client runs `node pi-hooks-cli.mjs --mode rpc`, which runs `pi-hooks rpc <PI_HOOKS_ARGS>`.
// The session expects the scripted model to run the prompt as a bash command (turn 1:
// `{"toolCalls":[{"name":"bash","arguments":{"command":"${PROMPT}"}}]}`, turn 2 a text),
// the permission-gate (Rust) and confirm-command (C) examples to be loaded, two models, and
// a folder `victim` in the project (the gate must keep it).
import * as fs from "node:fs";
import * as path from "node:path";
import { startClient, types } from "./client-common.mjs";

const { client, piVersion, events, nextEvent } = await startClient("pi-peer", "@mariozechner/pi-coding-agent");
const cwd = process.env.PI_E2E_CWD ?? process.cwd();

/** The last assistant message of an `agent_end`. */
function lastAssistant(list) {
    const end = list.findLast((event) => event.type === "agent_end");
    return end?.messages?.findLast((message) => message.role === "assistant") ?? null;
}

const observed = { piVersion };
await client.start();
try {
    observed.initialState = await client.getState();
    observed.commands = await client.getCommands();

    observed.models = await client.getAvailableModels();
    const other = observed.models.find((model) => model.id !== observed.initialState.model?.id);
    observed.setModel = await client.setModel(other.provider, other.id);
    observed.stateAfterSetModel = await client.getState();

    // A prompt, waited for with the client's own helper.
    const first = await client.promptAndWait("echo hello-from-pi");
    observed.firstRun = {
        types: types(first),
        toolEnd: first.find((event) => event.type === "tool_execution_end") ?? null,
        assistant: lastAssistant(first),
    };
    observed.lastAssistantText = await client.getLastAssistantText();

    // abort while the model's bash call sleeps.
    const slowEvents = client.collectEvents(30000);
    const slowStarted = nextEvent((event) => event.type === "tool_execution_start", "tool_execution_start of sleep");
    const before = Date.now();
    await client.prompt("sleep 30");
    await slowStarted;
    await client.abort();
    const slow = await slowEvents;
    observed.abortRun = {
        types: types(slow),
        toolEnd: slow.find((event) => event.type === "tool_execution_end") ?? null,
        assistant: lastAssistant(slow),
        ms: Date.now() - before,
    };
    observed.stateAfterAbort = await client.getState();

    // waitForIdle after a prompt.
    const idle = client.waitForIdle(30000);
    await client.prompt("echo second");
    await idle;
    observed.messages = await client.getMessages();

    observed.compaction = await client.compact("Keep the commands.");
    observed.messagesAfterCompaction = await client.getMessages();

    observed.bash = await client.bash("echo from-bash; echo to-stderr >&2; exit 3");
    observed.sessionStats = await client.getSessionStats();
    observed.stateBeforeFork = await client.getState();

    observed.forkMessages = await client.getForkMessages();
    const target = observed.forkMessages.find((message) => message.text === "echo second");
    observed.fork = await client.fork(target.entryId);
    observed.stateAfterFork = await client.getState();
    observed.messagesAfterFork = await client.getMessages();

    observed.clone = await client.clone();
    observed.stateAfterClone = await client.getState();

    observed.newSession = await client.newSession();
    observed.stateAfterNewSession = await client.getState();
    observed.messagesAfterNewSession = await client.getMessages();

    await client.setSessionName("e2e session");
    observed.stateAfterName = await client.getState();
    observed.switchSession = await client.switchSession(observed.stateAfterFork.sessionFile);
    observed.stateAfterSwitch = await client.getState();
    observed.cycleModel = await client.cycleModel();
    await client.setAutoCompaction(false);
    observed.stateAfterSettings = await client.getState();

    // Plugin dialogs. RpcClient 0.73.1 hands `extension_ui_request` lines to its event
    // listeners but has no method that sends `extension_ui_response` (nor a public way to
    // write a raw line), so the dialogs are observed and left waiting; `stop()` ends them.
    const select = nextEvent((event) => event.type === "extension_ui_request" && event.method === "select", "select request");
    await client.prompt("rm -rf victim");
    observed.gateRequest = await select;
    const confirm = nextEvent((event) => event.type === "extension_ui_request" && event.method === "confirm", "confirm request");
    // A plugin command during a run runs at once; its response comes once its dialog is
    // answered, which this client cannot do, so the promise is left pending.
    const deploy = client.prompt("/deploy staging");
    deploy.catch(() => {});
    observed.deployRequest = await confirm;
    observed.stateWhileDialogsWait = await client.getState();
    observed.victimKept = fs.existsSync(path.join(cwd, "victim"));
} catch (error) {
    process.stderr.write(`rpc-client-session.mjs failed: ${error.stack ?? error}\nobserved so far: ${JSON.stringify(observed)}\n`);
    process.exitCode = 1;
} finally {
    observed.allEventTypes = types(events);
    await client.stop();
    observed.stderr = client.getStderr();
}
if (process.exitCode === 1) process.exit(1);
process.stdout.write(`${JSON.stringify(observed)}\n`);
// The deploy prompt's pending request keeps a 30 s timer of the client alive.
process.exit(0);
