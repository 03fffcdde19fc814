//! A package's signature: a statement of the package's name, version and every file it holds
//! with the file's SHA-256, signed with minisign, in the package's file [`SIGNATURE_FILE`].
//!
//! The statement ([`Statement`]) is compact JSON:
//! `{"format":"pi-hooks-package/1","name":"mk","version":"1.0.0","files":{"lib/linux-x64-gnu/libmk.so":"<sha256>","package.json":"<sha256>","pi-extension.js":"<sha256>"}}`
//! covering `package.json` in full (so npm's `name` and `version`, the dependencies, the
//! manifest and the signer's `piHooks.publicKey`), the `pi-extension.js` `pi-hooks pack`
//! writes, the libraries and every other file; only [`SIGNATURE_FILE`] itself is left out.
//! [`SIGNATURE_FILE`] is minisign's text format: the signature of the statement's bytes, with
//! the statement itself as the trusted comment (so `minisign -V` can check it too, and the
//! verifier can say which file differs).
//!
//! The verifier rebuilds the file list from the files actually present ([`package_files`]):
//! a file added, removed or changed after signing is refused by name. In an unpacked archive
//! ([`Layout::Packed`]) every file counts; in an installed package's folder
//! ([`Layout::Installed`]) what npm and git add that is not the package is passed over
//! ([`NOT_THE_PACKAGE`]: `node_modules/`, where npm puts the package's dependencies, which the
//! signature does not cover; `.git/`; the `package-lock.json` npm writes after a clone).
//! Nothing here runs plugin code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::archive::Limits;
use super::manifest::PackageJson;
use crate::guards::display::escape;
use crate::plugin_files::files::FileIdentity;
use crate::plugin_files::trust::sha256_hex;

/// The file in a package that holds its signature (minisign's text format).
pub const SIGNATURE_FILE: &str = "pi-hooks.sig";

/// The `format` of a [`Statement`] this host writes and reads.
pub const STATEMENT_FORMAT: &str = "pi-hooks-package/1";

/// Names at the top of a package's folder that are not the package and that the statement
/// neither covers nor is refused for: npm's `node_modules/` (the package's dependencies, not
/// covered by its signature), git's `.git/`, the `package-lock.json` npm writes when it
/// installs a cloned package's dependencies, and pi-hooks' own install record.
pub const NOT_THE_PACKAGE: [&str; 4] = [
    "node_modules",
    ".git",
    "package-lock.json",
    super::store::RECORD_FILE,
];

/// Where a package's files are, which says what in its folder is the package.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// An unpacked archive (a `.tgz`, or what `install` copied of a folder or repository
    /// before anything ran in it): every file but [`SIGNATURE_FILE`] is the package.
    Packed,
    /// A package's folder after npm or git installed it (or any folder given): the
    /// [`NOT_THE_PACKAGE`] names at its top are passed over.
    Installed,
}

/// The largest signature file read (the statement lists every file: 10,000 files fit).
pub const MAX_SIGNATURE_BYTES: u64 = 4 << 20;

/// Who signed a package: the minisign public key (base64) its signature verified against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signer {
    /// The public key, minisign's base64 form (the second line of a `.pub` file).
    pub public_key: String,
}

/// The files of a package: path (relative, `/`-separated) to SHA-256 (lower-case hex).
pub type PackageFiles = BTreeMap<String, String>;

/// What a signature says: the package's npm name and version and every file's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement {
    /// [`STATEMENT_FORMAT`].
    pub format: String,
    /// npm's `name`.
    pub name: String,
    /// npm's `version`.
    pub version: String,
    /// Every file of the package but [`SIGNATURE_FILE`], with its SHA-256.
    pub files: PackageFiles,
}

impl Statement {
    /// The statement of package `name` `version` holding `files`.
    pub fn new(name: &str, version: &str, files: PackageFiles) -> Statement {
        Statement {
            format: STATEMENT_FORMAT.to_owned(),
            name: name.to_owned(),
            version: version.to_owned(),
            files,
        }
    }

