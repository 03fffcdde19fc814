//! `pi-hooks sdk`: what a C or C++ plugin author needs, from the binary alone. The headers
//! (`include/pi_hooks.h`, generated from `abi/src/ffi` by `scripts/gen-header.sh`, and
//! `include/pi_hooks.hpp`) and the package files (`loader/cli/src/cli/sdk_templates/`) are
//! compiled into the binary with `include_str!`, so they are the committed files byte for byte
//! (`bash scripts/gen-header.sh --verify` checks that the header is the ABI's).
//!
//! - `pi-hooks sdk --prefix DIR [--with-binary]` installs them as `scripts/install.sh` always
//!   has: `DIR/include/pi-hooks/pi_hooks.h` and `.hpp`, `DIR/lib/pkgconfig/pi-hooks.pc`,
//!   `DIR/lib/cmake/pi-hooks/pi-hooksConfig.cmake` and `pi-hooksConfigVersion.cmake` (both
//!   find the headers relative to themselves, so the prefix can be moved), and with
//!   `--with-binary` this binary as `DIR/bin/pi-hooks`.
//! - `pi-hooks sdk --print-include-dir` prints a folder holding the two headers: a per-user
//!   cache, `$XDG_CACHE_HOME/pi-hooks/sdk/VERSION/include` (else `~/.cache/...`), whose files
//!   are compared with the embedded ones on every call and rewritten (each atomically: a
//!   temporary file renamed over it) when missing or different. `--cflags` prints the same
//!   folder as a `-I` flag, quoted for a shell as `pkg-config --cflags` quotes.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{ArgGroup, Args};

use super::{CommandError, write_stdout};
use pi_hooks_abi::ffi::{PI_HOOKS_ABI_MAJOR, PI_HOOKS_ABI_MINOR};
use pi_hooks_host::guards::display::escape;

/// The C header, as committed (`include/pi_hooks.h`).
pub(super) const HEADER: &str = include_str!("../../../../include/pi_hooks.h");
/// The C++ header, as committed (`include/pi_hooks.hpp`).
pub(super) const CPP_HEADER: &str = include_str!("../../../../include/pi_hooks.hpp");
const PKG_CONFIG: &str = include_str!("sdk_templates/pi-hooks.pc.in");
const CMAKE_CONFIG: &str = include_str!("sdk_templates/pi-hooksConfig.cmake.in");
const CMAKE_VERSION: &str = include_str!("sdk_templates/pi-hooksConfigVersion.cmake.in");

/// The version of this binary, which is the version of the headers in it.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `pi-hooks sdk`'s arguments.
#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("what")
        .required(true)
        .args(["prefix", "print_include_dir", "cflags"])
))]
pub(super) struct SdkArgs {
    /// Install the headers, a pkg-config file and a CMake package under DIR (created when
    /// missing): DIR/include/pi-hooks/, DIR/lib/pkgconfig/pi-hooks.pc,
    /// DIR/lib/cmake/pi-hooks/. For example ~/.local or /usr/local.
    #[arg(long, value_name = "DIR")]
    prefix: Option<PathBuf>,
    /// With --prefix: also copy this pi-hooks binary to DIR/bin/pi-hooks.
    #[arg(long)]
    with_binary: bool,
    /// Print a folder holding pi_hooks.h and pi_hooks.hpp (this binary's copies, kept in a
    /// per-user cache): `cc -I"$(pi-hooks sdk --print-include-dir)" ...`.
    #[arg(long)]
    print_include_dir: bool,
    /// Print that folder as a compiler flag, `-I<folder>` (quoted for a shell).
    #[arg(long)]
    cflags: bool,
}

