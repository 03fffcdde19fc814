//! Checks on a package before anything of it is used: its signature (over every file), the
//! library for this platform, its SHA-256, its ABI and the host version the package needs.
//! Nothing here runs plugin code.

use std::path::{Path, PathBuf};

use super::manifest::{Library, PackageJson, parse_version};
use crate::guards::display::escape;

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

/// [`verify_signature`] of an installed package, remembered in `records` while its files
/// stay unchanged (see [`super::signature::verify_package_with`]).
pub fn verify_installed_signature(
    package: &PackageJson,
    root: &Path,
    records: &super::records::Records,
    what: &str,
) -> Result<Option<Signer>, String> {
    super::signature::verify_package_with(package, root, Layout::Installed, Some(records), what)
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
            escape(&manifest.min_host_version),
            super::HOST_VERSION
        ));
    }
    let Some(library) = manifest.libraries.get(platform) else {
        let there: Vec<String> = manifest
            .libraries
            .keys()
            .map(|k| escape(k).into_owned())
            .collect();
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
            escape(&library.path),
            escape(&library.abi),
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
        .map_err(|e| format!("{what}: its library {} {e}", escape(&library.path)))?;
    let actual = sha256_hex(&bytes);
    if actual != library.sha256.to_ascii_lowercase() {
        return Err(format!(
            "{what}: the bytes of its library {} do not match the manifest's SHA-256 ({actual}, the manifest says {}); the package is damaged or was tampered with. Do not install it; get it again from its publisher",
            escape(&library.path),
            library.sha256
        ));
    }
    // The machine it was built for, read from its header: the one its key names.
    let built_for = super::platform::library_platform(&bytes)
        .map_err(|e| format!("{what}: its library {} {e}", escape(&library.path)))?;
    if built_for != platform {
        return Err(format!(
            "{what}: its library {} is listed for {platform}, but it is built for {built_for}; the package was assembled wrongly, ask its publisher for a {platform} build",
            escape(&library.path)
        ));
    }
    // What the library says of itself, read from its bytes (nothing of it runs): a plugin at
    // all, the plugin the manifest names, for an ABI this host speaks.
    let info = plugin_info(&bytes, &package.manifest.plugin.name, &library.path, what)?;
    let (major, minor) = (
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MAJOR as u64,
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MINOR as u64,
    );
    if info.abi_major as u64 != major || info.abi_minor as u64 > minor {
        return Err(format!(
            "{what}: its library {} was built for ABI {} (the manifest says {}), and this host speaks ABI {major}.{minor}; update pi-hooks or ask its publisher to rebuild it",
            escape(&library.path),
            escape(&info.abi()),
            escape(&library.abi)
        ));
    }
    Ok(Chosen {
        platform: platform.to_owned(),
        library,
        path,
    })
}

/// What a package's library says of itself, read from its `bytes` (nothing of it runs): it
/// must be a pi-hooks plugin at all, carry an information block, and be the plugin `plugin`
/// its manifest names. `shown` is the library's path in the package, for messages. Checked at
/// install and at each load of a package pi installed (whose library pi-hooks never checked
/// at an install of its own).
pub fn plugin_info(
    bytes: &[u8],
    plugin: &str,
    shown: &str,
    what: &str,
) -> Result<pi_hooks_abi::info_block::PluginInfo, String> {
    let file = crate::library::info::read_file_info(bytes)
        .map_err(|e| format!("{what}: its library {} {e}", escape(shown)))?;
    if !file.has_entry {
        return Err(format!(
            "{what}: its library {} does not export {} and is not a pi-hooks plugin; the package was assembled wrongly, ask its publisher",
            escape(shown),
            pi_hooks_abi::ENTRY_SYMBOL
        ));
    }
    // The block is what says, before anything runs, which plugin the library is: without
    // one the library could load as any plugin.
    let Some(info) = file.info else {
        return Err(format!(
            "{what}: its library {} exports no {} block, so which plugin it is cannot be checked against the manifest's \"{}\" before it runs; ask its publisher to build it with PI_HOOKS_PLUGIN (or PI_HOOKS_PLUGIN_INFO, or the Rust SDK's plugin macro) and repack it",
            escape(shown),
            pi_hooks_abi::INFO_SYMBOL,
            escape(plugin)
        ));
    };
    if info.name != plugin {
        return Err(format!(
            "{what}: its library {} is the plugin \"{}\", but the manifest names \"{}\"; the package was assembled wrongly, ask its publisher",
            escape(shown),
            escape(&info.name),
            escape(plugin)
        ));
    }
    Ok(info)
}
