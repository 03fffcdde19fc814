// What the two RpcClient sessions share (rpc-client-session.mjs, pi 0.73.1's client;
// rpc16-client-session.mjs, pi 1.6.0's): loading pi's own RpcClient from a pinned install,
// starting it on `pi-hooks rpc` through pi-hooks-cli.mjs, and watching its events.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));

/** pi's RpcClient from `scripts/<peer>/node_modules/<pkg>` (exits 3 saying how to install it
 * when missing), started with `cliPath` pi-hooks-cli.mjs in `$PI_E2E_CWD` (or the current
 * folder). Returns the client, pi's version, every event it handed its listeners (in order)
 * and `nextEvent(test, what, ms)`: the first event from now on that `test` accepts. */
export async function startClient(peer, pkg) {
    const piRoot = path.join(here, "..", peer, "node_modules", pkg);
    const clientFile = path.join(piRoot, "dist", "modes", "rpc", "rpc-client.js");
    if (!fs.existsSync(clientFile)) {
        process.stderr.write(`${pkg} is not installed (${clientFile} is missing); run: bash scripts/${peer}/install.sh\n`);
        process.exit(3);
    }
    const piVersion = JSON.parse(fs.readFileSync(path.join(piRoot, "package.json"), "utf8")).version;
    const { RpcClient } = await import(pathToFileURL(clientFile).href);
    const cwd = process.env.PI_E2E_CWD ?? process.cwd();
    const client = new RpcClient({ cliPath: path.join(here, "pi-hooks-cli.mjs"), cwd });
    const events = [];
    client.onEvent((event) => events.push(event));
    const nextEvent = (test, what, ms = 20000) =>
        new Promise((resolve, reject) => {
            const timer = setTimeout(() => {
                stop();
                reject(new Error(`no ${what} within ${ms} ms. Stderr: ${client.getStderr()}`));
            }, ms);
            const stop = client.onEvent((event) => {
                if (test(event)) {
                    clearTimeout(timer);
                    stop();
                    resolve(event);
                }
            });
        });
    return { client, piVersion, events, nextEvent };
}

/** The types of `list`, with `message_update`s folded into one entry per run of them and the
 * types in `skip` left out. */
export function types(list, skip = []) {
    const out = [];
    for (const event of list) {
        if (event.type === "message_update" && out.at(-1) === "message_update") continue;
        if (skip.includes(event.type)) continue;
        out.push(event.type);
    }
    return out;
}
