#!/usr/bin/env node
// `pi-hooks` from npm (`npx pi-hooks ...`, or on PATH after `npm install -g pi-hooks`): runs
// the prebuilt binary of this machine's platform (platform-binary.cjs) with the same
// arguments, standard streams and exit status.
"use strict";

const { spawnSync } = require("node:child_process");
const { join } = require("node:path");
const { findBinary } = require("./platform-binary.cjs");

let binary;
try {
	binary = process.env.PI_HOOKS_BIN || findBinary(join(__dirname, ".."));
} catch (error) {
	process.stderr.write(`pi-hooks: ${error.message}\n`);
	process.exit(1);
}
const run = spawnSync(binary, process.argv.slice(2), { stdio: "inherit" });
if (run.error) {
	process.stderr.write(`pi-hooks: cannot run ${binary}: ${run.error.message}\n`);
	process.exit(1);
}
if (run.signal) process.kill(process.pid, run.signal);
process.exit(run.status ?? 1);
