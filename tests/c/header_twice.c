/* pi_hooks.h must survive being included twice (include guard plus the helpers' own guard),
 * and its helpers must work in C11 static initialisers. Built with -fsyntax-only by
 * scripts/build-c-plugins.sh. */
#include "pi_hooks.h"
#include "pi_hooks.h"

static const PiStr greeting = PI_STR_LIT("hello");

static PiStatus init(const PiHostApi *host, PiPlugin *plugin) {
    (void)host;
    (void)plugin;
    return PI_OK;
}

static const PiPluginDescriptor descriptor =
    PI_HOOKS_DESCRIPTOR("twice", "0.0.0", "", init, NULL);

_Static_assert(sizeof(PI_HOOKS_ENTRY_SYMBOL) == sizeof("pi_hooks_plugin_v1"), "entry symbol");
_Static_assert(PI_HOOKS_LAYOUT_FINGERPRINT != 0, "fingerprint");

const PiStr *twice_greeting(void);
const PiStr *twice_greeting(void) {
    return &greeting;
}

const PiPluginDescriptor *twice_descriptor(void);
const PiPluginDescriptor *twice_descriptor(void) {
    return &descriptor;
}