    /// The bytes signed: the statement's compact JSON (one line; it is also minisign's
    /// trusted comment).
    pub fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The files of the package in the folder `root` with their SHA-256: every regular file
/// below it, but [`SIGNATURE_FILE`] (and, for [`Layout::Installed`], the [`NOT_THE_PACKAGE`]
/// names) at the top. A link or
/// special file, a name that is not UTF-8, more than `limits.entries` files or folders, a file
/// over `limits.entry_bytes` or all over `limits.package_bytes` is an error naming it.
pub fn package_files(
    root: &Path,
    layout: Layout,
    limits: Limits,
    what: &str,
) -> Result<PackageFiles, String> {
    let mut files = PackageFiles::new();
    let mut total = 0u64;
    walk(root, layout, limits, what, |path, entry| {
        let bytes = crate::plugin_files::files::read_regular(&entry.path(), limits.entry_bytes)
            .map_err(|e| format!("{what}: its file {} {e}", escape(path)))?;
        total += bytes.len() as u64;
        if total > limits.package_bytes {
            return Err(format!(
                "{what} is over the limit of {} bytes for a package",
                limits.package_bytes
            ));
        }
        files.insert(path.to_owned(), sha256_hex(&bytes));
        Ok(())
    })?;
    Ok(files)
}

/// The identity (device, inode, size, times) of every file [`package_files`] would hash,
/// read with `stat` alone: what tells an unchanged package from a changed one without
/// reading it.
fn package_identities(
    root: &Path,
    layout: Layout,
    what: &str,
) -> Result<BTreeMap<String, FileIdentity>, String> {
    let mut identities = BTreeMap::new();
    walk(root, layout, Limits::from_env(), what, |path, entry| {
        let identity = entry
            .metadata()
            .ok()
            .as_ref()
            .and_then(FileIdentity::of)
            .ok_or_else(|| format!("{what}: cannot read the state of {}", escape(path)))?;
        identities.insert(path.to_owned(), identity);
        Ok(())
    })?;
    Ok(identities)
}

/// Calls `file` with the relative path and entry of every regular file of the package in
/// `root` (see [`package_files`] for what is passed over and what is refused).
fn walk(
    root: &Path,
    layout: Layout,
    limits: Limits,
    what: &str,
    mut file: impl FnMut(&str, &std::fs::DirEntry) -> Result<(), String>,
) -> Result<(), String> {
    let mut count = 0usize;
    let mut stack = vec![(PathBuf::new(), String::new())];
    while let Some((relative, prefix)) = stack.pop() {
        let dir = root.join(&relative);
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| format!("{what}: cannot read the folder {}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{what}: cannot read {}: {e}", dir.display()))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                return Err(format!(
                    "{what}: the file name {}{} is not UTF-8; a package's files have UTF-8 names. Do not use it; get it again from its publisher",
                    escape(&prefix),
                    escape(&name.to_string_lossy())
                ));
            };
            if prefix.is_empty()
                && (name == SIGNATURE_FILE
                    || layout == Layout::Installed && NOT_THE_PACKAGE.contains(&name))
            {
                continue;
            }
            let path = format!("{prefix}{name}");
            count += 1;
            if count > limits.entries {
                return Err(format!(
                    "{what} has more than {} files and folders, the most a package may have",
                    limits.entries
                ));
            }
            let kind = entry
                .file_type()
                .map_err(|e| format!("{what}: {}: {e}", escape(&path)))?;
            if kind.is_dir() {
                stack.push((relative.join(name), format!("{path}/")));
            } else if kind.is_file() {
                file(&path, &entry)?;
            } else {
                return Err(format!(
                    "{what}: {} is a link or a special file; a package holds only regular files and folders. Do not use it; get it again from its publisher",
                    escape(&path)
                ));
            }
        }
    }
    Ok(())
}

/// That a package's signature was verified: the key and signature, and the identity of
/// every file then. Kept under the agent directory (`verified/` of the scope's records), so
/// a package unchanged since is not hashed and verified again at every start.
#[derive(Serialize, Deserialize, PartialEq, Eq)]
struct Checked {
    public_key: String,
    signature_sha256: String,
    files: BTreeMap<String, FileIdentity>,
}

/// Authenticates `signature` (the text of a [`SIGNATURE_FILE`]) against the minisign public
/// key `public_key` (base64) and returns the statement it signs. `what` names the package in
/// errors. Reads no file: the check of the statement against a folder is [`check_statement`].
pub fn open_signature(signature: &str, public_key: &str, what: &str) -> Result<Statement, String> {
    let public = minisign_verify::PublicKey::from_base64(public_key.trim()).map_err(|e| {
        format!("{what}: its `piHooks.publicKey` is not a minisign public key ({e}); do not use it, ask its publisher to repack it with `pi-hooks pack --sign`")
    })?;
    let decoded = minisign_verify::Signature::decode(signature).map_err(|e| {
        format!("{what}: its {SIGNATURE_FILE} is not a minisign signature ({e}); do not use it, ask its publisher to repack it with `pi-hooks pack --sign`")
    })?;
    let text = decoded.trusted_comment().to_owned();
    public.verify(text.as_bytes(), &decoded, false).map_err(|e| {
        format!(
            "{what}: its {SIGNATURE_FILE} does not verify against its public key ({e}); the package was changed after it was signed. Do not use it; get it again from its publisher"
        )
    })?;
    let statement: Statement = serde_json::from_str(&text).map_err(|e| {
        format!("{what}: its {SIGNATURE_FILE} signs no package statement this pi-hooks reads ({e}); update pi-hooks, or ask its publisher to repack it with `pi-hooks pack --sign`")
    })?;
    if statement.format != STATEMENT_FORMAT {
        return Err(format!(
            "{what}: its {SIGNATURE_FILE} is of the format {}, and this pi-hooks reads {STATEMENT_FORMAT}; update pi-hooks",
            escape(&statement.format)
        ));
    }
    Ok(statement)
}

