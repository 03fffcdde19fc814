//! One identity per plugin, and the one encoding everything keyed by it uses.
//!
//! A plugin from a package is its package: the package's name, validated once by npm's
//! naming rules ([`PackageName::parse`]), however it was installed (`.tgz`, folder, `npm:`,
//! `git:`). A plain library is its canonical path. Grants, `${data}`, install and first-seen
//! records and `sandbox` settings keys all use the [`PluginIdentity`], and every folder or
//! file named after one uses [`PluginIdentity::folder_name`]: a single path component that
//! two identities never share (a package's starts `package.`, a library's `library.`; a
//! valid package name never holds the `+` that stands for its `/`, and a library's carries
//! the SHA-256 of its path).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The longest package name npm accepts.
pub const MAX_PACKAGE_NAME: usize = 214;

/// A package's name, valid by npm's rules for new packages: lower-case ASCII letters,
/// digits, `-`, `_` and `.`, at most [`MAX_PACKAGE_NAME`] characters, optionally scoped
/// (`@scope/name`), neither part starting with `.` or `_`, and not one of npm's reserved
/// names. So it is also a safe file name once its `/` is replaced ([`Self::folder_name`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PackageName(String);

impl PackageName {
    /// Parses `name`; the error says which rule it breaks and what to do.
    pub fn parse(name: &str) -> Result<PackageName, String> {
        let shown = crate::guards::display::escape(name);
        let fail = |why: &str| {
            Err(format!(
                "{shown:?} is not a valid package name: {why} (npm's naming rules: lower-case letters, digits, `-`, `_` and `.`, optionally `@scope/name`)"
            ))
        };
        if name.is_empty() {
            return fail("it is empty");
        }
        if name.len() > MAX_PACKAGE_NAME {
            return fail("it is longer than 214 characters");
        }
        let parts: Vec<&str> = match name.strip_prefix('@') {
            Some(scoped) => match scoped.split_once('/') {
                Some((scope, rest)) if !rest.contains('/') => vec![scope, rest],
                _ => return fail("a scoped name is `@scope/name`, with one `/`"),
            },
            None => vec![name],
        };
        for part in parts {
            if part.is_empty() {
                return fail("a part of it is empty");
            }
            if part.starts_with('.') || part.starts_with('_') {
                return fail("it starts with `.` or `_`");
            }
            if let Some(c) = part
                .chars()
                .find(|c| !matches!(c, 'a'..='z' | '0'..='9' | '-' | '_' | '.'))
            {
                return fail(&if c.is_ascii_uppercase() {
                    "it has an upper-case letter".to_owned()
                } else {
                    format!(
                        "it has the character {:?}",
                        crate::guards::display::escape(&c.to_string())
                    )
                });
            }
        }
        if matches!(name, "node_modules" | "favicon.ico") {
            return fail("npm reserves it");
        }
        Ok(PackageName(name.to_owned()))
    }

    /// The name as npm writes it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// One path component for this name: `@scope/name` becomes `@scope+name` (a valid name
    /// has no `+`, so no two names share one), `name` stays `name`.
    pub fn folder_name(&self) -> String {
        self.0.replace('/', "+")
    }
}

impl fmt::Display for PackageName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TryFrom<String> for PackageName {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        PackageName::parse(&name)
    }
}

impl From<PackageName> for String {
    fn from(name: PackageName) -> String {
        name.0
    }
}

/// Who a plugin is, for everything keyed by plugin.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PluginIdentity {
    /// The plugin of an installed package.
    Package(PackageName),
    /// A plain library file, by its canonical path.
    Library(PathBuf),
}

impl PluginIdentity {
    /// The identity of the plain library at `path`: its canonical path (the path as given
    /// when it cannot be resolved).
    pub fn library(path: &Path) -> PluginIdentity {
        PluginIdentity::Library(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()))
    }

    /// One path component no other identity shares: `package.@acme+gate`, or
    /// `library.<file stem>.<first 32 hex digits of the SHA-256 of the canonical path>`.
    pub fn folder_name(&self) -> String {
        match self {
            PluginIdentity::Package(name) => format!("package.{}", name.folder_name()),
            PluginIdentity::Library(path) => {
                let digest =
                    crate::plugin_files::trust::sha256_hex(path.as_os_str().as_encoded_bytes());
                let stem: String = path
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default()
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .take(48)
                    .collect();
                format!("library.{stem}.{}", &digest[..32])
            }
        }
    }

    /// The plugin's own folder, `${data}` in its grant: `<agentDir>/pi-hooks/data/<folder
    /// name>`.
    pub fn data_dir(&self, agent_dir: &Path) -> PathBuf {
        agent_dir
            .join("pi-hooks")
            .join("data")
            .join(self.folder_name())
    }

    /// The package's name, for a package.
    pub fn package(&self) -> Option<&PackageName> {
        match self {
            PluginIdentity::Package(name) => Some(name),
            PluginIdentity::Library(_) => None,
        }
    }
}

impl fmt::Display for PluginIdentity {
    /// `package @acme/gate` or `library /abs/path/libgate.so`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginIdentity::Package(name) => write!(f, "package {name}"),
            PluginIdentity::Library(path) => write!(f, "library {}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_follow_npm_rules() {
        for good in ["mk", "@acme/gate", "protected-paths", "a.b_c-1", "@a1/b.c"] {
            assert_eq!(PackageName::parse(good).unwrap().as_str(), good);
        }
        for bad in [
            "",
            "@acme gate",
            "@acme+gate",
            "Gate",
            ".lock",
            "_x",
            "@acme/.x",
            ".",
            "..",
            "a/b",
            "@acme/",
            "@/x",
            "@a/b/c",
            "x\u{1b}[2J",
            "node_modules",
            "é",
        ] {
            assert!(PackageName::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let e = PackageName::parse("x\u{1b}[31m").unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
        assert!(PackageName::parse(&"a".repeat(215)).is_err());
    }

    #[test]
    fn folder_names_never_collide() {
        let names = ["@acme/gate", "acme-gate", "gate", "@acme/gate.x"];
        let mut folders: Vec<String> = names
            .iter()
            .map(|n| PluginIdentity::Package(PackageName::parse(n).unwrap()).folder_name())
            .collect();
        folders.push(PluginIdentity::Library(PathBuf::from("/p/gate.so")).folder_name());
        folders.push(PluginIdentity::Library(PathBuf::from("/q/gate.so")).folder_name());
        let unique: std::collections::HashSet<_> = folders.iter().collect();
        assert_eq!(unique.len(), folders.len(), "{folders:?}");
        assert_eq!(folders[0], "package.@acme+gate");
        assert!(
            folders
                .iter()
                .all(|f| !f.contains('/') && f != "." && f != "..")
        );
        assert!(folders[4].starts_with("library.gate."));
    }
}
