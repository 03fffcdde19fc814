/*
 * git-checkpoint: stashes the code state at every turn so that forking the session can
 * restore it (the "Git Checkpointing" example of pi's hook documentation).
 *
 * At `turn_start` it runs `git stash create` (through the host's `exec`, in the session's
 * cwd): git writes a stash commit of the working tree without touching the working tree,
 * the index or the stash list, and prints its id (nothing when the tree is clean, or outside
 * a repository). The id is appended to the session as a `custom` entry of type
 * "git-checkpoint", `{"turnIndex", "ref", "entryId"}`, where `entryId` is the session's leaf
 * when the turn started (null in an empty session). The checkpoint entry becomes the leaf, so
 * the messages of the turn (the prompt, for turn 0) follow it: it is the code state before
 * them. Kept in the session rather than in memory (the seed used a Map that it cleared at
 * `agent_end`), the checkpoints survive the run and a restart.
 *
 * At `session_before_fork` (`{entryId}`: forking at that entry goes back to before it) it
 * looks for the checkpoint entry that is the entry's parent, asks
 * "Restore code state?" with "Yes, restore code to that point" / "No, keep current code", and
 * on yes runs `git stash apply <ref>` and notifies "Code restored to checkpoint". Without a UI
 * the dialog answers its default (no choice) at once, so nothing is restored.
 *
 * Build with scripts/build-c-plugins.sh or
 *   cc -std=c11 -Wall -Wextra -Werror -pedantic -shared -fPIC -I include \
 *      -o libgit_checkpoint.so plugins/examples/git-checkpoint/git_checkpoint.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pi_hooks.h"

#define CUSTOM_TYPE "git-checkpoint"

static const PiHostApi *host;
static PiPlugin *self;

/* Runs git with `count` arguments in the session's cwd; the owned result goes to `*out`. */
static PiStatus git(const PiStr *args, size_t count, PiValue **out) {
    PiExecRequest request;
    memset(&request, 0, sizeof request);
    request.struct_size = (uint32_t)sizeof request;
    request.program = pi_str("git");
    request.args = args;
    request.arg_count = count;
    request.cwd = pi_str("");
    request.timeout_ms = 30000;
    return host->actions->exec(self, &request, out);
}

/* Whether `s` is a git object id (40 or 64 lowercase hex digits). */
static bool is_object_id(PiStr s) {
    size_t i;
    if (s.len != 40 && s.len != 64) return false;
    for (i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    }
    return true;
}

static PiStatus on_turn_start(void *user_data, const PiValue *event, PiContext *ctx,
                              PiResult *result) {
    const PiValueApi *v = host->values;
    static const PiStr args[] = {PI_STR_LIT("stash"), PI_STR_LIT("create")};
    PiValue *ran = NULL, *leaf = NULL;
    PiStr out = {0}, ref, leaf_json = PI_STR_LIT("null");
    int64_t turn_index = 0, code = 1;
    char *data;
    size_t size;
    PiStatus status;
    (void)user_data;
    (void)result;
    v->as_int(v->get(event, pi_str("turnIndex")), &turn_index);
    status = git(args, 2, &ran);
    if (status != PI_OK) {
        host->context->set_error(ctx, pi_str("git-checkpoint: could not run git stash create"));
        return status;
    }
    v->as_int(v->get(ran, pi_str("code")), &code);
    v->as_str(v->get(ran, pi_str("stdout")), &out);
    ref = out;
    while (ref.len > 0 && (ref.ptr[ref.len - 1] == '\n' || ref.ptr[ref.len - 1] == '\r' ||
                           ref.ptr[ref.len - 1] == ' '))
        ref.len--;
    /* A clean tree prints nothing; outside a repository git fails: no checkpoint either way. */
    if (code != 0 || !is_object_id(ref)) {
        v->free(ran);
        return PI_OK;
    }
    if (host->context->session_leaf_id(ctx, &leaf) == PI_OK && leaf != NULL)
        v->to_json(leaf, &leaf_json);
    size = 96 + ref.len + leaf_json.len;
    data = malloc(size);
    if (data == NULL) {
        v->free(leaf);
        v->free(ran);
        host->context->set_error(ctx, pi_str("git-checkpoint: out of memory"));
        return PI_ERR;
    }
    snprintf(data, size, "{\"turnIndex\":%lld,\"ref\":\"%.*s\",\"entryId\":%.*s}",
             (long long)turn_index, (int)ref.len, ref.ptr, (int)leaf_json.len, leaf_json.ptr);
    status = host->actions->append_entry(self, pi_str(CUSTOM_TYPE), pi_str(data));
    free(data);
    v->free(leaf);
    v->free(ran);
    if (status != PI_OK)
        host->context->set_error(ctx, pi_str("git-checkpoint: could not save the checkpoint"));
    return status;
}

