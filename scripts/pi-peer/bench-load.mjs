// pi's extension loading, for the side-by-side figures in BENCHMARKS.md: the time of one
// `loadExtensions(paths, cwd)` call (pi 0.73.1, dist/core/extensions/loader.js) on N trivial
// TypeScript extensions, each `export default function (pi) { pi.on("tool_call", () => undefined); }`.
//
// Every sample is a fresh node process. Only the `loadExtensions` call is timed, not node's
// start-up nor the import of pi's module graph (that import is reported on its own, as
// `pi_import`). pi loads each extension through jiti, which caches the transpiled source on
// disk in `$TMPDIR/jiti` (pi's dist/ has no node_modules/.cache beside it, jiti's other choice):
//   cold: each sample gets a new, empty TMPDIR, so every extension is transpiled (babel);
//   warm: the samples of one N share a TMPDIR primed by one unmeasured load, so every
//         extension is read from jiti's cache.
// Each child checks the cache it found (empty / N entries) and the result (N extensions, N
// handlers, no errors). Samples of all cases are interleaved, round by round, so drift in the
// machine's load spreads over every case.
//
// Usage: node scripts/pi-peer/bench-load.mjs [--n 1,10,50] [--samples 10]
// Prints one JSON line per case, e.g.
//   {"bench":"pi_load","n":50,"mode":"cold","median_ms":..,"min_ms":..,"max_ms":..,"samples":10,"pi":"0.73.1"}
// and one for the import: {"bench":"pi_import","median_ms":..,"samples":..}.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import {
    PI_VERSION,
    checkLoaded,
    checkPiInstalled,
    fail,
    importPi,
    median,
    parseArgs,
    requirePositive,
    round,
    runChild,
    scratchDir,
    writeTrivialExtensions,
} from "./common.mjs";

const script = fileURLToPath(import.meta.url);
const usage = "usage: node scripts/pi-peer/bench-load.mjs [--n 1,10,50] [--samples 10]";

/** Number of entries in jiti's disk cache under the current TMPDIR (0 when it does not exist). */
function jitiCacheEntries() {
    const dir = path.join(os.tmpdir(), "jiti");
    return fs.existsSync(dir) ? fs.readdirSync(dir).length : 0;
}

/** One sample, in a fresh process: import pi, then time `loadExtensions` on `count` extensions. */
async function child(opts) {
    const paths = fs
        .readdirSync(opts.dir)
        .filter((name) => name.endsWith(".ts"))
        .sort()
        .slice(0, opts.count)
        .map((name) => path.join(opts.dir, name));
    if (paths.length !== opts.count) fail(`${opts.dir} holds ${paths.length} extensions, expected ${opts.count}`);
    const cacheBefore = jitiCacheEntries();

    const t0 = performance.now();
    const { loadExtensions } = await importPi("core/extensions/loader.js");
    const t1 = performance.now();
    const result = await loadExtensions(paths, process.cwd());
    const t2 = performance.now();

    checkLoaded(result, opts.count);
    console.log(JSON.stringify({ import_ms: t1 - t0, load_ms: t2 - t1, cache_before: cacheBefore, cache_after: jitiCacheEntries() }));
}

function parent(opts) {
    checkPiInstalled();
    const root = scratchDir("pi-peer-load-");
    const extDir = path.join(root, "extensions");
    const project = path.join(root, "project");
    fs.mkdirSync(project);
    writeTrivialExtensions(extDir, Math.max(...opts.n));
    // A private agent dir, so nothing in the user's ~/.pi is read.
    const baseEnv = { PI_CODING_AGENT_DIR: path.join(root, "agent") };

    const sample = (count, tmp) => {
        fs.mkdirSync(tmp, { recursive: true });
        // cwd is not TMPDIR: jiti ignores a TMPDIR that equals the working directory.
        return runChild(script, ["--child", "--dir", extDir, "--count", String(count)], { ...baseEnv, TMPDIR: tmp }, project);
    };

    const cases = opts.n.flatMap((n) => [
        { n, mode: "cold", times: [] },
        { n, mode: "warm", times: [], tmp: path.join(root, `tmp-warm-${n}`) },
    ]);
    for (const c of cases.filter((c) => c.mode === "warm")) {
        const primed = sample(c.n, c.tmp);
        if (primed.cache_after !== c.n) fail(`priming the warm cache left ${primed.cache_after} jiti entries, expected ${c.n}`);
    }

    const imports = [];
    for (let round_ = 0; round_ < opts.samples; round_++) {
        for (const c of cases) {
            const tmp = c.mode === "cold" ? path.join(root, `tmp-cold-${c.n}-${round_}`) : c.tmp;
            const r = sample(c.n, tmp);
            const want = c.mode === "cold" ? [0, c.n] : [c.n, c.n];
            if (r.cache_before !== want[0] || r.cache_after !== want[1]) {
                fail(`${c.mode} sample for n=${c.n} found ${r.cache_before} jiti cache entries and left ${r.cache_after}, expected ${want[0]} and ${want[1]}`);
            }
            c.times.push(r.load_ms);
            imports.push(r.import_ms);
            if (c.mode === "cold") fs.rmSync(tmp, { recursive: true, force: true });
        }
    }

    for (const c of cases) {
        console.log(
            JSON.stringify({
                bench: "pi_load",
                n: c.n,
                mode: c.mode,
                median_ms: round(median(c.times), 2),
                min_ms: round(Math.min(...c.times), 2),
                max_ms: round(Math.max(...c.times), 2),
                samples: c.times.length,
                pi: PI_VERSION,
            }),
        );
    }
    console.log(JSON.stringify({ bench: "pi_import", median_ms: round(median(imports), 1), samples: imports.length, pi: PI_VERSION }));
}

const opts = parseArgs(process.argv.slice(2), { n: [1, 10, 50], samples: 10, child: false, dir: "", count: 1 }, usage);
if (opts.child) {
    await child(opts);
} else {
    if (opts.n.length === 0 || opts.n.some((n) => n < 1)) fail(`--n needs whole numbers >= 1\n${usage}`);
    requirePositive(opts, ["samples"], usage);
    parent(opts);
}
