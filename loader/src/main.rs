//! The `pi-hooks` command.

fn main() -> std::process::ExitCode {
    // Before any plugin is loaded: crashes, exit() and fork() in plugin code are reported and
    // end the process the honest way (loader/src/crash_guard.rs).
    pi_hooks::crash_guard::install();
    pi_hooks::cli::main()
}
