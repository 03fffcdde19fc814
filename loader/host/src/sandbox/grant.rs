//! A plugin's grant: what a confined plugin may do, resolved for this machine.
//!
//! A grant starts as [`Capabilities`] (a package's declared ones the user accepted at
//! install, or a `sandbox` entry of the user's settings.json) and is resolved here once, in
//! the host: `${cwd}`, `${home}`, `${tmp}` and `${data}` (a folder of the plugin's own under
//! the agent directory) and a leading `~/` are expanded, each program of `exec` is found
//! (through [`search_path`] when it has no `/`: the `PATH` the confined child runs with
//! too). A `write` folder that does not exist yet is made (mode 0700) when the plugin's
//! child starts ([`Grant::make_write_folders`]), so the plugin can use it: a Landlock rule
//! can only name a file that exists. A `write` entry meant as a file that does not exist
//! yet is made a folder too: grant its folder instead. The resolved [`Grant`] is what the
//! `serve` child is confined to and what the host checks the child's requests against.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::identity::PluginIdentity;
use crate::packages::manifest::{Capabilities, Network};

/// The folders a grant's variables stand for.
#[derive(Debug, Clone)]
pub struct Folders {
    /// `${cwd}`: the session's working directory.
    pub cwd: PathBuf,
    /// `${home}` and `~`: the user's home.
    pub home: PathBuf,
    /// `${tmp}`: the system's temporary folder.
    pub tmp: PathBuf,
    /// The agent directory; `${data}` is `<agentDir>/pi-hooks/data/<identity's folder name>`.
    pub agent_dir: PathBuf,
}

/// A resolved grant: exactly what a confined plugin may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    /// The plugin's name as the grant names it (a package's name, a settings key).
    pub plugin: String,
    /// Where the grant comes from, for messages (`package gate 1.0.0`,
    /// `/home/u/.pi/agent/settings.json`).
    pub source: String,
    /// Files and folders it may read (a folder: everything beneath it).
    pub read: Vec<PathBuf>,
    /// Files and folders it may read and write.
    pub write: Vec<PathBuf>,
    /// The network it may reach (TCP and UDP sockets): none, any, or named hosts.
    pub network: Network,
    /// The programs it may run, as granted (`git`, `/usr/bin/jq`).
    pub exec: Vec<String>,
    /// The same programs found on this machine (those not found are left out).
    pub exec_paths: Vec<PathBuf>,
    /// Address space it may add beyond what its `serve` process held at start, MiB.
    pub memory_mib: Option<u64>,
    /// The folder `${data}` stands for: the plugin's own
    /// ([`crate::identity::PluginIdentity::data_dir`]), what its `data_dir` answers.
    #[serde(default)]
    pub data: PathBuf,
}

impl Grant {
    /// Resolves `capabilities` for the plugin `identity`, named `plugin` in messages (a
    /// package's name, a settings key). `${data}` is `identity`'s own folder
    /// ([`PluginIdentity::data_dir`] under `folders.agent_dir`), so no two identities share
    /// one. `Err` names the entry that cannot be used and what to write instead.
    pub fn resolve(
        capabilities: &Capabilities,
        plugin: &str,
        identity: &PluginIdentity,
        source: &str,
        folders: &Folders,
    ) -> Result<Grant, String> {
        // The rules of a package's capabilities at install hold here too, whoever wrote them
        // (a package pi installed, a record, the user's `sandbox` settings).
        let capabilities = &capabilities
            .checked()
            .map_err(|e| format!("{source}: {plugin}'s {e}"))?;
        let data = identity.data_dir(&folders.agent_dir);
        let expand_all = |key: &str, entries: &[String]| -> Result<Vec<PathBuf>, String> {
            entries
                .iter()
                .map(|entry| {
                    expand(entry, folders, &data)
                        .map_err(|e| format!("{source}: `{key}` entry {entry:?} of {plugin}: {e}"))
                })
                .collect()
        };
        let read = expand_all("read", &capabilities.read)?;
        let write = expand_all("write", &capabilities.write)?;
        let mut exec_paths = Vec::new();
        for program in &capabilities.exec {
            if program.trim().is_empty() {
                return Err(format!(
                    "{source}: an empty `exec` entry of {plugin}; name a program (such as \"git\")"
                ));
            }
            let found =
                if program.contains('/') || program.contains('$') || program.starts_with('~') {
                    let path = expand(program, folders, &data).map_err(|e| {
                        format!("{source}: `exec` entry {program:?} of {plugin}: {e}")
                    })?;
                    path.is_file().then_some(path)
                } else {
                    find_in_path(program, Some(&search_path()))
                };
            if let Some(path) = found {
                exec_paths.push(std::fs::canonicalize(&path).unwrap_or(path));
            }
        }
        if capabilities.write.iter().any(|w| w.contains("${data}"))
            || capabilities.read.iter().any(|r| r.contains("${data}"))
        {
            // The plugin's own folder exists before it starts, so a rule can name it
            // (mode 0700, a symlink in its place refused; its `data_dir` then fails).
            if let Err(why) = crate::plugin::own::ensure_data_dir(&data) {
                eprintln!(
                    "pi-hooks: warning: {source}: ${{data}} of {plugin}: {}",
                    crate::guards::display::escape(&why)
                );
            }
        }
        Ok(Grant {
            plugin: plugin.to_owned(),
            source: source.to_owned(),
            read,
            write,
            network: capabilities.network.clone(),
            exec: capabilities.exec.clone(),
            exec_paths,
            memory_mib: capabilities.memory_mib,
            data,
        })
    }

