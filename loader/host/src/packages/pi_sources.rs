//! pi's package sources and where pi puts each (its `dist/core/package-manager.js`),
//! so that a package installed by pi or by pi-hooks is found by both:
//!
//! - `npm:NAME[@VERSION]`: for the user, pi 0.75 and later install it in
//!   `<agentDir>/npm/node_modules/NAME` (looked at first), older pi with `npm install -g`, so
//!   in `$(npm root -g)/NAME`; for the
//!   project `npm install --prefix <cwd>/.pi/npm`, so in `<cwd>/.pi/npm/node_modules/NAME`. npm
//!   is run as the settings' `npmCommand` says (an array, the command first; project settings
//!   over the user's), else as `npm`.
//! - `git:HOST/PATH[@REF]` and `https://`, `http://`, `ssh://`, `git://` URLs: cloned to
//!   `<agentDir>/git/HOST/PATH` (user) or `<cwd>/.pi/git/HOST/PATH` (project).
//! - anything else is a local path, relative to the settings file's folder (`<agentDir>` or
//!   `<cwd>/.pi`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

use super::store::Scope;

/// A `packages` source as pi parses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PiSource {
    /// `npm:SPEC`.
    Npm {
        /// What follows `npm:` (`@scope/name@1.2.3`).
        spec: String,
        /// The package's name (`@scope/name`).
        name: String,
        /// Whether the spec names a version (pi's `pinned`: `pi update` skips it).
        pinned: bool,
    },
    /// A git repository.
    Git {
        /// The URL `git clone` is given.
        repo: String,
        /// The host part of the install folder.
        host: String,
        /// The path part of the install folder (no `.git`).
        path: String,
        /// The ref after `@`, if any (pins it).
        reference: Option<String>,
    },
    /// A file or folder on disk.
    Local {
        /// The path as written.
        path: String,
    },
}

impl PiSource {
    /// Parses `source` as pi's `parseSource` does.
    pub fn parse(source: &str) -> PiSource {
        if let Some(spec) = source.strip_prefix("npm:") {
            let spec = spec.trim().to_owned();
            let (name, version) = npm_name(&spec);
            return PiSource::Npm {
                name,
                pinned: version.is_some(),
                spec,
            };
        }
        if is_local_path(source) {
            return PiSource::Local {
                path: source.to_owned(),
            };
        }
        parse_git(source).unwrap_or_else(|| PiSource::Local {
            path: source.to_owned(),
        })
    }

    /// Whether `pi update` and `pi-hooks update` leave it as it is.
    pub fn pinned(&self) -> bool {
        match self {
            PiSource::Npm { pinned, .. } => *pinned,
            PiSource::Git { reference, .. } => reference.is_some(),
            PiSource::Local { .. } => false,
        }
    }

    /// What identifies the package whatever its version or ref (pi's `getPackageIdentity`):
    /// `npm:NAME`, `git:HOST/PATH`, or `local:` and the resolved path.
    pub fn identity(&self, base: &Path) -> String {
        match self {
            PiSource::Npm { name, .. } => format!("npm:{name}"),
            PiSource::Git { host, path, .. } => format!("git:{host}/{path}"),
            PiSource::Local { path } => format!(
                "local:{}",
                crate::plugin_files::paths::resolve(path, base).display()
            ),
        }
    }
}

/// Splits an npm spec into name and version, with pi's rule
/// (`^(@?[^@]+(?:\/[^@]+)?)(?:@(.+))?$`): `@scope/name@1.0.0` is (`@scope/name`, `1.0.0`).
pub fn npm_name(spec: &str) -> (String, Option<String>) {
    let scoped = spec.starts_with('@');
    let body = if scoped { &spec[1..] } else { spec };
    match body.find('@') {
        Some(at) if at + 1 < body.len() => {
            let cut = at + usize::from(scoped);
            (spec[..cut].to_owned(), Some(spec[cut + 1..].to_owned()))
        }
        Some(at) => (spec[..at + usize::from(scoped)].to_owned(), None),
        None => (spec.to_owned(), None),
    }
}

/// pi's `isLocalPath`: anything not starting with `npm:`, `git:`, `github:`, `http:`,
/// `https:` or `ssh:`.
fn is_local_path(source: &str) -> bool {
    let trimmed = source.trim();
    !["npm:", "git:", "github:", "http:", "https:", "ssh:"]
        .iter()
        .any(|p| trimmed.starts_with(p))
}