/* The ref of the checkpoint entry that is the parent of the entry `entry_id` (the code state
 * before it), or an empty string (borrowed from `entries`). */
static PiStr checkpoint_before(const PiValue *entries, PiStr entry_id) {
    const PiValueApi *v = host->values;
    PiStr none = {0}, parent = {0};
    size_t i, n = v->len(entries);
    for (i = 0; i < n && parent.len == 0; i++) {
        const PiValue *entry = v->at(entries, i);
        PiStr id = {0};
        if (v->as_str(v->get(entry, pi_str("id")), &id) == PI_OK && id.len == entry_id.len &&
            memcmp(id.ptr, entry_id.ptr, id.len) == 0)
            v->as_str(v->get(entry, pi_str("parentId")), &parent);
    }
    if (parent.len == 0) return none;
    for (i = 0; i < n; i++) {
        const PiValue *entry = v->at(entries, i);
        PiStr id = {0}, type = {0}, ref = {0};
        if (v->as_str(v->get(entry, pi_str("id")), &id) != PI_OK || id.len != parent.len ||
            memcmp(id.ptr, parent.ptr, id.len) != 0)
            continue;
        if (v->as_str(v->get(entry, pi_str("customType")), &type) == PI_OK &&
            strcmp(type.ptr, CUSTOM_TYPE) == 0 &&
            v->as_str(v->pointer(entry, pi_str("/data/ref")), &ref) == PI_OK && is_object_id(ref))
            return ref;
        return none;
    }
    return none;
}

static PiStatus on_before_fork(void *user_data, const PiValue *event, PiContext *ctx,
                               PiResult *result) {
    const PiValueApi *v = host->values;
    static const PiStr options[] = {PI_STR_LIT("Yes, restore code to that point"),
                                    PI_STR_LIT("No, keep current code")};
    PiValue *entries = NULL, *ran = NULL;
    PiStr entry_id = {0}, ref;
    int64_t choice = -1, code = 1;
    PiStatus status;
    (void)user_data;
    (void)result;
    if (v->as_str(v->get(event, pi_str("entryId")), &entry_id) != PI_OK) return PI_OK;
    if (host->context->session_entries(ctx, &entries) != PI_OK || entries == NULL) return PI_OK;
    ref = checkpoint_before(entries, entry_id);
    if (ref.len == 0) {
        v->free(entries);
        return PI_OK;
    }
    status = host->ui->select(ctx, pi_str("Restore code state?"), options, 2, NULL, &choice);
    if (status == PI_OK && choice == 0) {
        PiStr args[3];
        args[0] = pi_str("stash");
        args[1] = pi_str("apply");
        args[2] = ref;
        status = git(args, 3, &ran);
        if (status == PI_OK) v->as_int(v->get(ran, pi_str("code")), &code);
        if (code == 0) {
            host->ui->notify(ctx, pi_str("Code restored to checkpoint"), PI_NOTIFY_INFO);
        } else {
            PiStr err = {0};
            v->as_str(v->get(ran, pi_str("stderr")), &err);
            host->ui->notify(ctx, err.len > 0 ? err : pi_str("git stash apply failed"),
                             PI_NOTIFY_ERROR);
        }
        v->free(ran);
    }
    v->free(entries);
    return PI_OK;
}

static PiStatus init(const PiHostApi *h, PiPlugin *plugin) {
    PiStatus status;
    host = h;
    self = plugin;
    status = host->registry->on(plugin, pi_str("turn_start"), on_turn_start, NULL);
    if (status != PI_OK) return status;
    return host->registry->on(plugin, pi_str("session_before_fork"), on_before_fork, NULL);
}

PI_HOOKS_PLUGIN("git-checkpoint", "1.0.0",
                "Stashes the code state at each turn and offers to restore it on fork", init,
                NULL);
