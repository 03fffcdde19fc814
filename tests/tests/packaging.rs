//! Packaging for C and C++ authors (`scripts/install.sh --prefix`): the headers, a pkg-config
//! file and a CMake package land under a prefix in a temporary folder, and example plugins
//! build from that prefix alone (copied out of the repository first, so no other include path
//! can help) with `cc $(pkg-config --cflags pi-hooks)` and with `find_package(pi-hooks)` +
//! CMake, then load in `pi-hooks inspect`.
//!
//! CMake comes from `scripts/install-cmake.sh` (the wheel pinned in
//! `scripts/cmake-requirements.txt`, in `target/tools/cmake-venv`), which the CMake test runs
//! itself on first use (`pi_hooks_tests::tools::cmake`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pi_hooks_tests::{Sandbox, pi_hooks_bin, workspace_root};
use serde_json::Value;

/// Runs `command`, failing the test with its output when it fails.
fn run_ok(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Installs into `<sandbox>/prefix` with the test build of the binary; returns the prefix.
fn install(s: &Sandbox) -> PathBuf {
    let prefix = s.root().join("prefix");
    let mut command = Command::new("bash");
    command
        .arg(workspace_root().join("scripts/install.sh"))
        .arg("--prefix")
        .arg(&prefix)
        .arg("--binary")
        .arg(pi_hooks_bin());
    let output = run_ok(&mut command, "scripts/install.sh");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("pi-hooks.pc"), "{text}");
    prefix
}

/// Copies `plugins/examples/<folder>/<file>` into `dir`; returns the copy.
fn example_copy(dir: &Path, folder: &str, file: &str) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    let to = dir.join(file);
    std::fs::copy(
        workspace_root()
            .join("plugins/examples")
            .join(folder)
            .join(file),
        &to,
    )
    .expect("copy the example");
    to
}

/// `pi-hooks inspect --json` of `library` with the installed binary: its name and ABI.
fn inspect(s: &Sandbox, prefix: &Path, library: &Path) -> (String, String) {
    let mut command = Command::new(prefix.join("bin/pi-hooks"));
    command
        .args(["inspect", "--json", "--run-code"])
        .arg(library)
        .env("HOME", s.home())
        .current_dir(s.project());
    let output = run_ok(&mut command, "pi-hooks inspect");
    let report: Value = serde_json::from_slice(&output.stdout).expect("inspect --json");
    let plugin = report
        .get("plugins")
        .and_then(|p| p.get(0))
        .unwrap_or(&report);
    (
        plugin["name"].as_str().unwrap_or_default().to_owned(),
        plugin["abi"].as_str().unwrap_or_default().to_owned(),
    )
}

fn abi() -> String {
    format!(
        "{}.{}",
        pi_hooks_abi::ffi::PI_HOOKS_ABI_MAJOR,
        pi_hooks_abi::ffi::PI_HOOKS_ABI_MINOR
    )
}

