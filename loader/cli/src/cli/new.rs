//! `pi-hooks new NAME --lang rust|c|cpp`: a plugin project that builds as generated, with one
//! handler (a `tool_call` that blocks `rm -rf` and logs what it blocked to its own data
//! folder), a test and a README with the dev loop. The templates are
//! `loader/cli/src/cli/new_templates/`, compiled into the binary, so `new` works anywhere, with
//! no source tree:
//!
//! - C and C++: the Makefile finds the headers through `pkg-config pi-hooks` (an SDK installed
//!   by `pi-hooks sdk --prefix`), else through `$(PI_HOOKS) sdk --cflags` (the copies in the
//!   pi-hooks program, `sdk.rs`); the CMakeLists.txt through `find_package(pi-hooks)`, else
//!   `${PI_HOOKS} sdk --print-include-dir`. Never a path into a checkout.
//! - Rust: the crates `pi-hooks-abi` (the SDK) and `pi-hooks-host` (tests) by this binary's
//!   version, from crates.io; path dependencies into a pi-hooks source tree instead when
//!   `--pi-hooks-src DIR` names one, or when the tree this binary was built from is still
//!   where it was built.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, ValueEnum};

use super::{CommandError, current_dir, write_stdout};
use pi_hooks_host::guards::display::escape;

/// The language of a new plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Lang {
    /// Rust, on the SDK (a cdylib crate).
    Rust,
    /// C11, with a Makefile and a CMakeLists.txt.
    C,
    /// C++17 with pi_hooks.hpp, with a Makefile and a CMakeLists.txt.
    Cpp,
}

/// `pi-hooks new`'s arguments.
#[derive(Debug, Args)]
pub(super) struct NewArgs {
    /// The plugin's name: lowercase letters, digits, `-` and `_`, starting with a letter.
    name: String,
    /// The language.
    #[arg(long, value_enum, default_value = "rust")]
    lang: Lang,
    /// Where to create it (default: ./NAME). It must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Rust only: depend on the SDK and host crates of this pi-hooks source tree (path
    /// dependencies) instead of their published versions. Default: the tree this binary was
    /// built from, when it is still there. C and C++ projects never use a source tree: they
    /// get the headers from `pi-hooks sdk` or pkg-config.
    #[arg(long = "pi-hooks-src", value_name = "DIR")]
    pi_hooks_src: Option<PathBuf>,
}

const README: &str = include_str!("new_templates/README.md.in");
const RUST_CARGO: &str = include_str!("new_templates/rust/Cargo.toml.in");
const RUST_LIB: &str = include_str!("new_templates/rust/lib.rs.in");
const RUST_TEST: &str = include_str!("new_templates/rust/test.rs.in");
const C_SOURCE: &str = include_str!("new_templates/c/plugin.c.in");
const CPP_SOURCE: &str = include_str!("new_templates/cpp/plugin.cpp.in");
const MAKEFILE: &str = include_str!("new_templates/c/Makefile.in");
const CMAKE: &str = include_str!("new_templates/c/CMakeLists.txt.in");
const TEST_SH: &str = include_str!("new_templates/c/test.sh.in");

/// The source tree this binary was built from (it may have moved or be absent since).
const BUILT_FROM: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `dir`, canonical, when it is a pi-hooks source tree (the SDK and host crates are there).
fn source_tree(dir: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(dir).ok().filter(|s| {
        s.join("abi/Cargo.toml").is_file() && s.join("loader/host/Cargo.toml").is_file()
    })
}

/// Runs `pi-hooks new`.
pub(super) fn new(args: NewArgs) -> Result<ExitCode, CommandError> {
    check_name(&args.name)?;
    let src = match (args.lang, args.pi_hooks_src) {
        (Lang::C | Lang::Cpp, _) => None,
        (Lang::Rust, Some(dir)) => Some(
            source_tree(&dir).ok_or_else(|| {
                CommandError::failed(format!(
                    "{} is not a pi-hooks source tree (no abi/Cargo.toml and loader/host/Cargo.toml); pass another --pi-hooks-src DIR, or none to use the published crates",
                    escape(&dir.display().to_string())
                ))
            })?,
        ),
        (Lang::Rust, None) => source_tree(Path::new(BUILT_FROM)),
    };
    let folder = args.dir.unwrap_or_else(|| current_dir().join(&args.name));
    if std::fs::read_dir(&folder).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(CommandError::failed(format!(
            "{} exists and is not empty; choose another --dir or name",
            escape(&folder.display().to_string())
        )));
    }
    let files = project(&args.name, args.lang, src.as_deref());
    for (relative, text) in &files {
        let path = folder.join(relative);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                CommandError::failed(format!(
                    "cannot create {}: {e}",
                    escape(&parent.display().to_string())
                ))
            })?;
        }
        std::fs::write(&path, text).map_err(|e| {
            CommandError::failed(format!(
                "cannot write {}: {e}",
                escape(&path.display().to_string())
            ))
        })?;
    }
    let (build, test, _) = dev_loop(&args.name, args.lang);
    let mut listing = String::new();
    for (relative, _) in &files {
        listing.push_str(&format!("  {relative}\n"));
    }
    let shown = folder.display().to_string();
    let shown = escape(&shown);
    write_stdout(&format!(
        "Created the {} plugin {} in {shown}:\n{listing}Next: cd {shown} && {build} && {test}\n",
        lang_name(args.lang),
        args.name,
    ))?;
    if args.lang == Lang::Rust && src.is_none() {
        // The crates are publishable but not on crates.io yet: say so where the author meets it.
        eprintln!(
            "note: Cargo.toml depends on pi-hooks-abi and pi-hooks-host {} from crates.io, which are not published there yet; until they are, generate with --pi-hooks-src DIR (a pi-hooks checkout), or write C or C++ (--lang c|cpp), which need only this binary",
            env!("CARGO_PKG_VERSION")
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn check_name(name: &str) -> Result<(), CommandError> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if valid && name.len() <= 64 {
        Ok(())
    } else {
        Err(CommandError::failed(format!(
            "{:?} is not a plugin name: use lowercase letters, digits, - and _, starting with a letter (at most 64)",
            escape(name)
        )))
    }
}

fn lang_name(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "Rust",
        Lang::C => "C",
        Lang::Cpp => "C++",
    }
}

