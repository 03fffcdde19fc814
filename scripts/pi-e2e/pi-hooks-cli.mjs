// Stands in for pi's `dist/cli.js` as the `cliPath` of pi's own RpcClient: the client runs
// `node <cliPath> --mode rpc [args]`; this runs `$PI_HOOKS_BIN rpc <$PI_HOOKS_ARGS...>` instead,
// with the client's pipes (stdio inherited), so the client talks to pi-hooks directly.
// The client's own arguments (`--mode rpc`, `--provider`, ...) are ignored: pi-hooks' options
// come from PI_HOOKS_ARGS, a JSON array of strings. SIGTERM, SIGINT and SIGHUP are passed on to
// pi-hooks; the exit code is pi-hooks' (128 + the signal number when a signal ended it).
import { spawn } from "node:child_process";
import { constants } from "node:os";

function fail(message) {
    process.stderr.write(`pi-hooks-cli.mjs: ${message}\n`);
    process.exit(2);
}

const bin = process.env.PI_HOOKS_BIN;
if (!bin) {
    fail("PI_HOOKS_BIN is not set; set it to the pi-hooks binary (e.g. target/debug/pi-hooks)");
}
let args = [];
if (process.env.PI_HOOKS_ARGS !== undefined) {
    try {
        args = JSON.parse(process.env.PI_HOOKS_ARGS);
    } catch (error) {
        fail(`PI_HOOKS_ARGS is not JSON (${error.message}); give a JSON array of strings`);
    }
    if (!Array.isArray(args) || !args.every((arg) => typeof arg === "string")) {
        fail(`PI_HOOKS_ARGS must be a JSON array of strings, not ${process.env.PI_HOOKS_ARGS}`);
    }
}

const child = spawn(bin, ["rpc", ...args], { stdio: "inherit" });
child.on("error", (error) => fail(`cannot run ${bin}: ${error.message}`));
for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"]) {
    process.on(signal, () => child.kill(signal));
}
child.on("exit", (code, signal) => {
    process.exit(code ?? 128 + (constants.signals[signal] ?? 0));
});
