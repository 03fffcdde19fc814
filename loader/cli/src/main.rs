//! The `pi-hooks` command: the CLI ([`cli`]) and the modes it runs ([`modes`]: print/JSON,
//! RPC, interactive), thin over the embeddable host (`pi-hooks-host`) and the agent loop
//! (`pi-hooks-agent`).

mod cli;
mod modes;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Before any plugin is loaded: crashes, exit() and fork() in plugin code are reported and
    // end the process the honest way (loader/host/src/guards/crash_guard.rs).
    pi_hooks_host::guards::crash_guard::install();
    let code = cli::main();
    if pi_hooks_host::library::system_loader_stuck() {
        // A plugin's static initialiser never returned and holds the system loader's lock,
        // which the C library's `exit` takes too: end without it, or the process never ends.
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let status = (0..=u8::MAX)
            .find(|n| ExitCode::from(*n) == code)
            .map_or(1, i32::from);
        // SAFETY: `_exit` ends the process at once; everything this binary writes is flushed.
        unsafe { libc::_exit(status) };
    }
    code
}
