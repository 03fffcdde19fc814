// Shared parts of bench-load.mjs and bench-dispatch.mjs: where pi's modules are, the trivial
// extensions both benches load, argument parsing, scratch folders and statistics.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const PI_VERSION = "0.73.1";
const here = path.dirname(fileURLToPath(import.meta.url));
const piRoot = path.join(here, "node_modules", "@mariozechner", "pi-coding-agent");

/** Fails with a message that says what to run when pi is missing or not the pinned version. */
export function checkPiInstalled() {
    const manifest = path.join(piRoot, "package.json");
    if (!fs.existsSync(manifest)) {
        fail(`pi is not installed at ${piRoot}; run: bash scripts/pi-peer/install.sh`);
    }
    const version = JSON.parse(fs.readFileSync(manifest, "utf8")).version;
    if (version !== PI_VERSION) {
        fail(`${manifest} is version ${version}, expected ${PI_VERSION}; run: bash scripts/pi-peer/install.sh`);
    }
}

/**
 * Imports one of pi's own modules by its file inside the package (`dist/...`). The package's
 * `exports` map does not list these files, so they are imported by file URL.
 */
export async function importPi(distFile) {
    checkPiInstalled();
    return import(pathToFileURL(path.join(piRoot, "dist", distFile)).href);
}

/**
 * pi's real `ExtensionRunner` over the extension files `paths`, loaded through pi's own
 * `loadExtensions` as pi loads them, with an in-memory session and model registry (the
 * runner only hands them to handlers through the per-emit context; nothing here reaches the
 * disk or the network). Returns the runner and the `loadExtensions` result.
 */
export async function piRunner(paths, cwd) {
    const { loadExtensions } = await importPi("core/extensions/loader.js");
    const { ExtensionRunner } = await importPi("core/extensions/runner.js");
    const { AuthStorage, ModelRegistry, SessionManager } = await importPi("index.js");
    const loaded = await loadExtensions(paths, cwd);
    const runner = new ExtensionRunner(
        loaded.extensions,
        loaded.runtime,
        cwd,
        SessionManager.inMemory(cwd),
        ModelRegistry.inMemory(AuthStorage.inMemory()),
    );
    return { runner, loaded };
}

/** The source of every generated extension: one `tool_call` handler that returns nothing. */
export const TRIVIAL_EXTENSION = 'export default function (pi) { pi.on("tool_call", () => undefined); }\n';

/** Writes `count` trivial extensions `ext-NN.ts` into `dir`; returns their absolute paths. */
export function writeTrivialExtensions(dir, count) {
    fs.mkdirSync(dir, { recursive: true });
    const width = String(Math.max(count - 1, 0)).length;
    const paths = [];
    for (let i = 0; i < count; i++) {
        const file = path.join(dir, `ext-${String(i).padStart(width, "0")}.ts`);
        fs.writeFileSync(file, TRIVIAL_EXTENSION);
        paths.push(file);
    }
    return paths;
}

/** Counts the `tool_call` handlers registered by a `loadExtensions` result. */
export function countToolCallHandlers(extensions) {
    return extensions.reduce((sum, ext) => sum + (ext.handlers.get("tool_call")?.length ?? 0), 0);
}

/** Checks a `loadExtensions` result: no errors, `count` extensions, one handler each. */
export function checkLoaded(result, count) {
    if (result.errors.length > 0) {
        fail(`pi's loadExtensions reported errors: ${JSON.stringify(result.errors)}`);
    }
    const handlers = countToolCallHandlers(result.extensions);
    if (result.extensions.length !== count || handlers !== count) {
        fail(`pi's loadExtensions gave ${result.extensions.length} extensions with ${handlers} tool_call handlers, expected ${count} of each`);
    }
}

/**
 * Parses `--name value` pairs against `defaults` (numbers, lists of numbers, booleans as
 * bare flags). An unknown option or a value of the wrong kind is an error naming it.
 */
export function parseArgs(argv, defaults, usage) {
    const opts = { ...defaults };
    for (let i = 0; i < argv.length; i++) {
        const arg = argv[i];
        if (arg === "--help" || arg === "-h") {
            console.log(usage);
            process.exit(0);
        }
        const name = arg.startsWith("--") ? arg.slice(2) : undefined;
        if (name === undefined || !(name in defaults)) {
            fail(`unknown argument ${JSON.stringify(arg)}\n${usage}`);
        }
        const kind = defaults[name];
        if (typeof kind === "boolean") {
            opts[name] = true;
            continue;
        }
        const value = argv[++i];
        if (value === undefined) fail(`--${name} needs a value\n${usage}`);
        if (typeof kind === "string") {
            opts[name] = value;
        } else if (Array.isArray(kind)) {
            const list = value.split(",").map(Number);
            if (list.some((n) => !Number.isInteger(n) || n < 0)) {
                fail(`--${name} ${JSON.stringify(value)}: expected a comma-separated list of whole numbers`);
            }
            opts[name] = list;
        } else {
            const n = Number(value);
            if (!Number.isInteger(n) || n < 0) fail(`--${name} ${JSON.stringify(value)}: expected a whole number`);
            opts[name] = n;
        }
    }
    return opts;
}

/** Stops with an error naming the option when one of `names` is 0. */
export function requirePositive(opts, names, usage) {
    for (const name of names) {
        if (opts[name] < 1) fail(`--${name} must be at least 1\n${usage}`);
    }
}

/** A private scratch folder under the system temp dir, removed when the process exits. */
export function scratchDir(prefix) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    const cleanup = () => fs.rmSync(dir, { recursive: true, force: true });
    process.on("exit", cleanup);
    for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]]) {
        process.on(signal, () => {
            cleanup();
            process.exit(code);
        });
    }
    return dir;
}

/**
 * Runs this same script as a fresh node process in `cwd` with `args` and `env` added, and
 * returns the one JSON object it prints last on stdout. A child that fails stops the bench
 * with its stderr.
 */
export function runChild(script, args, env, cwd) {
    const child = spawnSync(process.execPath, [script, ...args], {
        cwd,
        env: { ...process.env, ...env },
        encoding: "utf8",
        maxBuffer: 16 * 1024 * 1024,
    });
    if (child.status !== 0) {
        process.stderr.write(child.stderr);
        fail(`child ${path.basename(script)} ${args.join(" ")} exited with ${child.status ?? child.signal}`);
    }
    const lines = child.stdout.trim().split("\n");
    try {
        return JSON.parse(lines[lines.length - 1]);
    } catch {
        fail(`child ${path.basename(script)} ${args.join(" ")} printed no JSON result: ${JSON.stringify(child.stdout)}`);
    }
}

export function median(values) {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Rounds to `digits` decimals, for the printed figures. */
export function round(value, digits) {
    const f = 10 ** digits;
    return Math.round(value * f) / f;
}

export function fail(message) {
    console.error(`error: ${message}`);
    process.exit(1);
}
