//! `pi-hooks new NAME --lang rust|c|cpp`: a plugin project that builds as generated, with one
//! handler (a `tool_call` that blocks `rm -rf`), a test and a README with the dev loop. The
//! templates are `loader/cli/src/cli/new_templates/`; the paths of this pi-hooks tree (the Rust
//! SDK, the host for tests, the C header) are written into the project, so it builds from
//! anywhere on this machine (`--pi-hooks-src` points elsewhere).

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
    /// The pi-hooks source tree whose SDK, host and header the project uses (default: the
    /// one this binary was built from).
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

/// Runs `pi-hooks new`.
pub(super) fn new(args: NewArgs) -> Result<ExitCode, CommandError> {
    check_name(&args.name)?;
    let src = match args.pi_hooks_src {
        Some(dir) => dir,
        None => PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
    };
    let src = std::fs::canonicalize(&src)
        .ok()
        .filter(|s| s.join("abi/Cargo.toml").is_file() && s.join("include/pi_hooks.h").is_file())
        .ok_or_else(|| {
            CommandError::failed(format!(
                "{} is not a pi-hooks source tree (no abi/Cargo.toml and include/pi_hooks.h); pass --pi-hooks-src DIR",
                escape(&src.display().to_string())
            ))
        })?;
    let folder = args.dir.unwrap_or_else(|| current_dir().join(&args.name));
    if std::fs::read_dir(&folder).is_ok_and(|mut entries| entries.next().is_some()) {
        return Err(CommandError::failed(format!(
            "{} exists and is not empty; choose another --dir or name",
            escape(&folder.display().to_string())
        )));
    }
    let files = project(&args.name, args.lang, &src);
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

/// The project's files: (path relative to the project, text).
fn project(name: &str, lang: Lang, src: &Path) -> Vec<(String, String)> {
    let libname = name.replace('-', "_");
    let (build, test, artifact) = dev_loop(name, lang);
    let source = match lang {
        Lang::Rust => String::new(),
        Lang::C => format!("{libname}.c"),
        Lang::Cpp => format!("{libname}.cpp"),
    };
    let include = src.join("include").display().to_string();
    let fill = |template: &str| {
        let mut text = template
            .replace("@NAME@", name)
            .replace("@LIBNAME@", &libname)
            .replace("@SUFFIX@", std::env::consts::DLL_SUFFIX)
            .replace("@SOURCE@", &source)
            .replace("@INCLUDE@", &include)
            .replace("@SDK@", &src.join("abi").display().to_string())
            .replace("@HOST@", &src.join("loader/host").display().to_string())
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
