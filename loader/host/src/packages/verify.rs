//! Checks on a package before anything of it is used: its signature (over every file), the
//! library for this platform, its SHA-256, its ABI and the host version the package needs.
//! Nothing here runs plugin code.

use std::path::{Path, PathBuf};

use super::manifest::{Library, PackageJson, parse_version};

/// The SHA-256 of `bytes`, lower-case hex (the trust store's).
pub use crate::plugin_files::trust::sha256_hex;

pub use super::signature::{Layout, Signer};

/// Verifies the signature of `package`, whose files are in `root` laid out as `layout` says
/// (an unpacked archive, or an installed folder whose `node_modules/` is passed over), if it
/// has one: `Ok(None)` for an unsigned package, the signer when its `pi-hooks.sig` signs the
/// package's npm name, version and every file in `root` (see
/// [`super::signature::verify_package`]). An added, removed or changed file, or an
/// old-format signature, is an error saying what to do. Whether that key is the one the user
/// pinned is the installer's question.
pub fn verify_signature(
    package: &PackageJson,
    root: &Path,
    layout: Layout,
    what: &str,
) -> Result<Option<Signer>, String> {
    super::signature::verify_package(package, root, layout, what)
}

/// The library of this package for `platform`, checked: its bytes (read from `root`) match
/// the manifest's SHA-256, its ABI is one this host speaks, and the package's
/// `minHostVersion` is not newer than this host.
pub struct Chosen {
    /// The platform name.
    pub platform: String,
    /// The manifest's entry.
    pub library: Library,
    /// The library's file.
    pub path: PathBuf,
}

/// The manifest's library for `platform`, checked without reading it: the package's
/// `minHostVersion` is not newer than this host, there is one for `platform` (else the
/// error lists the platforms there are), and its ABI is one this host speaks.
pub fn check_library(package: &PackageJson, platform: &str, what: &str) -> Result<Library, String> {
    let manifest = &package.manifest;
    let host = parse_version(super::HOST_VERSION, 3).unwrap_or_default();
    let needs = parse_version(&manifest.min_host_version, 3)?;
    if needs > host {
        return Err(format!(
            "{what} needs pi-hooks {} or newer, and this is pi-hooks {}; update pi-hooks first",
            manifest.min_host_version,
            super::HOST_VERSION
        ));
    }
    let Some(library) = manifest.libraries.get(platform) else {
        let there: Vec<&str> = manifest.libraries.keys().map(String::as_str).collect();
        return Err(format!(
            "{what} has no library for this platform ({platform}); it has: {}. Ask its publisher for a {platform} build",
            if there.is_empty() {
                "none".to_owned()
            } else {
                there.join(", ")
            }
        ));
    };
    let abi = parse_version(&library.abi, 2)?;
    let (major, minor) = (
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MAJOR as u64,
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MINOR as u64,
    );
    if abi.first() != Some(&major) || abi.get(1).copied().unwrap_or(0) > minor {
        return Err(format!(
            "{what}: its {platform} library {} was built for ABI {}, and this host speaks ABI {major}.{minor}; {}",
            library.path,
            library.abi,
            if abi.first() > Some(&major) || abi.get(1).copied().unwrap_or(0) > minor {
                "update pi-hooks"
            } else {
                "ask its publisher to rebuild it"
            }
        ));
    }
    Ok(library.clone())
}

/// Picks and checks the library for `platform` (see [`Chosen`]).
pub fn choose_library(
    package: &PackageJson,
    root: &Path,
    platform: &str,
    what: &str,
) -> Result<Chosen, String> {
    let library = check_library(package, platform, what)?;
    let path = root.join(&library.path);
    let bytes = crate::plugin_files::files::read_regular(&path, super::archive::MAX_ENTRY_BYTES)
        .map_err(|e| format!("{what}: its library {} {e}", library.path))?;
    let actual = sha256_hex(&bytes);
    if actual != library.sha256.to_ascii_lowercase() {
        return Err(format!(
            "{what}: the bytes of its library {} do not match the manifest's SHA-256 ({actual}, the manifest says {}); the package is damaged or was tampered with. Do not install it; get it again from its publisher",
            library.path, library.sha256
        ));
    }
    // What the library says of itself, read from its bytes (nothing of it runs): a plugin at
    // all, the plugin the manifest names, for an ABI this host speaks.
    let file = crate::library::info::read_file_info(&bytes)
        .map_err(|e| format!("{what}: its library {} {e}", library.path))?;
    if !file.has_entry {
        return Err(format!(
            "{what}: its library {} does not export {} and is not a pi-hooks plugin; the package was assembled wrongly, ask its publisher",
            library.path,
            pi_hooks_abi::ENTRY_SYMBOL
        ));
    }
    let manifest = &package.manifest;
    let (major, minor) = (
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MAJOR as u64,
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MINOR as u64,
    );
    if let Some(info) = &file.info {
        if info.name != manifest.plugin.name {
            return Err(format!(
                "{what}: its library {} is the plugin {:?}, but the manifest names {:?}; the package was assembled wrongly, ask its publisher",
                library.path, info.name, manifest.plugin.name
            ));
        }
        if info.abi_major as u64 != major || info.abi_minor as u64 > minor {
            return Err(format!(
                "{what}: its library {} was built for ABI {} (the manifest says {}), and this host speaks ABI {major}.{minor}; update pi-hooks or ask its publisher to rebuild it",
                library.path,
                info.abi(),
                library.abi
            ));
        }
    }
    Ok(Chosen {
        platform: platform.to_owned(),
        library,
        path,
    })
}