/// pi's `parseGitUrl` for the forms its documentation lists: with `git:` any shorthand
/// (`github.com/user/repo`, `git@host:user/repo`) or URL; without, only `https://`,
/// `http://`, `ssh://` and `git://` URLs. A trailing `@REF` pins it.
fn parse_git(source: &str) -> Option<PiSource> {
    let trimmed = source.trim();
    let (prefixed, url) = match trimmed.strip_prefix("git:") {
        Some(rest) => (true, rest.trim()),
        None => (false, trimmed),
    };
    let protocols = ["https://", "http://", "ssh://", "git://"];
    if !prefixed && !protocols.iter().any(|p| url.starts_with(p)) {
        return None;
    }
    let (repo, reference) = split_ref(url);
    let (host, path, repo) = if let Some(rest) = repo.strip_prefix("git@") {
        let (host, path) = rest.split_once(':')?;
        (host.to_owned(), path.to_owned(), repo.clone())
    } else if let Some(p) = protocols.iter().find(|p| repo.starts_with(*p)) {
        let rest = &repo[p.len()..];
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        let host = host.split(':').next().unwrap_or(host);
        (host.to_owned(), path.to_owned(), repo.clone())
    } else {
        let (host, path) = repo.split_once('/')?;
        if !host.contains('.') && host != "localhost" {
            return None;
        }
        (host.to_owned(), path.to_owned(), format!("https://{repo}"))
    };
    let path = path.trim_start_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).to_owned();
    if host.is_empty() || path.split('/').count() < 2 {
        return None;
    }
    Some(PiSource::Git {
        repo,
        host,
        path,
        reference,
    })
}

/// Splits `@REF` off a git URL's path (not off `git@host`).
fn split_ref(url: &str) -> (String, Option<String>) {
    let path_start = if let Some(rest) = url.strip_prefix("git@") {
        rest.find(':').map(|i| i + 5)
    } else if let Some(i) = url.find("://") {
        url[i + 3..].find('/').map(|j| i + 3 + j)
    } else {
        url.find('/')
    };
    let Some(start) = path_start else {
        return (url.to_owned(), None);
    };
    match url[start..].find('@') {
        Some(at) if start + at + 1 < url.len() && at > 1 => (
            url[..start + at].to_owned(),
            Some(url[start + at + 1..].to_owned()),
        ),
        _ => (url.to_owned(), None),
    }
}

/// How npm is run: the user's `npmCommand` (`<agentDir>/settings.json`), else `npm`.
///
/// A project's `npmCommand` (`<cwd>/.pi/settings.json`, which a cloned repository brings)
/// would take effect only once the project is trusted, and pi-hooks has no trust decision for
/// a project's settings: it is never run, for a user-scope command or a project's (`-l`).
/// [`NpmCommand::ignored_in_project`] is the notice to show when a project sets one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpmCommand(pub Vec<String>);

impl NpmCommand {
    /// The command the user's own settings name: for what the user asks of npm
    /// (`pi-hooks install`, `update`, `remove`, with or without `-l`) and for finding packages
    /// when a host starts.
    pub fn from_user_settings(agent_dir: &Path) -> Result<NpmCommand, String> {
        NpmCommand::from_files(&[agent_dir.join("settings.json")])
    }

    /// The notice for a project whose `.pi/settings.json` sets `npmCommand`, which is not
    /// used (`None` when it sets none).
    pub fn ignored_in_project(agent_dir: &Path, cwd: &Path) -> Option<String> {
        let file = cwd.join(".pi").join("settings.json");
        let bytes = crate::plugin_files::files::read_regular(
            &file,
            crate::plugin_files::files::MAX_SETTINGS_BYTES,
        )
        .ok()?;
        let value = serde_json::from_slice::<Value>(&bytes).ok()?;
        match value.get("npmCommand") {
            None | Some(Value::Null) => None,
            Some(_) => Some(format!(
                "`npmCommand` in {} ignored: set npmCommand in your own settings ({}); a project's settings do not choose a program pi-hooks runs",
                crate::guards::display::escape(&file.display().to_string()),
                crate::guards::display::escape(
                    &agent_dir.join("settings.json").display().to_string()
                )
            )),
        }
    }