/// Runs `pi-hooks sdk`.
pub(super) fn sdk(args: SdkArgs) -> Result<ExitCode, CommandError> {
    if args.with_binary && args.prefix.is_none() {
        return Err(CommandError::usage(
            "--with-binary installs the binary under --prefix DIR; give --prefix too",
        ));
    }
    if let Some(prefix) = args.prefix {
        install(&prefix, args.with_binary)?;
    } else {
        let folder = include_dir()?;
        let shown = folder.display().to_string();
        if args.cflags {
            write_stdout(&format!("-I{}\n", shell_quote(&shown)))?;
        } else {
            write_stdout(&format!("{shown}\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The headers under their file names.
fn headers() -> [(&'static str, &'static str); 2] {
    [("pi_hooks.h", HEADER), ("pi_hooks.hpp", CPP_HEADER)]
}

/// A template with this binary's versions filled in.
fn fill(template: &str) -> String {
    template
        .replace("@VERSION@", VERSION)
        .replace("@ABI_MAJOR@", &PI_HOOKS_ABI_MAJOR.to_string())
        .replace("@ABI_MINOR@", &PI_HOOKS_ABI_MINOR.to_string())
}

fn shown(path: &Path) -> String {
    escape(&path.display().to_string()).into_owned()
}

fn create_dir(path: &Path) -> Result<(), CommandError> {
    std::fs::create_dir_all(path)
        .map_err(|e| CommandError::failed(format!("cannot create {}: {e}", shown(path))))
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, renamed over it, so a
/// reader (another `pi-hooks sdk`, a compiler) sees the old file or the new one, never half.
fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> Result<(), CommandError> {
    let folder = path.parent().unwrap_or(Path::new("."));
    let fail =
        |e: std::io::Error| CommandError::failed(format!("cannot write {}: {e}", shown(path)));
    let mut temporary = tempfile::Builder::new()
        .prefix(".pi-hooks-sdk.")
        .tempfile_in(folder)
        .map_err(fail)?;
    temporary.write_all(bytes).map_err(fail)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temporary
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(fail)?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    temporary.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}

/// `pi-hooks sdk --prefix PREFIX [--with-binary]`.
fn install(prefix: &Path, with_binary: bool) -> Result<(), CommandError> {
    create_dir(prefix)?;
    let prefix = std::fs::canonicalize(prefix)
        .map_err(|e| CommandError::failed(format!("cannot resolve {}: {e}", shown(prefix))))?;
    let include = prefix.join("include/pi-hooks");
    let pkgconfig = prefix.join("lib/pkgconfig");
    let cmake = prefix.join("lib/cmake/pi-hooks");
    for folder in [&include, &pkgconfig, &cmake] {
        create_dir(folder)?;
    }
    let mut listing = String::new();
    if with_binary {
        let bin = prefix.join("bin");
        create_dir(&bin)?;
        let me = std::env::current_exe().map_err(|e| {
            CommandError::failed(format!("cannot find this pi-hooks binary to copy: {e}"))
        })?;
        let bytes = std::fs::read(&me)
            .map_err(|e| CommandError::failed(format!("cannot read {}: {e}", shown(&me))))?;
        let target = bin.join(format!("pi-hooks{}", std::env::consts::EXE_SUFFIX));
        write_atomically(&target, &bytes, 0o755)?;
        listing.push_str(&format!("  {}\n", shown(&target)));
    }
    for (name, text) in headers() {
        write_atomically(&include.join(name), text.as_bytes(), 0o644)?;
    }
    write_atomically(
        &pkgconfig.join("pi-hooks.pc"),
        fill(PKG_CONFIG).as_bytes(),
        0o644,
    )?;
    write_atomically(
        &cmake.join("pi-hooksConfig.cmake"),
        fill(CMAKE_CONFIG).as_bytes(),
        0o644,
    )?;
    write_atomically(
        &cmake.join("pi-hooksConfigVersion.cmake"),
        fill(CMAKE_VERSION).as_bytes(),
        0o644,
    )?;
    let p = shown(&prefix);
    listing.push_str(&format!(
        "  {p}/include/pi-hooks/pi_hooks.h, pi_hooks.hpp\n  {p}/lib/pkgconfig/pi-hooks.pc                 (cc $(pkg-config --cflags pi-hooks))\n  {p}/lib/cmake/pi-hooks/pi-hooksConfig.cmake   (find_package(pi-hooks), pi-hooks::headers)\n"
    ));
    let mut notes = String::new();
    if with_binary {
        let bin = prefix.join("bin");
        let on_path = std::env::var_os("PATH")
            .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir == bin));
        if !on_path {
            notes.push_str(&format!(
                "note: {p}/bin is not on PATH; add it to run pi-hooks by name\n"
            ));
        }
    }
    if prefix != Path::new("/usr") && prefix != Path::new("/usr/local") {
        notes.push_str(&format!(
            "note: set PKG_CONFIG_PATH={p}/lib/pkgconfig and CMAKE_PREFIX_PATH={p} unless your tools already look there\n"
        ));
    }
    write_stdout(&format!(
        "installed pi-hooks {VERSION} (plugin ABI {PI_HOOKS_ABI_MAJOR}.{PI_HOOKS_ABI_MINOR}) under {p}:\n{listing}{notes}"
    ))?;
    Ok(())
}

/// The per-user cache folder of this version's headers: `$XDG_CACHE_HOME` when it is set to
/// an absolute path (the XDG base directory rule), else `$HOME/.cache`.
fn cache_root() -> Result<PathBuf, CommandError> {
    if let Some(xdg) = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from)
        && xdg.is_absolute()
    {
        return Ok(xdg);
    }
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if home.is_absolute() => Ok(home.join(".cache")),
        _ => Err(CommandError::failed(
            "cannot find a cache folder for the headers: set HOME or XDG_CACHE_HOME to an absolute path, or install them with `pi-hooks sdk --prefix DIR`",
        )),
    }
}

/// The folder `--print-include-dir` prints, its headers checked against the embedded ones
/// and rewritten where they differ or are missing.
fn include_dir() -> Result<PathBuf, CommandError> {
    let folder = cache_root()?
        .join("pi-hooks/sdk")
        .join(VERSION)
        .join("include");
    create_dir(&folder)?;
    for (name, text) in headers() {
        let path = folder.join(name);
        let current = std::fs::read(&path).ok();
        if current.as_deref() != Some(text.as_bytes()) {
            write_atomically(&path, text.as_bytes(), 0o644)?;
        }
    }
    Ok(folder)
}

/// `text` for a shell, as `pkg-config --cflags` writes a path: each character that is not a
/// letter, a digit or one of `_-./+=:,@%` gets a backslash before it.
fn shell_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if !(c.is_ascii_alphanumeric() || "_-./+=:,@%".contains(c)) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded headers are the committed files (through `include_str!` they are the same
    /// files; this fails if that path ever points anywhere else).
    #[test]
    fn the_embedded_headers_are_the_committed_ones() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert_eq!(
            HEADER,
            std::fs::read_to_string(root.join("include/pi_hooks.h")).unwrap()
        );
        assert_eq!(
            CPP_HEADER,
            std::fs::read_to_string(root.join("include/pi_hooks.hpp")).unwrap()
        );
    }

    #[test]
    fn shell_quoting_keeps_plain_paths_and_escapes_the_rest() {
        assert_eq!(shell_quote("/home/a/.cache/x-1.0"), "/home/a/.cache/x-1.0");
        assert_eq!(shell_quote("/my dir/$x"), "/my\\ dir/\\$x");
    }
}
