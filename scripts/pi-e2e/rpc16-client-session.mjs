// Drives `pi-hooks rpc` with pi 1.6.0's own RpcClient, unchanged, through its public API (and
// its `send`, for a command the client has no method for), and prints one JSON object with
// what it observed (tests/tests/rpc_pi16.rs asserts on it). Exits non-zero on any thrown
// error: a response pi 1.6's client cannot read (`prompt()` reads `data.disposition`), an
// `agent_settled` that never comes (`waitForIdle()`), a command never answered.
//
//   PI_HOOKS_BIN=target/debug/pi-hooks PI_HOOKS_ARGS='["--script","s.json","-e","lib.so"]' \
//   PI_E2E_CWD=/some/project node scripts/pi-e2e/rpc16-client-session.mjs
//
// pi 1.6.0 is read from scripts/pi-peer-1.6/node_modules (scripts/pi-peer-1.6/install.sh); the
// client starts `node pi-hooks-cli.mjs --mode rpc`, so the `node` first on PATH runs it. The
// session expects the scripted model to run each prompt as a bash command, then answer; a
// plugin whose `input` handler handles text containing "swallow-me", whose `user_bash`
// handler answers commands containing "answered-by-plugin", which appends an entry at
// `agent_start`; and a plugin command `/hello16`.
import { startClient, types as typesOf } from "./client-common.mjs";

const { client, piVersion, events, nextEvent } = await startClient("pi-peer-1.6", "@earendil-works/pi-coding-agent");

/** The types of `list` (see client-common.mjs), without `tool_execution_update`s. */
const types = (list) => typesOf(list, ["tool_execution_update"]);

const observed = { piVersion };
await client.start();
try {
    observed.initialState = await client.getState();

    // prompt() reads data.disposition; waitForIdle() waits for agent_settled.
    const from = events.length;
    const idle = client.waitForIdle(20000);
    observed.promptDisposition = await client.prompt("echo hello-16");
    await idle;
    const run = events.slice(from);
    observed.firstRun = {
        types: types(run),
        messageUpdates: run.filter((event) => event.type === "message_update"),
        agentEnd: run.find((event) => event.type === "agent_end") ?? null,
        settled: run.find((event) => event.type === "agent_settled") ?? null,
        entryAppended: run.filter((event) => event.type === "entry_appended"),
    };

    observed.entries = await client.getEntries();
    const first = observed.entries.entries[0].id;
    observed.entriesSince = await client.getEntries(first);
    observed.entriesUnknown = await client.getEntries("no-such-entry").then(
        () => "answered",
        (error) => error.message,
    );
    observed.tree = await client.getTree();
    observed.levels = await client.getAvailableThinkingLevels();

    // Queue while a run is in progress, clear the queue, then abort.
    const started = nextEvent((event) => event.type === "tool_execution_start", "tool_execution_start of sleep");
    const settled = nextEvent((event) => event.type === "agent_settled", "agent_settled after the abort", 30000);
    observed.slowDisposition = await client.prompt("sleep 30");
    await started;
    observed.queuedPromptDisposition = await client.prompt("queued-as-follow-up", undefined, "followUp");
    observed.steerDisposition = await client.steer("change course");
    observed.followUpDisposition = await client.followUp("and then this");
    observed.handledSteerDisposition = await client.steer("swallow-me please");
    observed.stateBeforeClear = await client.getState();
    observed.cleared = await client.clearQueue();
    observed.stateAfterClear = await client.getState();
    await client.abort();
    observed.abortSettled = await settled;
    observed.stateAfterAbort = await client.getState();

    // A plugin command: handled, no run to wait for.
    observed.commandDisposition = await client.prompt("/hello16");

    // A command pi-hooks does not know: an error response with the request's id (the client
    // correlates by id; without one this would time out after 30 s).
    const unknownStart = Date.now();
    observed.unknown = await client.send({ type: "frobnicate" });
    observed.unknownMs = Date.now() - unknownStart;

    // bash: output streamed as bash_execution_update, then the result.
    const bashFrom = events.length;
    observed.bash = await client.bash("echo from-bash-16; echo second-line");
    observed.bashUpdates = events.slice(bashFrom).filter((event) => event.type === "bash_execution_update");
    observed.pluginBash = await client.bash("echo answered-by-plugin");
    observed.excludedBash = await client.send({ type: "bash", command: "echo hidden-16", excludeFromContext: true });
    observed.messages = await client.getMessages();

    // promptAndWait collects up to agent_settled.
    observed.thirdRun = types(await client.promptAndWait("echo third-16", undefined, 20000));
} catch (error) {
    process.stderr.write(`rpc16-client-session.mjs failed: ${error.stack ?? error}\nobserved so far: ${JSON.stringify(observed)}\n`);
    process.exitCode = 1;
} finally {
    observed.allEventTypes = types(events);
    await client.stop();
    observed.stderr = client.getStderr();
}
if (process.exitCode === 1) process.exit(1);
process.stdout.write(`${JSON.stringify(observed)}\n`);
process.exit(0);