    fn from_files(files: &[PathBuf]) -> Result<NpmCommand, String> {
        for file in files {
            let Ok(bytes) = crate::plugin_files::files::read_regular(
                file,
                crate::plugin_files::files::MAX_SETTINGS_BYTES,
            ) else {
                continue;
            };
            let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            match value.get("npmCommand") {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) if !items.is_empty() => {
                    let words: Option<Vec<String>> = items
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect();
                    match words {
                        Some(words) if !words[0].is_empty() => return Ok(NpmCommand(words)),
                        _ => {
                            return Err(format!(
                                "`npmCommand` in {} must be an array of strings whose first is the command (e.g. [\"mise\", \"exec\", \"node@20\", \"--\", \"npm\"]); fix it",
                                file.display()
                            ));
                        }
                    }
                }
                Some(Value::Array(_)) => {}
                Some(_) => {
                    return Err(format!(
                        "`npmCommand` in {} must be an array of strings; fix it",
                        file.display()
                    ));
                }
            }
        }
        Ok(NpmCommand(vec!["npm".to_owned()]))
    }

    /// A `Command` running npm with `args` after the configured words.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.0[0]);
        command.args(&self.0[1..]).args(args);
        command
    }

    /// The configured words, for messages.
    pub fn shown(&self) -> String {
        self.0.join(" ")
    }

    /// `npm root -g`, run once per process for each command (pi does the same).
    pub fn global_root(&self) -> Result<PathBuf, String> {
        static ROOTS: Mutex<Vec<(Vec<String>, PathBuf)>> = Mutex::new(Vec::new());
        let mut roots = ROOTS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, root)) = roots.iter().find(|(c, _)| *c == self.0) {
            return Ok(root.clone());
        }
        let output = self
            .command(&["root", "-g"])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| {
                format!(
                    "cannot run `{} root -g` to find npm's global packages: {e}; install node and npm, or set `npmCommand` in settings.json",
                    self.shown()
                )
            })?;
        if !output.status.success() {
            return Err(format!(
                "`{} root -g` failed ({}): {}",
                self.shown(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            ));
        }
        let root = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        roots.push((self.0.clone(), root.clone()));
        Ok(root)
    }
}

/// The file that keeps `npm root -g`'s answer.
fn global_root_cache(agent_dir: &Path) -> PathBuf {
    agent_dir.join("pi-hooks").join("npm-root.json")
}

/// The kept `npm root -g` of `npm`, if any.
fn cached_global_root(agent_dir: &Path, npm: &NpmCommand) -> Option<PathBuf> {
    let bytes =
        crate::plugin_files::files::read_regular(&global_root_cache(agent_dir), 1 << 16).ok()?;
    let value: Value = serde_json::from_slice(&bytes).ok()?;
    let command: Vec<String> = serde_json::from_value(value.get("npmCommand")?.clone()).ok()?;
    let root = PathBuf::from(value.get("root")?.as_str()?);
    (command == npm.0).then_some(root)
}

/// Keeps `root` as `npm`'s `npm root -g` (best effort: a cache that cannot be written is
/// asked again next time). Written under the agent directory without following a link.
fn keep_global_root(agent_dir: &Path, npm: &NpmCommand, root: &Path) {
    let text = serde_json::json!({ "npmCommand": npm.0, "root": root }).to_string();
    let _ignored = crate::plugin_files::beneath::Beneath::open(agent_dir, true)
        .and_then(|agent| agent.dir(Path::new("pi-hooks"), true))
        .and_then(|folder| match folder {
            Some(folder) => folder.write_file("npm-root.json", text.as_bytes(), 0o600),
            None => Ok(()),
        });
}

/// The settings file's folder of `scope`, against which local paths resolve.
pub fn base_dir(scope: Scope, agent_dir: &Path, cwd: &Path) -> PathBuf {
    match scope {
        Scope::User => agent_dir.to_path_buf(),
        Scope::Project => cwd.join(".pi"),
    }
}

/// `<agentDir>/npm`, where pi 0.75 and later install a user's npm packages
/// (`<agentDir>/npm/node_modules/NAME`).
pub fn pi_npm_root(agent_dir: &Path) -> PathBuf {
    agent_dir.join("npm")
}

