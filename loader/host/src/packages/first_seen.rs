//! Packages pi installed (`pi install npm:...`, `git:...`, and brought up to date by
//! `pi update`), which pi-hooks never installed and so holds no install record of: what
//! pi-hooks saw of each the first time it loaded it stands for the user's acceptance, as an
//! install record does for a package pi-hooks installed.
//!
//! The first load records the package's version, signer and declared capabilities (the user
//! accepted them by installing it with pi) under the agent directory (`seen/` of the scope's
//! [`super::records::Records`]), never in the project or beside the package. A later version
//! (after `pi update`) loads only when it is signed by the same key and asks for nothing more
//! than that record grants; otherwise it is refused with what changed and the command that
//! accepts it (`pi-hooks update NAME --grant --yes` / `--accept-new-signer --yes`: `--yes`
//! so it works where no terminal can ask, [`accept`]), and pi's
//! other plugins load as usual.

use serde::{Deserialize, Serialize};

use super::manifest::{Capabilities, PackageJson};
use super::records::{Kind, RecordKey};
use super::store::Store;

/// What was seen of one package, and so accepted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// The package's name.
    pub name: String,
    /// The version last loaded.
    pub version: String,
    /// The signer's key (minisign, base64) pinned at the first load; `None`: unsigned then.
    pub signer: Option<String>,
    /// The capabilities granted (`None`: it asked for everything).
    pub capabilities: Option<Capabilities>,
}

/// The record of `name`, if pi-hooks has loaded it before.
pub fn read(store: &Store, name: &str) -> Option<Seen> {
    let key = RecordKey::package_named(name)?;
    store
        .records
        .read::<Seen>(Kind::Seen, &key)
        .filter(|seen| seen.name == name)
}

/// Writes the record of `seen` (atomically: a reader sees the old one or the new one).
pub fn write(store: &Store, seen: &Seen) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!(
            "cannot record what pi-hooks accepted of package {} in {}: {e}",
            crate::guards::display::escape(&seen.name),
            store.records.folder(Kind::Seen).display()
        )
    };
    let key = RecordKey::package_named(&seen.name)
        .ok_or_else(|| fail(&"it is not a valid package name"))?;
    store
        .records
        .write(Kind::Seen, &key, seen)
        .map_err(|e| fail(&e))
}

/// Checks `package` (signed by `signer`, described as `what` in messages) against what was
/// seen of it: the first time, records it; after that, a new signer or capabilities beyond
/// the recorded grant refuse it (`Err` says what and how to accept it). `Ok`: the
/// capabilities it runs confined to (its manifest's, within the grant).
pub fn check(
    store: &Store,
    package: &PackageJson,
    signer: Option<&str>,
    what: &str,
) -> Result<Option<Capabilities>, String> {
    let declared = package.manifest.capabilities.clone();
    let Some(seen) = read(store, package.name.as_str()) else {
        let first = Seen {
            name: package.name.to_string(),
            version: package.version.clone(),
            signer: signer.map(str::to_owned),
            capabilities: declared.clone(),
        };
        if let Err(e) = write(store, &first) {
            // It still loads, confined to what it declares; only a later version cannot be
            // compared with this one.
            eprintln!("pi-hooks: warning: {e}; it loads with what it declares");
        }
        return Ok(declared);
    };
    let flag = match store.scope {
        super::store::Scope::User => "",
        super::store::Scope::Project => " -l",
    };
    let changes = Changes::between(&seen, package, signer);
    if let Some(change) = changes.signer(what) {
        return Err(format!(
            "{change}; it was not loaded. If its publisher changed keys: `pi-hooks update {}{flag} --accept-new-signer --yes`",
            package.name
        ));
    }
    if let Some(change) = changes.capabilities(what) {
        return Err(format!(
            "{change}; it was not loaded. To grant it: `pi-hooks update {}{flag} --grant --yes`",
            package.name
        ));
    }
    if seen.version != package.version || seen.signer.is_none() && signer.is_some() {
        // Within the grant: the record follows the version (a key seen now is pinned).
        let _ = write(
            store,
            &Seen {
                version: package.version.clone(),
                signer: signer.map(str::to_owned),
                ..seen
            },
        );
    }
    Ok(declared)
}

/// How a package differs from what was accepted of it.
pub struct Changes<'a> {
    seen: &'a Seen,
    /// Its signer's key now.
    signer: Option<&'a str>,
    /// What it asks for beyond the grant, one line per capability.
    more: Vec<String>,
}

