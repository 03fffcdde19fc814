//! Builds the C++ exception barrier (`cxx/exception_barrier.cpp`) that every call into plugin
//! code goes through, against the committed `include/pi_hooks.h`.

fn main() {
    println!("cargo:rerun-if-changed=cxx/exception_barrier.cpp");
    println!("cargo:rerun-if-changed=include/pi_hooks.h");
    let static_stdlib = static_cxx_runtime();
    cc::Build::new()
        .cpp(true)
        .cpp_link_stdlib(if static_stdlib { None } else { Some("stdc++") })
        .std("c++17")
        .file("cxx/exception_barrier.cpp")
        .include("include")
        .warnings(true)
        .extra_warnings(true)
        .opt_level(2)
        .compile("pi_hooks_exception_barrier");
}

/// Links the C++ runtime statically where the toolchain has `libstdc++.a` (GCC on Linux): the
/// barrier needs only the exception-handling support, a few KiB, while the shared
/// `libstdc++.so` (and the `libm` it pulls in) would add over 1 MiB to every host's resident
/// memory. Elsewhere the `cc` crate's default C++ runtime is linked as usual.
fn static_cxx_runtime() -> bool {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return false;
    }
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let Ok(output) = std::process::Command::new(compiler.path())
        .arg("-print-file-name=libstdc++.a")
        .output()
    else {
        return false;
    };
    let path = std::path::PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let Some(dir) = path
        .parent()
        .filter(|_| path.is_absolute() && path.is_file())
    else {
        return false;
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static:-bundle=stdc++");
    true
}
