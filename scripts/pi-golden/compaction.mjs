// Records what pi 0.73.1 itself answers for compaction and branch-summary preparation on the
// session files in tests/fixtures/compaction/, as <name>.golden.json beside each file; the Rust
// test tests/tests/compaction_golden.rs runs pi-hooks' port (loader/session/src/compaction.rs,
// loader/session/src/branch_summary.rs) on the same files and compares field by field.
//
// To regenerate (pi must be installed first; the install is pinned by package-lock.json):
//
//   bash scripts/pi-peer/install.sh
//   node scripts/pi-golden/compaction-fixtures.mjs   # only when the fixtures change
//   node scripts/pi-golden/compaction.mjs
//
// Each session is opened with pi's own SessionManager (from a scratch copy, so that nothing pi
// might rewrite touches the fixture); the branch is the one ending at the file's last entry.
// For compaction, every file is prepared under two settings ("default": pi's defaults, "small":
// 1500 recent tokens kept), and the golden file holds:
//   prepared    JSON.parse(JSON.stringify(prepareCompaction(...))): what a plugin's
//               session_before_compact event carries (fileOps' Sets become {}), or null;
//   why         when null, the message pi's manual compact() throws;
//   fileLists   computeFileLists(fileOps) ({readFiles, modifiedFiles}, the compaction details);
//   conversation / turnPrefixConversation
//               serializeConversation(convertToLlm(...)) of the two message lists (summaries
//               marked, see conversation() below);
//   contextTokens  estimateContextTokens(buildSessionContext(branch).messages).
// For branch summaries, the golden file holds collectEntriesForBranchSummary for every
// (leaf or null, entry or unknown id) pair (entry ids, not whole entries), and for pairs of
// leaves also prepareBranchEntries with no budget and a budget of 2000 tokens.
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { importPi, PI_VERSION, scratchDir } from "../pi-peer/common.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, "..", "..", "tests", "fixtures", "compaction");

const compaction = await importPi("core/compaction/compaction.js");
const branchSummary = await importPi("core/compaction/branch-summarization.js");
const utils = await importPi("core/compaction/utils.js");
const messages = await importPi("core/messages.js");
const sessions = await importPi("core/session-manager.js");

const SETTINGS = {
    default: compaction.DEFAULT_COMPACTION_SETTINGS,
    small: { enabled: true, reserveTokens: 16384, keepRecentTokens: 1500 },
};
const BUDGETS = [0, 2000];
const scratch = scratchDir("pi-golden-");
/**
 * serializeConversation(convertToLlm(list)), with each summary's wrapper (pi's wording, which
 * pi-hooks words its own way) replaced by a neutral marker: [branchSummary: <summary>] or
 * [compactionSummary: <summary>]. The test puts the same markers in place of pi-hooks' wrappers.
 */
function conversation(list) {
    let text = utils.serializeConversation(messages.convertToLlm(list));
    for (const m of list) {
        if (m.role === "branchSummary") {
            text = text.replace(messages.BRANCH_SUMMARY_PREFIX + m.summary + messages.BRANCH_SUMMARY_SUFFIX, () => `[branchSummary: ${m.summary}]`);
        } else if (m.role === "compactionSummary") {
            text = text.replace(messages.COMPACTION_SUMMARY_PREFIX + m.summary + messages.COMPACTION_SUMMARY_SUFFIX, () => `[compactionSummary: ${m.summary}]`);
        }
    }
    return text;
}

function prepare(branch, settings) {
    const preparation = compaction.prepareCompaction(branch, settings);
    const contextTokens = compaction.estimateContextTokens(sessions.buildSessionContext(branch).messages);
    if (!preparation) {
        const why = branch[branch.length - 1]?.type === "compaction" ? "Already compacted" : "Nothing to compact (session too small)";
        return { prepared: null, why, contextTokens };
    }
    return {
        prepared: JSON.parse(JSON.stringify(preparation)),
        fileLists: utils.computeFileLists(preparation.fileOps),
        conversation: conversation(preparation.messagesToSummarize),
        turnPrefixConversation: conversation(preparation.turnPrefixMessages),
        contextTokens,
    };
}

function collect(session) {
    const entries = session.getEntries();
    const leaves = entries.filter((e) => !entries.some((child) => child.parentId === e.id)).map((e) => e.id);
    const cases = [];
    for (const oldLeafId of [null, ...leaves]) {
        for (const targetId of [...entries.map((e) => e.id), "unknown0"]) {
            const { entries: collected, commonAncestorId } = branchSummary.collectEntriesForBranchSummary(session, oldLeafId, targetId);
            const result = { oldLeafId, targetId, entryIds: collected.map((e) => e.id), commonAncestorId };
            if (oldLeafId !== null && leaves.includes(targetId)) {
                result.prepared = BUDGETS.map((budget) => {
                    const prepared = branchSummary.prepareBranchEntries(collected, budget);
                    return {
                        budget,
                        messages: prepared.messages,
                        totalTokens: prepared.totalTokens,
                        fileLists: utils.computeFileLists(prepared.fileOps),
                        conversation: conversation(prepared.messages),
                    };
                });
            }
            cases.push(result);
        }
    }
    return cases;
}

const files = fs.readdirSync(fixtures).filter((f) => f.endsWith(".jsonl")).sort();
for (const file of files) {
    const copy = path.join(scratch, file);
    fs.copyFileSync(path.join(fixtures, file), copy);
    const session = sessions.SessionManager.open(copy, scratch);
    const branch = session.getBranch();
    const golden = {
        generatedBy: `scripts/pi-golden/compaction.mjs with pi ${PI_VERSION}`,
        leafId: session.getLeafId(),
        compaction: Object.fromEntries(Object.entries(SETTINGS).map(([name, settings]) => [name, { settings, ...prepare(branch, settings) }])),
        branchSummary: file === "tree.jsonl" || file === "branchy.jsonl" ? collect(session) : [],
    };
    const out = path.join(fixtures, file.replace(/\.jsonl$/, ".golden.json"));
    fs.writeFileSync(out, `${JSON.stringify(golden, null, 1)}\n`);
    console.log(`${path.relative(process.cwd(), out)}: ${Object.entries(golden.compaction).map(([n, c]) => `${n}: ${c.prepared ? `cut at ${c.prepared.firstKeptEntryId}${c.prepared.isSplitTurn ? " (split turn)" : ""}, ${c.prepared.messagesToSummarize.length} to summarize` : c.why}`).join("; ")}`);
}