impl<'a> Changes<'a> {
    /// Compares `package`, signed by `signer`, with `seen`.
    pub fn between(seen: &'a Seen, package: &PackageJson, signer: Option<&'a str>) -> Self {
        Changes {
            seen,
            signer,
            more: crate::sandbox::grant::asks_for_more(
                seen.capabilities.as_ref(),
                package.manifest.capabilities.as_ref(),
            ),
        }
    }

    /// `what` was signed by another key than the one pinned (or is unsigned now), in words.
    pub fn signer(&self, what: &str) -> Option<String> {
        let pinned = self.seen.signer.as_deref()?;
        (self.signer != Some(pinned)).then(|| {
            format!(
                "{what} {}, not by the key {pinned} pinned when pi-hooks first loaded version {}",
                self.signer.map_or("is unsigned".to_owned(), |s| format!(
                    "is signed by key {s}"
                )),
                self.seen.version
            )
        })
    }

    /// `what` asks for more than was granted, in words.
    pub fn capabilities(&self, what: &str) -> Option<String> {
        (!self.more.is_empty()).then(|| {
            format!(
                "{what} asks for more than you granted {} {}: {}",
                self.seen.name,
                self.seen.version,
                self.more.join("; ")
            )
        })
    }
}

/// `pi-hooks update NAME --grant` / `--accept-new-signer` for a package pi installed:
/// records `package` as it is now (its signer and capabilities) as accepted.
pub fn accept(store: &Store, package: &PackageJson, signer: Option<&str>) -> Result<(), String> {
    write(
        store,
        &Seen {
            name: package.name.to_string(),
            version: package.version.clone(),
            signer: signer.map(str::to_owned),
            capabilities: package.manifest.capabilities.clone(),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packages::manifest::{Manifest, PluginMeta, Registers, package_json};
    use crate::packages::store::Scope;

    fn package(version: &str, capabilities: serde_json::Value) -> PackageJson {
        let manifest = Manifest {
            plugin: PluginMeta {
                name: "gate".into(),
                version: version.into(),
                description: String::new(),
                registers: Registers::default(),
            },
            libraries: Default::default(),
            capabilities: serde_json::from_value(capabilities).unwrap(),
            min_host_version: "0.1.0".into(),
        };
        let mut json = package_json(&manifest, "gate", None);
        json["version"] = version.into();
        crate::packages::manifest::parse_package_json(&serde_json::to_vec(&json).unwrap()).unwrap()
    }

    #[test]
    fn the_first_load_is_accepted_and_a_later_one_is_held_to_it() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(Scope::User, dir.path(), dir.path());
        let v1 = package("1.0.0", serde_json::json!({"read": ["~/x"]}));
        assert!(check(&store, &v1, Some("K1"), "package gate 1.0.0").is_ok());
        assert_eq!(read(&store, "gate").unwrap().signer.as_deref(), Some("K1"));
        // Another key: refused, naming both and the command.
        let e = check(&store, &v1, Some("K2"), "package gate 1.0.0").unwrap_err();
        assert!(
            e.contains("is signed by key K2, not by the key K1 pinned")
                && e.contains("`pi-hooks update gate --accept-new-signer --yes`"),
            "{e}"
        );
        let e = check(&store, &v1, None, "package gate 1.0.0").unwrap_err();
        assert!(e.contains("is unsigned, not by the key K1"), "{e}");
        // Asking for more: refused; asking for the same: accepted, the version follows.
        let v2 = package(
            "1.1.0",
            serde_json::json!({"read": ["~/x"], "network": true}),
        );
        let e = check(&store, &v2, Some("K1"), "package gate 1.1.0").unwrap_err();
        assert!(
            e.contains("asks for more than you granted gate 1.0.0: network")
                && e.contains("`pi-hooks update gate --grant --yes`"),
            "{e}"
        );
        let v3 = package("1.2.0", serde_json::json!({"read": ["~/x"]}));
        assert!(check(&store, &v3, Some("K1"), "package gate 1.2.0").is_ok());
        assert_eq!(read(&store, "gate").unwrap().version, "1.2.0");
        // Accepted: the new grant holds from now on.
        accept(&store, &v2, Some("K1")).unwrap();
        assert!(check(&store, &v2, Some("K1"), "package gate 1.1.0").is_ok());
    }
}