/// Whether pi 0.75 or later keeps this user's npm packages in `<agentDir>/npm` (it made the
/// npm project there, `<agentDir>/npm/package.json`, at its first `pi install npm:…`):
/// then `pi-hooks install npm:…` puts a user package there too (`npm install --prefix`), where
/// pi finds, updates and removes it. Without it (pi 0.73.1, or no npm package installed by
/// pi yet) the package goes to npm's global folder, where every pi finds it.
pub fn pi_manages_user_npm(agent_dir: &Path) -> bool {
    pi_npm_root(agent_dir).join("package.json").is_file()
}

/// `<cwd>/.pi/npm`, the `--prefix` of the project's npm packages.
pub fn project_npm_root(cwd: &Path) -> PathBuf {
    cwd.join(".pi").join("npm")
}

/// Where pi keeps `source` for `scope` (whether or not it is there).
pub fn install_dir(
    source: &PiSource,
    scope: Scope,
    agent_dir: &Path,
    cwd: &Path,
    npm: &NpmCommand,
) -> Result<PathBuf, String> {
    Ok(match (source, scope) {
        (PiSource::Npm { name, .. }, Scope::User) => {
            // pi 0.75 and later keep a user's npm packages in `<agentDir>/npm/node_modules`
            // (the global root is their fallback for older installs): there first.
            let managed = pi_npm_root(agent_dir).join("node_modules").join(name);
            if managed.is_dir() {
                return Ok(managed);
            }
            // `npm root -g` takes a node start (a few hundred ms on a busy machine), so its
            // answer is kept in `<agentDir>/pi-hooks/npm-root.json` for this npm command and
            // asked again when the package is not under the kept one.
            if let Some(root) = cached_global_root(agent_dir, npm)
                && root.join(name).is_dir()
            {
                return Ok(root.join(name));
            }
            let root = npm.global_root()?;
            keep_global_root(agent_dir, npm, &root);
            root.join(name)
        }
        (PiSource::Npm { name, .. }, Scope::Project) => {
            project_npm_root(cwd).join("node_modules").join(name)
        }
        (PiSource::Git { host, path, .. }, Scope::User) => {
            agent_dir.join("git").join(host).join(path)
        }
        (PiSource::Git { host, path, .. }, Scope::Project) => {
            cwd.join(".pi").join("git").join(host).join(path)
        }
        (PiSource::Local { path }, _) => {
            crate::plugin_files::paths::resolve(path, &base_dir(scope, agent_dir, cwd))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npm_specs_split_as_pi_splits_them() {
        assert_eq!(npm_name("pi-hooks"), ("pi-hooks".into(), None));
        assert_eq!(
            npm_name("pi-hooks@0.1.0"),
            ("pi-hooks".into(), Some("0.1.0".into()))
        );
        assert_eq!(npm_name("@acme/gate"), ("@acme/gate".into(), None));
        assert_eq!(
            npm_name("@acme/gate@^1.2"),
            ("@acme/gate".into(), Some("^1.2".into()))
        );
        assert!(PiSource::parse("npm:@acme/gate@1.0.0").pinned());
        assert!(!PiSource::parse("npm:@acme/gate").pinned());
    }

    #[test]
    fn git_sources_land_where_pi_clones_them() {
        let git = |s: &str| match PiSource::parse(s) {
            PiSource::Git {
                repo,
                host,
                path,
                reference,
            } => (repo, host, path, reference),
            other => panic!("{s} parsed as {other:?}"),
        };
        assert_eq!(
            git("git:github.com/user/repo@v1"),
            (
                "https://github.com/user/repo".into(),
                "github.com".into(),
                "user/repo".into(),
                Some("v1".into())
            )
        );
        assert_eq!(
            git("git:git://127.0.0.1:9418/acme/gate.git"),
            (
                "git://127.0.0.1:9418/acme/gate.git".into(),
                "127.0.0.1".into(),
                "acme/gate".into(),
                None
            )
        );
        assert_eq!(git("git:git@github.com:user/repo").2, "user/repo");
        assert_eq!(git("https://github.com/user/repo@v2").3, Some("v2".into()));
        assert!(matches!(
            PiSource::parse("./dist/pkg"),
            PiSource::Local { .. }
        ));
        assert!(matches!(
            PiSource::parse("github.com/user/repo"),
            PiSource::Local { .. }
        ));
        // As in pi 0.73.1: a bare git:// URL is not taken for git (its `git:` is read as
        // the prefix); `git:git://...` is.
        assert!(matches!(
            PiSource::parse("git://127.0.0.1/acme/gate"),
            PiSource::Local { .. }
        ));
    }
}