    /// The grant in the words of a message: `read: ~/x; write: nothing; network: no; ...`.
    pub fn summary(&self) -> String {
        let paths = |items: &[PathBuf]| {
            if items.is_empty() {
                "nothing".to_owned()
            } else {
                items
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let mut text = format!(
            "read: {}; write: {}; network: {}; exec: {}",
            paths(&self.read),
            paths(&self.write),
            self.network.describe(),
            if self.exec.is_empty() {
                "nothing".to_owned()
            } else {
                self.exec.join(", ")
            }
        );
        if let Some(mib) = self.memory_mib {
            text.push_str(&format!("; memory: {mib} MiB"));
        }
        text
    }

    /// Whether the program `found` (already looked up, canonical or not) is one the grant
    /// names.
    pub fn allows_program(&self, found: &Path) -> bool {
        let found = std::fs::canonicalize(found).unwrap_or_else(|_| found.to_path_buf());
        self.exec_paths.contains(&found)
    }

    /// Whether `path` (absolute) lies in what the grant lets the plugin write (`write`) or
    /// read (`write` or `read`). The path is compared once `.` and `..` are taken out and,
    /// where it exists, once links are resolved.
    pub fn allows_path(&self, path: &Path, write: bool) -> bool {
        let lexical = normalize(path);
        let real = std::fs::canonicalize(path).ok();
        let inside = |roots: &[PathBuf]| {
            roots.iter().any(|root| {
                let root_real = std::fs::canonicalize(root).unwrap_or_else(|_| normalize(root));
                match &real {
                    Some(real) => real.starts_with(&root_real),
                    None => lexical.starts_with(&root_real) || lexical.starts_with(root),
                }
            })
        };
        inside(&self.write) || (!write && inside(&self.read))
    }
}

/// Expands the variables and a leading `~/` of one entry; the result must be absolute.
fn expand(entry: &str, folders: &Folders, data: &Path) -> Result<PathBuf, String> {
    let mut text = entry.to_owned();
    if text == "~" {
        text = "${home}".to_owned();
    } else if let Some(rest) = text.strip_prefix("~/") {
        text = format!("${{home}}/{rest}");
    }
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err("an unclosed `${`; write ${cwd}, ${home}, ${tmp} or ${data}".to_owned());
        };
        let folder = match &after[..end] {
            "cwd" => &folders.cwd,
            "home" => &folders.home,
            "tmp" => &folders.tmp,
            "data" => data,
            other => {
                return Err(format!(
                    "unknown variable ${{{other}}}; the variables are ${{cwd}}, ${{home}}, ${{tmp}} and ${{data}}"
                ));
            }
        };
        out.push_str(&folder.to_string_lossy());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    let path = PathBuf::from(out);
    if !path.is_absolute() {
        return Err(
            "not an absolute path; start it with /, ~/, ${cwd}, ${home}, ${tmp} or ${data}"
                .to_owned(),
        );
    }
    Ok(normalize(&path))
}

/// `path` with `.` and `..` taken out, without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The `PATH` a grant's programs are found through, and the one a confined child runs
/// with (`super::limits`): the host's own, its absolute folders only, or
/// `/usr/local/bin:/usr/bin:/bin` when it names none. One `PATH` for both, so a program
/// the grant names by name is the one the plugin finds (`execvp`) and may run.
pub fn search_path() -> std::ffi::OsString {
    let host = std::env::var_os("PATH").unwrap_or_default();
    let folders: Vec<PathBuf> = std::env::split_paths(&host)
        .filter(|dir| dir.is_absolute())
        .collect();
    if folders.is_empty() {
        return "/usr/local/bin:/usr/bin:/bin".into();
    }
    std::env::join_paths(folders).unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into())
}

