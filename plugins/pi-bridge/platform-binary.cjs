// Finds the prebuilt `pi-hooks` binary of this machine's platform in the npm packages of
// pi-hooks: the main package `pi-hooks` lists one package per platform under the `@pi-hooks`
// scope as optionalDependencies, each with `os` / `cpu` / `libc` set, so npm installs only the
// one this machine can run (esbuild's pattern). Used by the npm launcher
// (pi-hooks-launcher.cjs, `npx pi-hooks ...`) and by the bridge (index.ts) when it runs from
// the npm package. Plain CommonJS: node runs it as it is, and pi's loader (jiti) too.
"use strict";

const { existsSync, readFileSync } = require("node:fs");
const { dirname, join } = require("node:path");

/** This machine's platform, named as pi-hooks' packages name platforms (`linux-x64-gnu`,
 * `linux-arm64-musl`, `darwin-arm64`, `win32-x64-msvc`, ...). */
function platformName() {
	const { platform, arch } = process;
	if (platform === "linux") return `linux-${arch}-${isMusl() ? "musl" : "gnu"}`;
	if (platform === "win32") return `win32-${arch}-msvc`;
	return `${platform}-${arch}`;
}

/** Whether node runs on musl's libc (node's own report names glibc's version otherwise). The
 * report is made without its network part (interfaces, host name lookups: the slow part, tens
 * of milliseconds at a pi start, node >= 20.13 / 22); an older node ignores the setting. */
function isMusl() {
	const reporter = process.report;
	if (!reporter || typeof reporter.getReport !== "function") return true;
	const excluded = reporter.excludeNetwork;
	try {
		reporter.excludeNetwork = true;
	} catch {
		// A node without the setting makes the whole report.
	}
	try {
		const report = reporter.getReport();
		return !(report && report.header && report.header.glibcVersionRuntime);
	} finally {
		try {
			reporter.excludeNetwork = excluded;
		} catch {
			// As above.
		}
	}
}

/** The package.json of the npm package `root` (the pi-hooks package), or undefined. */
function readPackage(root) {
	try {
		return JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
	} catch {
		return undefined;
	}
}

/** Whether `root` is the folder of the npm package `pi-hooks`. */
function isPiHooksPackage(root) {
	const pkg = readPackage(root);
	return Boolean(pkg && pkg.name === "pi-hooks");
}

/**
 * The binary for this platform, given the folder of the `pi-hooks` npm package. Throws an
 * Error naming this platform and the platforms pi-hooks is published for when there is none.
 */
function findBinary(root) {
	const name = platformName();
	const scoped = `@pi-hooks/${name}`;
	const exe = process.platform === "win32" ? "pi-hooks.exe" : "pi-hooks";
	let folder;
	try {
		folder = dirname(require.resolve(`${scoped}/package.json`, { paths: [root] }));
	} catch {
		folder = undefined;
	}
	if (folder && existsSync(join(folder, "bin", exe))) return join(folder, "bin", exe);
	const pkg = readPackage(root);
	const published = Object.keys((pkg && pkg.optionalDependencies) || {})
		.filter((dep) => dep.startsWith("@pi-hooks/"))
		.map((dep) => dep.slice("@pi-hooks/".length));
	if (!published.includes(name)) {
		throw new Error(
			`no prebuilt pi-hooks binary for this platform (${name}); pi-hooks ${pkg ? pkg.version : ""} is published for: ${published.join(", ") || "none"}. On ${name}, build it from source (cargo install --path loader/cli in a clone of pi-hooks) and set PI_HOOKS_BIN to it`,
		);
	}
	throw new Error(
		`the pi-hooks binary for this platform (${name}) is not installed: npm left out the optional dependency ${scoped}. Reinstall pi-hooks without --omit=optional / --no-optional`,
	);
}

module.exports = { findBinary, isPiHooksPackage, platformName };
