//! Packages: compiled plugins distributed as npm-layout tarballs (`package/package.json` plus
//! files) that pi, pi-hooks and an embedding program all install the same way.
//!
//! One module per concern: [`manifest`] (the `piHooks` key of `package.json`: one library per
//! platform with its SHA-256 and ABI, the plugin's metadata, its declared capabilities, the
//! lowest host version, the signer's public key), [`signature`] (the signature over the package's
//! name, version and every file), [`platform`] (this host's platform name and a
//! library's, read from its header), [`archive`] (safe extraction of a tarball), [`verify`]
//! (SHA-256, minisign signature, ABI and host version checks), [`store`] (where pi-hooks keeps
//! installed packages, their install records, and `packages` in `settings.json`, written under
//! a lock and atomically), [`pi_sources`] (pi's `npm:`, `git:` and local sources and where pi
//! puts each), [`installed`] (the native packages `packages` lists, wherever they are) and
//! [`verified`] (the check of an installed library's bytes at each load, without hashing a
//! file unchanged since it last matched), and [`first_seen`] (what the user accepted of a
//! package pi installed: its signer and capabilities as pi-hooks first loaded it). Nothing here runs plugin code.

pub mod archive;
pub mod first_seen;
pub mod installed;
pub mod manifest;
pub mod pi_sources;
pub mod platform;
pub mod records;
pub mod signature;
pub mod store;
pub mod verified;
pub mod verify;

/// The version of this host, compared with a package's `minHostVersion`.
pub const HOST_VERSION: &str = env!("CARGO_PKG_VERSION");
