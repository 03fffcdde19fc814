//! The `pi-hooks` command.

fn main() -> std::process::ExitCode {
    pi_hooks::cli::main()
}