/// The README's paragraph on where the build finds pi-hooks (empty for Rust: Cargo.toml says).
fn headers_note(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "",
        Lang::C | Lang::Cpp => {
            "\nThe headers (`pi_hooks.h`, `pi_hooks.hpp`) come with the `pi-hooks` program: `make` asks\n\
             `pkg-config pi-hooks` (an SDK installed with `pi-hooks sdk --prefix DIR`), else\n\
             `pi-hooks sdk --cflags` (`make PI_HOOKS=/path/to/pi-hooks` for another program); CMake\n\
             uses `find_package(pi-hooks)`, else `pi-hooks sdk --print-include-dir` (`-DPI_HOOKS=...`).\n\
             By hand: `cc -I\"$(pi-hooks sdk --print-include-dir)\" ...`.\n"
        }
    }
}

/// The build command, the test command and the built library, relative to the project.
fn dev_loop(name: &str, lang: Lang) -> (&'static str, &'static str, String) {
    let library = format!(
        "{}{}{}",
        std::env::consts::DLL_PREFIX,
        name.replace('-', "_"),
        std::env::consts::DLL_SUFFIX
    );
    match lang {
        Lang::Rust => (
            "cargo build",
            "cargo test",
            format!("target/debug/{library}"),
        ),
        Lang::C | Lang::Cpp => ("make", "make test", format!("./{library}")),
    }
}

/// The project's files: (path relative to the project, text). `src`: the source tree a Rust
/// project takes its crates from (else the published crates of this version).
fn project(name: &str, lang: Lang, src: Option<&Path>) -> Vec<(String, String)> {
    let libname = name.replace('-', "_");
    let (build, test, artifact) = dev_loop(name, lang);
    let source = match lang {
        Lang::Rust => String::new(),
        Lang::C => format!("{libname}.c"),
        Lang::Cpp => format!("{libname}.cpp"),
    };
    let version = env!("CARGO_PKG_VERSION");
    let (deps_from, sdk_dep, host_dep) = match src {
        Some(src) => (
            format!("The pi-hooks crates of the source tree {}.", src.display()),
            format!("{{ path = {:?} }}", src.join("abi").display().to_string()),
            format!(
                "{{ path = {:?} }}",
                src.join("loader/host").display().to_string()
            ),
        ),
        None => (
            format!(
                "The pi-hooks crates at the version of the pi-hooks that generated this project ({version})."
            ),
            format!("\"{version}\""),
            format!("\"{version}\""),
        ),
    };
    let fill = |template: &str| {
        let mut text = template
            .replace("@NAME@", name)
            .replace("@LIBNAME@", &libname)
            .replace("@SUFFIX@", std::env::consts::DLL_SUFFIX)
            .replace("@SOURCE@", &source)
            .replace("@DEPS_FROM@", &deps_from)
            .replace("@SDK_DEP@", &sdk_dep)
            .replace("@HOST_DEP@", &host_dep)
            .replace("@HEADERS@", headers_note(lang))
            .replace("@LANG_NAME@", lang_name(lang))
            .replace("@BUILD@", build)
            .replace("@TEST@", test)
            .replace("@ARTIFACT@", &artifact);
        let (compiler, flags, vars, cmake_lang, standard) = match lang {
            Lang::Cpp => (
                "CXX",
                "CXXFLAGS",
                "CXXFLAGS ?= -std=c++17 -O2 -Wall -Wextra",
                "CXX",
                "CXX_STANDARD 17",
            ),
            _ => (
                "CC",
                "CFLAGS",
                "CFLAGS ?= -std=c11 -O2 -Wall -Wextra",
                "C",
                "C_STANDARD 11",
            ),
        };
        text = text
            .replace("@CC_VAR@", compiler)
            .replace("@FLAGS_VAR@", flags)
            .replace("@COMPILER_VARS@", vars)
            .replace("@CMAKE_LANG@", cmake_lang)
            .replace("@STD_PROPERTY@", standard);
        text
    };
    // Build output, packed packages (`pi-hooks pack --out dist`) and the signing key
    // (`pi-hooks keygen`): `git add -A` must never stage a secret key.
    let ignore = match lang {
        Lang::Rust => "target/\ndist/\npi-hooks.key\n",
        Lang::C | Lang::Cpp => "*.so\n*.dylib\n*.dll\nbuild/\ndist/\npi-hooks.key\n",
    };
    let mut files = vec![
        ("README.md".to_owned(), fill(README)),
        (".gitignore".to_owned(), ignore.to_owned()),
    ];
    match lang {
        Lang::Rust => {
            files.push(("Cargo.toml".into(), fill(RUST_CARGO)));
            files.push(("src/lib.rs".into(), fill(RUST_LIB)));
            files.push(("tests/plugin.rs".into(), fill(RUST_TEST)));
        }
        Lang::C | Lang::Cpp => {
            let code = if lang == Lang::C {
                C_SOURCE
            } else {
                CPP_SOURCE
            };
            files.push((source.clone(), fill(code)));
            files.push(("Makefile".into(), fill(MAKEFILE)));
            files.push(("CMakeLists.txt".into(), fill(CMAKE)));
            files.push(("test.sh".into(), fill(TEST_SH)));
        }
    }
    files
}