impl Grant {
    /// Makes each `write` folder that does not exist yet (mode 0700), so a Landlock rule can
    /// name it and the plugin can use it (a rule needs a file to hold on to). Done by the
    /// host as it starts the plugin's child; what cannot be made is said on stderr (the
    /// plugin then cannot use that entry).
    pub fn make_write_folders(&self) {
        for path in &self.write {
            if let Err(why) = make_missing_folder(path) {
                eprintln!(
                    "pi-hooks: warning: {}: `write` entry {} of {}: {} (the plugin cannot use it)",
                    self.source,
                    crate::guards::display::escape(&path.display().to_string()),
                    self.plugin,
                    crate::guards::display::escape(&why)
                );
            }
        }
    }
}

/// Makes the granted write folder `path` (absolute, normalised) when nothing is there:
/// its missing folders, mode 0700, beneath the nearest one that exists, which must be a
/// folder and not a link (so nothing is made through a link a plugin could have placed).
/// Nothing is done when something is there already.
fn make_missing_folder(path: &Path) -> Result<(), String> {
    if std::fs::symlink_metadata(path).is_ok() {
        return Ok(());
    }
    let mut missing = vec![path];
    let mut ancestor = path.parent();
    while let Some(dir) = ancestor {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => {
                return Err(format!(
                    "{} is not a folder (a link or a file), so nothing is made beneath it",
                    dir.display()
                ));
            }
            Err(_) => {
                missing.push(dir);
                ancestor = dir.parent();
            }
        }
    }
    for dir in missing.into_iter().rev() {
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        match builder.create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make the folder {}: {e}", dir.display())),
        }
        if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            return Err(format!("{} is not a folder", dir.display()));
        }
    }
    Ok(())
}

/// The file `program` names through `PATH` (the first executable regular file).
pub fn find_in_path(program: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path = path?;
    std::env::split_paths(path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(program))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| is_program(&m)))
}

