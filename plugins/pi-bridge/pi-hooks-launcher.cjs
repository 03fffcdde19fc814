#!/usr/bin/env node
// `pi-hooks` from npm (`npx pi-hooks ...`, or on PATH after `npm install -g pi-hooks`): runs
// the prebuilt binary of this machine's platform (platform-binary.cjs) with the same
// arguments, standard streams and exit status. A SIGTERM, SIGHUP or SIGQUIT sent to this
// launcher is passed on to the binary (so `kill <pid>` of the launcher stops it too, and a
// `demo-model` frees its port); SIGINT is left to the terminal, which sends Ctrl+C to both.
"use strict";

const { spawn } = require("node:child_process");
const { join } = require("node:path");
const { findBinary } = require("./platform-binary.cjs");

let binary;
try {
	binary = process.env.PI_HOOKS_BIN || findBinary(join(__dirname, ".."));
} catch (error) {
	process.stderr.write(`pi-hooks: ${error.message}\n`);
	process.exit(1);
}
const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGTERM", "SIGHUP", "SIGQUIT"]) {
	process.on(signal, () => child.kill(signal));
}
// The terminal's Ctrl+C reaches the binary itself; the launcher waits for its exit status.
process.on("SIGINT", () => {});
child.on("error", (error) => {
	process.stderr.write(`pi-hooks: cannot run ${binary}: ${error.message}\n`);
	process.exit(1);
});
child.on("exit", (status, signal) => {
	if (signal) {
		// End as the binary ended: by the same signal, without this launcher's handler.
		process.removeAllListeners(signal);
		process.kill(process.pid, signal);
		return;
	}
	process.exit(status ?? 1);
});
