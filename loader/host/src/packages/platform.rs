//! Platform names (`linux-x64-gnu`, `darwin-arm64`, `win32-x64`...), the keys of a package's
//! `libraries` (DESIGN's names: Node's `os-cpu`, plus the C library on Linux, where a glibc
//! library does not load under musl; a Windows DLL loads the same whichever toolchain built
//! it, so it has no suffix): this host's, and a library's read from its file header (never by
//! running it).

use object::{Architecture, BinaryFormat, Object};

/// Every platform name a package's `libraries` may use.
pub const PLATFORMS: [&str; 8] = [
    "linux-x64-gnu",
    "linux-x64-musl",
    "linux-arm64-gnu",
    "linux-arm64-musl",
    "darwin-arm64",
    "darwin-x64",
    "win32-x64",
    "win32-arm64",
];

/// The platform this host was built for.
pub fn host_platform() -> &'static str {
    if cfg!(all(
        target_os = "linux",
        target_arch = "x86_64",
        target_env = "musl"
    )) {
        "linux-x64-musl"
    } else if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        "linux-x64-gnu"
    } else if cfg!(all(
        target_os = "linux",
        target_arch = "aarch64",
        target_env = "musl"
    )) {
        "linux-arm64-musl"
    } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
        "linux-arm64-gnu"
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        "darwin-arm64"
    } else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
        "darwin-x64"
    } else if cfg!(all(target_os = "windows", target_arch = "x86_64")) {
        "win32-x64"
    } else if cfg!(all(target_os = "windows", target_arch = "aarch64")) {
        "win32-arm64"
    } else {
        "unknown"
    }
}

/// The platform a library was built for, read from its header (ELF, Mach-O or PE). A Linux
/// library that needs musl's libc is `-musl`, any other `-gnu`.
pub fn library_platform(bytes: &[u8]) -> Result<String, String> {
    let file = object::File::parse(bytes)
        .map_err(|e| format!("is not a library this host can read ({e})"))?;
    let arch = match file.architecture() {
        Architecture::X86_64 => "x64",
        Architecture::Aarch64 => "arm64",
        other => {
            return Err(format!(
                "is built for {other:?}, which pi-hooks has no platform name for"
            ));
        }
    };
    Ok(match file.format() {
        BinaryFormat::Elf => {
            // musl's loader is a DT_NEEDED `libc.musl-<arch>.so.1`. The needle is built at run
            // time so that this host's own file does not contain it.
            let needle = [&b"libc.musl"[..], b"-"].concat();
            let musl = bytes.windows(needle.len()).any(|w| w == needle);
            format!("linux-{arch}-{}", if musl { "musl" } else { "gnu" })
        }
        BinaryFormat::MachO => format!("darwin-{arch}"),
        BinaryFormat::Pe => format!("win32-{arch}"),
        other => return Err(format!("is a {other:?} file, not a shared library")),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_test_binary_is_of_the_host_platform() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        // The libc part is left out: a test binary links crates that mention musl's name.
        let os_arch = |p: &str| p.split('-').take(2).collect::<Vec<_>>().join("-");
        assert_eq!(
            os_arch(&super::library_platform(&exe).unwrap()),
            os_arch(super::host_platform())
        );
        assert!(super::library_platform(b"not a library").is_err());
    }
}