/// Checks the signed `statement` against the package as it is: npm's `name` and `version`
/// from its `package.json`, and `files` (from [`package_files`]). The error names each file
/// added, removed or changed since signing (the first few) and what to do.
pub fn check_statement(
    statement: &Statement,
    name: &str,
    version: &str,
    files: &PackageFiles,
    what: &str,
) -> Result<(), String> {
    let mut problems = Vec::new();
    if statement.name != name || statement.version != version {
        problems.push(format!(
            "package.json says {} {}, but the signature is for {} {}",
            escape(name),
            escape(version),
            escape(&statement.name),
            escape(&statement.version)
        ));
    }
    for (path, sha256) in files {
        match statement.files.get(path) {
            None => problems.push(format!(
                "{} was added after it was signed (the signature does not cover it)",
                escape(path)
            )),
            Some(signed) if signed != sha256 => problems.push(format!(
                "{} was changed after it was signed (SHA-256 {sha256}, signed {})",
                escape(path),
                escape(signed)
            )),
            Some(_) => {}
        }
    }
    for path in statement.files.keys() {
        if !files.contains_key(path) {
            problems.push(format!("{} was signed but is missing", escape(path)));
        }
    }
    if problems.is_empty() {
        return Ok(());
    }
    const SHOWN: usize = 5;
    let more = problems.len().saturating_sub(SHOWN);
    problems.truncate(SHOWN);
    let mut list = problems.join("; ");
    if more > 0 {
        list.push_str(&format!("; and {more} more"));
    }
    Err(format!(
        "{what} does not match its signature: {list}. Do not use it; get it again from its publisher (if you changed it yourself, repack and sign it with `pi-hooks pack --sign KEY`)"
    ))
}

/// Verifies the signature of `package`, whose files are in `root` laid out as `layout` says:
/// `Ok(None)` for an unsigned
/// package (no [`SIGNATURE_FILE`], no `piHooks.publicKey`), `Ok(Some(signer))` when the
/// signature verifies against the public key in its `package.json` and the statement it signs
/// names the package's npm name and version and exactly the files in `root`
/// ([`package_files`]). A signature of the old format (`piHooks.signature` over the manifest
/// only) is refused with what to do. Whether the signer is the one the user pinned is the
/// caller's question.
pub fn verify_package(
    package: &PackageJson,
    root: &Path,
    layout: Layout,
    what: &str,
) -> Result<Option<Signer>, String> {
    verify_package_with(package, root, layout, None, what)
}

