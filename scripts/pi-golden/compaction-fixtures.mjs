// Writes the session files (JSONL, format version 3) that the compaction golden test runs pi and
// pi-hooks on: tests/fixtures/compaction/*.jsonl. Deterministic (ids from a seeded generator,
// timestamps one second apart), so running it again rewrites the same bytes.
//
//   node scripts/pi-golden/compaction-fixtures.mjs      # then: node scripts/pi-golden/compaction.mjs
//
// The entries have the shapes pi writes (see loader/session/src/entry.rs for the key order);
// the contents are made up to reach the cases of pi's compaction code: a session too small to
// cut, a cut at a user message, big tool results that force a cut, one long turn that has to
// be split, a previous compaction (pi's and a plugin's), a branch carrying every entry type,
// and a tree with three branches for the branch-summary walk.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, "..", "..", "tests", "fixtures", "compaction");

/** A session being written: entries appended under a movable leaf, as pi's SessionManager. */
class Session {
    constructor(seed) {
        this.state = seed >>> 0;
        this.clock = Date.parse("2026-01-24T10:00:00.000Z") + seed * 1000;
        this.lines = [];
        this.leaf = null;
        this.ids = new Set();
        this.lines.push({
            type: "session",
            version: 3,
            id: `0000${seed.toString(16).padStart(4, "0")}-1111-4222-8333-444455556666`,
            timestamp: this.now(),
            cwd: "/work/project",
        });
    }
    /** mulberry32: a small seeded generator, enough for ids. */
    random() {
        this.state = (this.state + 0x6d2b79f5) >>> 0;
        let t = this.state;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    }
    newId() {
        for (;;) {
            const id = Math.floor(this.random() * 0x100000000).toString(16).padStart(8, "0");
            if (!this.ids.has(id)) {
                this.ids.add(id);
                return id;
            }
        }
    }
    now() {
        this.clock += 1000;
        return new Date(this.clock).toISOString();
    }
    millis() {
        return this.clock;
    }
    /** Appends `{type, id, parentId, timestamp, ...fields}` under the leaf; returns its id. */
    append(type, fields) {
        const id = this.newId();
        const timestamp = this.now();
        const entry =
            type === "custom" || type === "custom_message"
                ? { type, ...fields, id, parentId: this.leaf, timestamp }
                : { type, id, parentId: this.leaf, timestamp, ...fields };
        this.lines.push(entry);
        this.leaf = id;
        return id;
    }
    message(message) {
        return this.append("message", { message: { ...message, timestamp: this.millis() + 1000 } });
    }
    user(text) {
        return this.message({ role: "user", content: [{ type: "text", text }] });
    }
    userString(text) {
        return this.message({ role: "user", content: text });
    }
    assistant(content, usage, stopReason = "stop") {
        const message = {
            role: "assistant",
            content,
            api: "anthropic-messages",
            provider: "anthropic",
            model: "claude-sonnet-4-5",
            usage: usage ?? zeroUsage(),
            stopReason,
        };
        return this.message(message);
    }
    toolCall(name, args, usage) {
        const id = `toolu_${this.newId()}`;
        this.lastCall = { id, name };
        return this.assistant([{ type: "toolCall", id, name, arguments: args }], usage, "toolUse");
    }
    toolResult(text, isError = false) {
        return this.message({
            role: "toolResult",
            toolCallId: this.lastCall.id,
            toolName: this.lastCall.name,
            content: [{ type: "text", text }],
            isError,
        });
    }
    write(file) {
        fs.writeFileSync(path.join(outDir, file), this.lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
    }
}

function usage(input, output, extra = {}) {
    return {
        input,
        output,
        cacheRead: extra.cacheRead ?? 0,
        cacheWrite: extra.cacheWrite ?? 0,
        totalTokens: extra.totalTokens ?? input + output + (extra.cacheRead ?? 0) + (extra.cacheWrite ?? 0),
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
}

function zeroUsage() {
    return usage(0, 0, { totalTokens: 0 });
}

/**
 * About `chars` UTF-16 units of file-like text, with accents and an astral character in each
 * line. Never ends in half a surrogate pair: JSON.stringify would write a lone `\ud83d`, which
 * serde_json (and so pi-hooks' session reader) refuses.
 */
function fileText(name, chars) {
    let text = "";
    for (let line = 1; text.length < chars; line++) {
        text += `${name}:${line}: let café_${line} = compute(${line}); // 😀 naïve\n`;
    }
    const cut = text.slice(0, chars);
    return /[\ud800-\udbff]$/.test(cut) ? cut.slice(0, -1) : cut;
}

/** A turn that reads a file, edits it, and answers. */
function readEditTurn(s, n, resultChars, withUsage) {
    s.user(`Step ${n}: look at src/mod_${n}.rs and fix the bug`);
    s.toolCall("read", { path: `src/mod_${n}.rs`, offset: 1, limit: 2.5e2 });
    s.toolResult(fileText(`src/mod_${n}.rs`, resultChars));
    s.toolCall("edit", { path: `src/mod_${n}.rs`, oldText: "let a = 1.0;", newText: "let a = 2.0;" });
    s.toolResult(`Successfully replaced text in src/mod_${n}.rs.`);
    s.assistant([{ type: "text", text: `Fixed step ${n}.` }], withUsage ? usage(1000 * n, 50 + n, { cacheRead: 7 }) : undefined);
}

fs.mkdirSync(outDir, { recursive: true });

// Header only: nothing to compact.
new Session(1).write("empty.jsonl");

// Two small exchanges: no cut is possible before the budget of recent tokens is reached.
{
    const s = new Session(2);
    s.userString("Hello, what does this project do?");
    s.assistant([{ type: "thinking", thinking: "The user wants an overview." }, { type: "text", text: "It hosts plugins." }], usage(120, 30));
    s.user("Thanks! And where is the loader?");
    s.assistant([{ type: "text", text: "In loader/src." }], usage(160, 12));
    s.write("short.jsonl");
}

// A session whose last entry is a compaction: "Already compacted".
{
    const s = new Session(3);
    const first = s.user("Summarize me");
    s.assistant([{ type: "text", text: "Sure." }], usage(10, 2));
    s.append("compaction", { summary: "The user asked for a summary.", firstKeptEntryId: first, tokensBefore: 12, details: { readFiles: [], modifiedFiles: [] } });
    s.write("compacted-last.jsonl");
}

// Fourteen read/edit turns with 6000-character tool results, usage on the answers, a write and a
// bash run in between: the default 20000 recent tokens cut the session.
{
    const s = new Session(4);
    for (let n = 1; n <= 14; n++) {
        readEditTurn(s, n, 6000, n % 3 !== 0);
        if (n === 5) {
            s.user("Also create docs/notes.md");
            s.toolCall("write", { path: "docs/notes.md", content: "# Notes\n\nkey \"quoted\" \\ back\tslash\u0001" });
            s.toolResult("Wrote docs/notes.md");
            s.assistant([{ type: "text", text: "Done." }], usage(9000, 20));
        }
        if (n === 9) {
            s.message({ role: "bashExecution", command: "cargo test", output: "test result: ok. 12 passed", exitCode: 0, cancelled: false, truncated: false });
        }
    }
    s.user("What is left?");
    s.write("long.jsonl");
}

// Ten turns of long questions and short answers, no tools: the cut falls on a user message, so
// no turn is split.
{
    const s = new Session(10);
    for (let n = 1; n <= 10; n++) {
        s.user(`Question ${n}: ${"why is the sky blue? ".repeat(80)}`);
        s.assistant([{ type: "text", text: `Answer ${n}: because of Rayleigh scattering.` }], usage(500 * n, 12));
    }
    s.write("user-cut.jsonl");
}

// One earlier turn, then a single turn of many tool calls: the cut falls inside that turn.
{
    const s = new Session(5);
    s.user("First, list the files.");
    s.toolCall("ls", { path: "." });
    s.toolResult("src\ntests\nCargo.toml");
    s.assistant([{ type: "text", text: "Three entries." }], usage(300, 10));
    s.user("Now read every module and refactor them.");
    for (let n = 1; n <= 10; n++) {
        s.toolCall("read", { path: `src/part_${n}.rs` }, usage(400 * n, 10));
        s.toolResult(fileText(`src/part_${n}.rs`, 4000));
        if (n % 4 === 0) {
            s.toolCall("write", { path: `src/part_${n}.rs`, content: "// rewritten\n" }, usage(400 * n + 100, 30));
            s.toolResult("ok");
        }
    }
    s.assistant([{ type: "text", text: "Refactoring in progress." }], usage(5000, 40));
    s.write("split-turn.jsonl");
}

// Turns, pi's compaction (firstKeptEntryId inside the branch, file lists in details), more turns.
{
    const s = new Session(6);
    readEditTurn(s, 1, 3000, true);
    readEditTurn(s, 2, 3000, true);
    const keep = s.user("Keep this question after the compaction");
    s.toolCall("read", { path: "src/kept.rs" });
    s.toolResult(fileText("src/kept.rs", 2000));
    s.assistant([{ type: "text", text: "Read it." }], usage(4000, 20));
    s.append("compaction", {
        summary: "## Goal\nFix the bugs in src/mod_1.rs and src/mod_2.rs.",
        firstKeptEntryId: keep,
        tokensBefore: 5400,
        details: { readFiles: ["README.md", "src/z.rs"], modifiedFiles: ["src/mod_1.rs", "Cargo.toml"] },
    });
    for (let n = 3; n <= 8; n++) readEditTurn(s, n, 3000, true);
    s.write("previous-compaction.jsonl");
}

// The same, but the compaction came from a plugin (fromHook: its details are not pi's file lists)
// and names a first kept entry that is not on the branch.
{
    const s = new Session(7);
    readEditTurn(s, 1, 3000, true);
    s.append("compaction", {
        summary: "A plugin's summary.",
        firstKeptEntryId: "deadbeef",
        tokensBefore: 3000,
        details: { readFiles: ["from-plugin.md"], modifiedFiles: ["plugin-owned.rs"] },
        fromHook: true,
    });
    for (let n = 2; n <= 6; n++) readEditTurn(s, n, 3000, n !== 6);
    s.user("And now?");
    s.assistant([{ type: "text", text: "Aborted answer" }], usage(999999, 1), "aborted");
    s.write("hook-compaction.jsonl");
}

// A branch carrying every entry type (settings changes, labels, custom entries, a branch summary,
// a bash run, an error answer), with a side branch left behind; the last entry is on the main
// branch.
{
    const s = new Session(8);
    const root = s.append("model_change", { provider: "anthropic", modelId: "claude-sonnet-4-5" });
    s.append("thinking_level_change", { thinkingLevel: "high" });
    const ask = s.user("Plan the work");
    s.assistant([{ type: "text", text: "Plan: one, two, three." }], usage(500, 40));
    s.append("session_info", { name: "Planning" });
    const side = s.leaf;
    s.user("Try the risky approach");
    s.toolCall("bash", { command: "rm -rf build" });
    s.toolResult(fileText("build.log", 3000));
    s.assistant([{ type: "text", text: "That broke things." }], usage(2500, 30));
    s.leaf = side;
    s.append("branch_summary", {
        fromId: side,
        summary: "Tried the risky approach; it broke the build.",
        details: { readFiles: ["build.log"], modifiedFiles: ["build/"] },
    });
    s.append("label", { targetId: ask, label: "plan" });
    s.append("custom", { customType: "todo-state", data: { open: 3 } });
    s.append("custom_message", { customType: "reminder", content: "Remember the tests.", display: true, details: { source: "todo" } });
    s.message({ role: "bashExecution", command: "make", output: fileText("make.out", 2500), exitCode: 2, cancelled: false, truncated: true, fullOutputPath: "/tmp/make.out" });
    s.message({ role: "bashExecution", command: "ls", output: "", exitCode: 0, cancelled: false, truncated: false, excludeFromContext: true });
    for (let n = 1; n <= 3; n++) readEditTurn(s, n, 2500, true);
    s.append("model_change", { provider: "openai", modelId: "gpt-5" });
    s.append("custom_message", { customType: "reminder", content: [{ type: "text", text: "Two more steps." }, { type: "image", data: "AAAA", mimeType: "image/png" }], display: false });
    s.assistant([{ type: "text", text: "" }], usage(0, 0), "error");
    s.user("Continue with step four");
    s.toolCall("read", { path: "src/four.rs" });
    s.toolResult(fileText("src/four.rs", 1500));
    s.assistant([{ type: "text", text: "Step four read." }], usage(7000, 25));
    void root;
    s.write("branchy.jsonl");
}

// A tree for the branch-summary walk: a trunk, two branches from its middle, a third from the
// first entry, a compaction and a branch summary on the branches; the file ends on branch B.
{
    const s = new Session(9);
    const first = s.user("Start");
    s.assistant([{ type: "text", text: "Started." }], usage(50, 5));
    s.user("Read the config");
    s.toolCall("read", { path: "config.toml" });
    s.toolResult("[server]\nport = 8080\n");
    const fork = s.assistant([{ type: "text", text: "Port 8080." }], usage(120, 8));
    // Branch A
    s.user("Change the port to 9090");
    s.toolCall("edit", { path: "config.toml", oldText: "8080", newText: "9090" });
    s.toolResult("Successfully replaced text in config.toml.");
    s.append("compaction", { summary: "Changed the port.", firstKeptEntryId: fork, tokensBefore: 900, details: { readFiles: ["config.toml"], modifiedFiles: [] } });
    s.assistant([{ type: "text", text: "Changed to 9090." }], usage(200, 9));
    s.append("label", { targetId: fork, label: "before-port" });
    // Branch B, from the fork
    s.leaf = fork;
    s.append("branch_summary", { fromId: fork, summary: "Changed the port to 9090 on another branch.", details: { readFiles: ["config.toml"], modifiedFiles: ["config.toml"] } });
    s.user("Instead, document the port");
    s.toolCall("write", { path: "docs/port.md", content: "Port: 8080\n" });
    s.toolResult("Wrote docs/port.md");
    s.append("custom_message", { customType: "note", content: "documented", display: true });
    // Branch C, from the first entry
    s.leaf = first;
    s.assistant([{ type: "text", text: "Another start." }], usage(60, 6));
    s.user("Third way");
    // Back to branch B, so that the file (and the leaf) ends there.
    s.leaf = s.lines.find((e) => e.type === "custom_message").id;
    s.assistant([{ type: "text", text: "Documented." }], usage(300, 7));
    s.write("tree.jsonl");
}

console.log(`wrote ${fs.readdirSync(outDir).filter((f) => f.endsWith(".jsonl")).length} session files to ${outDir}`);