#[cfg(unix)]
fn is_program(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_program(meta: &std::fs::Metadata) -> bool {
    meta.is_file()
}

/// What `wanted` asks for beyond `granted`, one line per capability (empty: nothing more).
/// `None` (unrestricted) asks for everything.
pub fn asks_for_more(granted: Option<&Capabilities>, wanted: Option<&Capabilities>) -> Vec<String> {
    let Some(wanted) = wanted else {
        return match granted {
            None => Vec::new(),
            Some(_) => {
                vec!["everything: it no longer declares capabilities (unrestricted)".to_owned()]
            }
        };
    };
    let Some(granted) = granted else {
        return Vec::new();
    };
    let mut more = Vec::new();
    let new = |key: &str, old: &[String], now: &[String], more: &mut Vec<String>| {
        let added: Vec<&str> = now
            .iter()
            .filter(|item| !old.contains(item))
            .map(String::as_str)
            .collect();
        if !added.is_empty() {
            more.push(format!("{key}: {}", added.join(", ")));
        }
    };
    new("read", &granted.read, &wanted.read, &mut more);
    new("write", &granted.write, &wanted.write, &mut more);
    if !wanted.network.within(&granted.network) {
        more.push(format!("network: {}", wanted.network.describe()));
    }
    new("exec", &granted.exec, &wanted.exec, &mut more);
    match (granted.memory_mib, wanted.memory_mib) {
        (Some(old), Some(now)) if now > old => more.push(format!("memory: {now} MiB (was {old})")),
        (Some(old), None) => more.push(format!("memory: no limit (was {old} MiB)")),
        _ => {}
    }
    more
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folders() -> Folders {
        Folders {
            cwd: "/work/p".into(),
            home: "/home/u".into(),
            tmp: "/tmp".into(),
            agent_dir: "/home/u/.pi/agent".into(),
        }
    }

    fn gate() -> PluginIdentity {
        PluginIdentity::Package(crate::identity::PackageName::parse("gate").unwrap())
    }

    #[test]
    fn expands_variables_and_names_a_bad_entry() {
        let caps = Capabilities {
            read: vec!["${cwd}/src".into(), "~/notes".into()],
            write: vec!["${data}".into(), "${tmp}/x/../y".into()],
            ..Capabilities::default()
        };
        let grant = Grant::resolve(&caps, "gate", &gate(), "test", &folders()).unwrap();
        assert_eq!(
            grant.read,
            vec![PathBuf::from("/work/p/src"), PathBuf::from("/home/u/notes")]
        );
        assert_eq!(
            grant.write,
            vec![
                PathBuf::from("/home/u/.pi/agent/pi-hooks/data/package.gate"),
                PathBuf::from("/tmp/y")
            ]
        );
        let bad = Capabilities {
            read: vec!["${work}/x".into()],
            ..Capabilities::default()
        };
        let e = Grant::resolve(&bad, "gate", &gate(), "settings.json", &folders()).unwrap_err();
        assert!(e.contains("unknown variable ${work}"), "{e}");
        assert!(e.contains("`capabilities.read` entry"), "{e}");
        assert!(e.contains("settings.json"), "{e}");
        for (entry, why) in [
            ("${data}/../../..", "leaves ${data}"),
            ("${data}/..", "leaves ${data}"),
            ("~/..", "leaves ~"),
            ("${cwd}/*.rs", "glob"),
            ("", "is empty"),
            ("${home}/${tmp}", "a variable can only start"),
        ] {
            let caps = Capabilities {
                write: vec![entry.into()],
                ..Capabilities::default()
            };
            let e = Grant::resolve(&caps, "gate", &gate(), "s", &folders()).unwrap_err();
            assert!(
                e.contains(why) && e.contains("`capabilities.write`"),
                "{entry}: {e}"
            );
        }
        let empty = Capabilities {
            exec: vec![" ".into()],
            ..Capabilities::default()
        };
        let e = Grant::resolve(&empty, "gate", &gate(), "s", &folders()).unwrap_err();
        assert!(e.contains("`capabilities.exec` entry"), "{e}");
        let relative = Capabilities {
            write: vec!["out".into()],
            ..Capabilities::default()
        };
        let e = Grant::resolve(&relative, "gate", &gate(), "s", &folders()).unwrap_err();
        assert!(e.contains("not an absolute path"), "{e}");
        // `${data}` is the identity's folder: a library named like a package gets its own.
        let data = Capabilities {
            read: vec!["${data}/x".into()],
            ..Capabilities::default()
        };
        let agent = tempfile::tempdir().unwrap();
        let folders = Folders {
            agent_dir: agent.path().to_owned(),
            ..folders()
        };
        let package = Grant::resolve(&data, "gate", &gate(), "s", &folders).unwrap();
        let library = PluginIdentity::Library("/p/gate".into());
        let library = Grant::resolve(&data, "gate", &library, "s", &folders).unwrap();
        assert_eq!(
            package.data,
            agent.path().join("pi-hooks/data/package.gate")
        );
        assert!(package.data.is_dir() && library.data.is_dir());
        assert_ne!(package.data, library.data);
        assert_eq!(package.read, vec![package.data.join("x")]);
    }

    #[test]
    fn checks_paths_against_read_and_write() {
        let grant = Grant {
            plugin: "p".into(),
            source: "s".into(),
            read: vec!["/nowhere-r/a".into()],
            write: vec!["/nowhere-w/b".into()],
            network: Network::None,
            exec: vec![],
            exec_paths: vec![],
            memory_mib: None,
            data: PathBuf::new(),
        };
        assert!(grant.allows_path(Path::new("/nowhere-r/a/f"), false));
        assert!(!grant.allows_path(Path::new("/nowhere-r/a/f"), true));
        assert!(grant.allows_path(Path::new("/nowhere-w/b/c"), true));
        assert!(!grant.allows_path(Path::new("/nowhere-w/b/../c"), false));
        assert!(!grant.allows_path(Path::new("/nowhere-r/ab"), false));
    }

    #[test]
    fn an_update_that_asks_for_more_says_what() {
        let old = Capabilities {
            read: vec!["${cwd}".into()],
            memory_mib: Some(64),
            ..Capabilities::default()
        };
        assert!(asks_for_more(Some(&old), Some(&old)).is_empty());
        let wider = Capabilities {
            exec: vec!["curl".into()],
            network: Network::All,
            memory_mib: Some(128),
            ..old.clone()
        };
        assert_eq!(
            asks_for_more(Some(&old), Some(&wider)),
            vec!["network: yes", "exec: curl", "memory: 128 MiB (was 64)"]
        );
        assert_eq!(asks_for_more(Some(&old), None).len(), 1);
        assert!(asks_for_more(None, Some(&old)).is_empty());
    }
}