/// [`verify_package`], remembering in `records` (under the agent directory) that an installed
/// package's signature verified, with the identity of each of its files then: while no file
/// was added, removed or changed since (any write moves a file's ctime, which only root can
/// set back), the package is taken as verified without hashing its files or checking the
/// signature again. A file changed less than two seconds before the check is never
/// remembered.
pub fn verify_package_with(
    package: &PackageJson,
    root: &Path,
    layout: Layout,
    records: Option<&super::records::Records>,
    what: &str,
) -> Result<Option<Signer>, String> {
    if package.old_signature {
        return Err(format!(
            "{what} is signed in the old format (`piHooks.signature` in package.json, over the manifest only), which this pi-hooks refuses: it leaves the package's other files unsigned. Ask its publisher to repack it with this pi-hooks (`pi-hooks pack --sign KEY`), which signs every file in {SIGNATURE_FILE}"
        ));
    }
    let path = root.join(SIGNATURE_FILE);
    let signature = match crate::plugin_files::files::read_regular(&path, MAX_SIGNATURE_BYTES) {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| {
            format!("{what}: its {SIGNATURE_FILE} is not text; do not use it, get it again from its publisher")
        })?),
        Err(crate::plugin_files::files::ReadError::NotFound) => None,
        Err(e) => return Err(format!("{what}: its {SIGNATURE_FILE} {e}")),
    };
    let (signature, key) = match (signature, package.public_key.as_deref()) {
        (None, None) => return Ok(None),
        (None, Some(_)) => {
            return Err(format!(
                "{what} names a signer (`piHooks.publicKey` in package.json) but its signature file {SIGNATURE_FILE} is missing; do not use it, get it again from its publisher"
            ));
        }
        (Some(_), None) => {
            return Err(format!(
                "{what} has a {SIGNATURE_FILE} but no public key (`piHooks.publicKey` in package.json); ask its publisher to repack it with `pi-hooks pack --sign KEY`"
            ));
        }
        (Some(signature), Some(key)) => (signature, key),
    };
    let remembered = records.map(|records| {
        let record_key = super::records::RecordKey::library(&root.join(SIGNATURE_FILE));
        let now = Checked {
            public_key: key.trim().to_owned(),
            signature_sha256: sha256_hex(signature.as_bytes()),
            files: package_identities(root, layout, what).unwrap_or_default(),
        };
        (records, record_key, now)
    });
    if let Some((records, record_key, now)) = &remembered
        && !now.files.is_empty()
        && records
            .read::<Checked>(super::records::Kind::Verified, record_key)
            .as_ref()
            == Some(now)
    {
        return Ok(Some(Signer {
            public_key: key.trim().to_owned(),
        }));
    }
    let mut statement = open_signature(&signature, key, what)?;
    let files = package_files(root, layout, Limits::from_env(), what)?;
    if layout == Layout::Installed {
        // What npm and git put there in an installed folder replaces what was signed there.
        statement.files.retain(|path, _| {
            let top = path.split('/').next().unwrap_or_default();
            !NOT_THE_PACKAGE.contains(&top)
        });
    }
    check_statement(
        &statement,
        package.name.as_str(),
        &package.version,
        &files,
        what,
    )?;
    if let Some((records, record_key, now)) = remembered
        && !now.files.is_empty()
        && now.files.values().all(super::verified::settled)
    {
        // A failure only means verifying again next time.
        let _ = records.write(super::records::Kind::Verified, &record_key, &now);
    }
    Ok(Some(Signer {
        public_key: key.trim().to_owned(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, files: &[(&str, &[u8])]) {
        for (path, bytes) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }

    #[test]
    fn lists_every_file_but_what_npm_and_git_add() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("package.json", b"{}"),
                ("lib/x/libmk.so", b"lib"),
                ("pi-extension.js", b"js"),
                ("node_modules/dep/index.js", b"dep"),
                (".git/HEAD", b"ref"),
                ("package-lock.json", b"{}"),
                (SIGNATURE_FILE, b"sig"),
                ("lib/node_modules/x.js", b"covered"),
            ],
        );
        let installed = Layout::Installed;
        let files = package_files(dir.path(), installed, Limits::default(), "package mk").unwrap();
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "lib/node_modules/x.js",
                "lib/x/libmk.so",
                "package.json",
                "pi-extension.js"
            ]
        );
        assert_eq!(files["pi-extension.js"], sha256_hex(b"js"));
        // In an archive, a node_modules/ of its own is part of the package.
        let packed = package_files(dir.path(), Layout::Packed, Limits::default(), "mk").unwrap();
        assert!(packed.contains_key("node_modules/dep/index.js"));
        assert!(!packed.contains_key(SIGNATURE_FILE));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", dir.path().join("lib/link")).unwrap();
            let e =
                package_files(dir.path(), installed, Limits::default(), "package mk").unwrap_err();
            assert!(e.contains("lib/link is a link or a special file"), "{e}");
        }
        let limits = Limits {
            entries: 2,
            ..Limits::default()
        };
        let e = package_files(dir.path(), installed, limits, "package mk").unwrap_err();
        assert!(e.contains("more than 2 files"), "{e}");
    }

    #[test]
    fn a_statement_names_each_file_that_differs() {
        let mut signed = PackageFiles::new();
        signed.insert("package.json".into(), "a".repeat(64));
        signed.insert("pi-extension.js".into(), "b".repeat(64));
        signed.insert("lib/x.so".into(), "c".repeat(64));
        let statement = Statement::new("mk", "1.0.0", signed.clone());
        assert!(check_statement(&statement, "mk", "1.0.0", &signed, "package mk").is_ok());
        let mut now = signed.clone();
        now.insert("pi-extension.js".into(), "d".repeat(64));
        now.insert("evil.js".into(), "e".repeat(64));
        now.remove("lib/x.so");
        let e =
            check_statement(&statement, "payments-gate", "9.9.9", &now, "package mk").unwrap_err();
        for part in [
            "package.json says payments-gate 9.9.9, but the signature is for mk 1.0.0",
            "evil.js was added after it was signed",
            "pi-extension.js was changed after it was signed",
            "lib/x.so was signed but is missing",
            "pi-hooks pack --sign KEY",
        ] {
            assert!(e.contains(part), "{part}: {e}");
        }
        // The statement is one line of JSON, read back as written.
        let text = statement.to_text();
        assert!(!text.contains('\n'));
        assert_eq!(serde_json::from_str::<Statement>(&text).unwrap(), statement);
    }

    #[test]
    fn a_signature_that_is_not_minisign_is_refused_by_name() {
        let e = open_signature("garbage", "RWQ", "package mk").unwrap_err();
        assert!(e.contains("package mk"), "{e}");
    }
}