#[test]
fn install_puts_headers_package_files_and_the_binary_under_the_prefix() {
    let s = Sandbox::new();
    let prefix = install(&s);
    for header in ["pi_hooks.h", "pi_hooks.hpp"] {
        assert_eq!(
            std::fs::read(prefix.join("include/pi-hooks").join(header)).expect(header),
            std::fs::read(workspace_root().join("include").join(header)).unwrap(),
            "{header} installed as committed"
        );
    }
    assert_eq!(
        std::fs::read(prefix.join("bin/pi-hooks")).expect("the binary"),
        std::fs::read(pi_hooks_bin()).unwrap()
    );
    let config = std::fs::read_to_string(prefix.join("lib/cmake/pi-hooks/pi-hooksConfig.cmake"))
        .expect("pi-hooksConfig.cmake");
    assert!(config.contains("pi-hooks::headers"), "{config}");
    assert!(
        prefix
            .join("lib/cmake/pi-hooks/pi-hooksConfigVersion.cmake")
            .is_file()
    );
    // Without --prefix: a usage error, nothing installed.
    let output = Command::new("bash")
        .arg(workspace_root().join("scripts/install.sh"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--prefix DIR is required"));
}

#[test]
fn a_c_example_builds_with_pkg_config_from_the_prefix_and_loads() {
    let s = Sandbox::new();
    let prefix = install(&s);
    let src = example_copy(&s.root().join("src"), "block-sudo-c", "block_sudo.c");
    let cflags = run_ok(
        Command::new("pkg-config")
            .args(["--cflags", "pi-hooks"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        "pkg-config --cflags pi-hooks",
    );
    let cflags = String::from_utf8_lossy(&cflags.stdout).into_owned();
    assert!(cflags.contains("include/pi-hooks"), "{cflags}");
    let version = run_ok(
        Command::new("pkg-config")
            .args(["--modversion", "pi-hooks"])
            .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")),
        "pkg-config --modversion",
    );
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        env!("CARGO_PKG_VERSION")
    );
    let library = s.root().join("libblock_sudo.so");
    run_ok(
        Command::new("cc")
            .args(cflags.split_whitespace())
            .args([
                "-std=c11",
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-shared",
                "-fPIC",
                "-o",
            ])
            .arg(&library)
            .arg(&src),
        "cc $(pkg-config --cflags pi-hooks)",
    );
    assert_eq!(
        inspect(&s, &prefix, &library),
        ("block-sudo".to_owned(), abi())
    );
}

const CMAKE_LISTS: &str = r#"cmake_minimum_required(VERSION 3.16)
project(kit C CXX)
find_package(pi-hooks 0.1 REQUIRED)
add_library(redact_aws_keys MODULE redact_aws_keys.c)
add_library(bang_stats MODULE bang_stats.cpp)
set_target_properties(redact_aws_keys bang_stats PROPERTIES
  C_STANDARD 11 C_STANDARD_REQUIRED ON CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON
  C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
foreach(plugin redact_aws_keys bang_stats)
  target_link_libraries(${plugin} PRIVATE pi-hooks::headers)
  target_compile_options(${plugin} PRIVATE -Wall -Wextra -Werror)
endforeach()
message(STATUS "pi-hooks ABI ${PI_HOOKS_ABI_VERSION}, binary ${PI_HOOKS_EXECUTABLE}")
"#;

#[test]
fn c_and_cpp_examples_build_with_cmake_find_package_and_load() {
    let cmake = pi_hooks_tests::tools::cmake();
    let s = Sandbox::new();
    let prefix = install(&s);
    let src = s.root().join("src");
    example_copy(&src, "redact-aws-keys-c", "redact_aws_keys.c");
    example_copy(&src, "bang-stats-cpp", "bang_stats.cpp");
    std::fs::write(src.join("CMakeLists.txt"), CMAKE_LISTS).unwrap();
    let build = s.root().join("build");
    let configure = run_ok(
        Command::new(&cmake)
            .arg("-S")
            .arg(&src)
            .arg("-B")
            .arg(&build)
            .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())),
        "cmake configure",
    );
    let text = String::from_utf8_lossy(&configure.stdout);
    assert!(
        text.contains(&format!(
            "pi-hooks ABI {}, binary {}",
            abi(),
            prefix.join("bin/pi-hooks").display()
        )),
        "{text}"
    );
    run_ok(
        Command::new(&cmake).arg("--build").arg(&build),
        "cmake --build",
    );
    assert_eq!(
        inspect(&s, &prefix, &build.join("libredact_aws_keys.so")),
        ("redact-aws-keys".to_owned(), abi())
    );
    assert_eq!(
        inspect(&s, &prefix, &build.join("libbang_stats.so")),
        ("bang-stats".to_owned(), abi())
    );
    // A newer major than installed is refused by the version file.
    std::fs::write(
        src.join("CMakeLists.txt"),
        CMAKE_LISTS.replace(
            "find_package(pi-hooks 0.1 REQUIRED)",
            "find_package(pi-hooks 9 REQUIRED)",
        ),
    )
    .unwrap();
    let refused = Command::new(&cmake)
        .arg("-S")
        .arg(&src)
        .arg("-B")
        .arg(s.root().join("build9"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display()))
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("compatible with requested version \"9\"")
            && stderr.contains(&format!("version: {}", env!("CARGO_PKG_VERSION"))),
        "{stderr}"
    );
}
