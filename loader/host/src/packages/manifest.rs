//! The package manifest: the `piHooks` key of a package's `package.json`.
//!
//! ```json
//! "piHooks": {
//!   "manifest": {
//!     "plugin": { "name": "protected-paths", "version": "0.1.0", "description": "...",
//!                 "registers": { "events": ["tool_call"], "commands": [], "tools": [],
//!                                "flags": [], "shortcuts": [] } },
//!     "libraries": { "linux-x64-gnu": { "path": "lib/linux-x64-gnu/libprotected_paths.so",
//!                                       "sha256": "...", "abi": "1.3" } },
//!     "capabilities": null,
//!     "minHostVersion": "0.1.0"
//!   },
//!   "publicKey": "RWQ..."
//! }
//! ```
//!
//! A signed package carries its signer's minisign public key here and its signature in a file
//! of its own, over every file of the package, this one included (see
//! [`super::signature`]). The old `signature` key (a signature over the manifest only) is read
//! only to be refused.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The key of `package.json` that holds what pi-hooks adds.
pub const PACKAGE_KEY: &str = "piHooks";

/// What a package says about itself (`package.json`), as read.
#[derive(Debug, Clone)]
pub struct PackageJson {
    /// npm's `name`.
    pub name: crate::identity::PackageName,
    /// npm's `version`.
    pub version: String,
    /// The manifest.
    pub manifest: Manifest,
    /// Whether it carries a signature of the old format (`piHooks.signature`, over the
    /// manifest only), which is refused (see [`super::signature::verify_package`]).
    pub old_signature: bool,
    /// The signer's minisign public key (base64) of a signed package (`piHooks.publicKey`);
    /// the signature is in [`super::signature::SIGNATURE_FILE`].
    pub public_key: Option<String>,
}

/// The manifest: libraries per platform, the plugin, its capabilities, the host it needs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    /// The plugin's metadata.
    pub plugin: PluginMeta,
    /// One library per platform name (see `crate::packages::platform`).
    pub libraries: BTreeMap<String, Library>,
    /// What the plugin declares it needs; `None` asks for unrestricted access.
    #[serde(default)]
    pub capabilities: Option<Capabilities>,
    /// The lowest pi-hooks version it needs.
    pub min_host_version: String,
}

/// The plugin's metadata, as its descriptor and its registrations said when it was packed.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginMeta {
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Its description.
    #[serde(default)]
    pub description: String,
    /// What it registers.
    #[serde(default)]
    pub registers: Registers,
}

/// What a plugin registers (recorded by `pi-hooks pack`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Registers {
    /// Event names.
    #[serde(default)]
    pub events: Vec<String>,
    /// Command names.
    #[serde(default)]
    pub commands: Vec<String>,
    /// Tool names.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Flag names.
    #[serde(default)]
    pub flags: Vec<String>,
    /// Shortcut keys.
    #[serde(default)]
    pub shortcuts: Vec<String>,
}

/// One library: its path inside the package, its SHA-256 (hex) and the ABI it was built for.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Library {
    /// Path relative to the package root (`/`-separated, no `..`).
    pub path: String,
    /// SHA-256 of its bytes, lower-case hex.
    pub sha256: String,
    /// `major.minor` of the ABI it was built for.
    pub abi: String,
}

/// What a plugin declares it needs. A path starts with `${cwd}`, `${home}`, `${tmp}`,
/// `${data}` (a folder of the plugin's own), `~/` or `/` ([`Capabilities::checked`] says
/// which entries can be used). Shown at install, recorded, and enforced as the plugin's grant
/// (`crate::sandbox::grant`). Read strictly wherever it comes from (a package.json, an
/// install record, the user's `sandbox` settings): [`Capabilities::from_value`].
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Paths it reads.
    #[serde(default)]
    pub read: Vec<String>,
    /// Paths it writes.
    #[serde(default)]
    pub write: Vec<String>,
    /// The network it reaches: `false` (none, the default), `true` (any host), or a list
    /// of host names (`["api.github.com", "*.slack.com:443"]`).
    #[serde(default)]
    pub network: Network,
    /// Programs it runs.
    #[serde(default)]
    pub exec: Vec<String>,
    /// Memory it needs, MiB.
    #[serde(default, rename = "memoryMiB", skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
}

/// The keys of a grant, in the words of a message.
const GRANT_KEYS: &str = "read and write (lists of paths), network (true, false or a list of host names), exec (a list of programs) and memoryMiB (a whole number)";

/// A JSON value's kind, for messages: `a string ("64")`, `a boolean (true)`.
fn kind_of(value: &serde_json::Value) -> String {
    use serde_json::Value;
    let shown = |text: String| {
        let text = crate::guards::display::escape(&text);
        if text.chars().count() > 60 {
            format!("{}...", text.chars().take(60).collect::<String>())
        } else {
            text.into_owned()
        }
    };
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("a boolean ({b})"),
        Value::Number(n) => format!("a number ({n})"),
        Value::String(s) => format!("a string ({})", shown(format!("{s:?}"))),
        Value::Array(_) => "a list".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

impl Capabilities {
    /// Reads capabilities (a grant) strictly: an object whose keys are `read`, `write`,
    /// `network`, `exec` and `memoryMiB`, each of its type. `Err` names the field and what
    /// was found instead: an unknown key (`{"net": true}`), a wrong type (`"memoryMiB":
    /// "64"`, `"read": "${cwd}"`), anything but an object (a grant of `true`). The caller
    /// adds the file and the entry.
    pub fn from_value(value: &serde_json::Value) -> Result<Capabilities, String> {
        use serde_json::Value;
        let Value::Object(map) = value else {
            return Err(format!(
                "must be an object of {GRANT_KEYS}, found {}",
                kind_of(value)
            ));
        };
        let mut capabilities = Capabilities::default();
        let list = |key: &str, value: &Value, what: &str| -> Result<Vec<String>, String> {
            let wrong = |found: &Value| {
                format!(
                    "`{key}` must be a list of {what} (such as [\"${{cwd}}\"]), found {}",
                    kind_of(found)
                )
            };
            let Value::Array(items) = value else {
                return Err(wrong(value));
            };
            items
                .iter()
                .map(|item| {
                    item.as_str().map(str::to_owned).ok_or_else(|| {
                        format!(
                            "`{key}` must be a list of {what}, and one entry is {}",
                            kind_of(item)
                        )
                    })
                })
                .collect()
        };
        for (key, value) in map {
            match key.as_str() {
                "read" => capabilities.read = list("read", value, "path strings")?,
                "write" => capabilities.write = list("write", value, "path strings")?,
                "exec" => capabilities.exec = list("exec", value, "program strings")?,
                "network" => {
                    capabilities.network = match value {
                        Value::Bool(true) => Network::All,
                        Value::Bool(false) => Network::None,
                        Value::Array(_) => {
                            Network::Hosts(list("network", value, "host name strings")?)
                        }
                        other => {
                            return Err(format!(
                                "`network` must be true, false or a list of host names (such as [\"api.github.com\"]), found {}",
                                kind_of(other)
                            ));
                        }
                    }
                }
                "memoryMiB" => {
                    capabilities.memory_mib = match value {
                        Value::Null => None,
                        other => Some(other.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                            format!(
                                "`memoryMiB` must be a whole number of MiB above 0 (such as 256), found {}",
                                kind_of(other)
                            )
                        })?),
                    }
                }
                other => {
                    return Err(format!(
                        "unknown field `{}`; the keys are {GRANT_KEYS}",
                        crate::guards::display::escape(other)
                    ));
                }
            }
        }
        Ok(capabilities)
    }

    /// The same capabilities with every path normalised (`.`, `..` and empty parts taken
    /// out, lexically), or an error naming the field and the entry that cannot be used: a
    /// path that does not start with `${cwd}`, `${home}`, `${tmp}`, `${data}`, `~/` or `/`,
    /// one with a glob (`*`, `?`, `[`), another `${...}` variable or a control character,
    /// one that leaves its variable's folder once `..` is resolved (`${data}/..` would be the
    /// agent directory), an empty entry or an empty `exec` program. Applied where a package
    /// is read ([`parse_package_json`]) and where a grant is resolved
    /// (`crate::sandbox::grant::Grant::resolve`).
    pub fn checked(&self) -> Result<Capabilities, String> {
        let paths = |key: &str, entries: &[String]| -> Result<Vec<String>, String> {
            entries
                .iter()
                .map(|entry| {
                    normalize_entry(entry).map_err(|e| {
                        format!(
                            "`capabilities.{key}` entry \"{}\" {e}",
                            crate::guards::display::escape(entry)
                        )
                    })
                })
                .collect()
        };
        let exec = self
            .exec
            .iter()
            .map(|program| {
                check_program(program).map_err(|e| {
                    format!(
                        "`capabilities.exec` entry \"{}\" {e}",
                        crate::guards::display::escape(program)
                    )
                })
            })
            .collect::<Result<Vec<String>, String>>()?;
        if let Network::Hosts(hosts) = &self.network {
            crate::sandbox::network::check_hosts(hosts)?;
        }
        Ok(Capabilities {
            read: paths("read", &self.read)?,
            write: paths("write", &self.write)?,
            network: self.network.clone(),
            exec,
            memory_mib: self.memory_mib,
        })
    }

    /// Lines that say what is asked for (for the install prompt and `list`).
    pub fn describe(capabilities: Option<&Capabilities>) -> Vec<String> {
        let Some(c) = capabilities else {
            return vec![
                "unrestricted: declares no capabilities, so it asks for everything your user can do"
                    .to_owned(),
            ];
        };
        let list = |items: &[String]| {
            if items.is_empty() {
                "nothing".to_owned()
            } else {
                items.join(", ")
            }
        };
        let mut lines = vec![
            format!("read: {}", list(&c.read)),
            format!("write: {}", list(&c.write)),
            format!("network: {}", c.network.describe()),
            format!("exec: {}", list(&c.exec)),
        ];
        if let Some(mib) = c.memory_mib {
            lines.push(format!("memory: {mib} MiB"));
        }
        lines
    }
}

impl<'de> Deserialize<'de> for Capabilities {
    /// Through [`Capabilities::from_value`]: the same strict reading wherever capabilities
    /// come from.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Capabilities::from_value(&value).map_err(serde::de::Error::custom)
    }
}

/// The network a plugin may reach (`network` of [`Capabilities`] and of a grant).
///
/// Written as `false`, `true` or a list of host names: `"api.github.com"` (that host, any
/// port), `"*.slack.com"` (any host beneath `slack.com`), either with `:PORT`. An empty list
/// reaches nothing, as `false` does.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Network {
    /// No network (`false`, or an empty list).
    #[default]
    None,
    /// Any host (`true`).
    All,
    /// Only these hosts, as written.
    Hosts(Vec<String>),
}

impl Network {
    /// Whether any network at all is granted (`true`, or a list that names a host).
    pub fn any(&self) -> bool {
        match self {
            Network::None => false,
            Network::All => true,
            Network::Hosts(hosts) => !hosts.is_empty(),
        }
    }

    /// The grant in words: `no`, `yes`, or the hosts (`api.github.com, *.slack.com:443`).
    pub fn describe(&self) -> String {
        match self {
            Network::None => "no".to_owned(),
            Network::All => "yes".to_owned(),
            Network::Hosts(hosts) if hosts.is_empty() => "no".to_owned(),
            Network::Hosts(hosts) => hosts.join(", "),
        }
    }

    /// Whether `self` grants no more than `granted` does.
    pub fn within(&self, granted: &Network) -> bool {
        match (self, granted) {
            (wanted, _) if !wanted.any() => true,
            (_, Network::All) => true,
            (Network::All, _) => false,
            (Network::Hosts(wanted), Network::Hosts(granted)) => {
                wanted.iter().all(|host| granted.contains(host))
            }
            (_, Network::None) => false,
            (Network::None, _) => true,
        }
    }
}

impl Serialize for Network {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Network::None => serializer.serialize_bool(false),
            Network::All => serializer.serialize_bool(true),
            Network::Hosts(hosts) => hosts.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Network;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or a list of host names (such as [\"api.github.com\", \"*.slack.com:443\"])")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Network, E> {
                Ok(if v { Network::All } else { Network::None })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Network, A::Error> {
                let mut hosts = Vec::new();
                while let Some(host) = seq.next_element::<String>()? {
                    hosts.push(host);
                }
                Ok(Network::Hosts(hosts))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The variables a capability path may start with.
pub const PATH_VARIABLES: [&str; 4] = ["${cwd}", "${home}", "${tmp}", "${data}"];

/// One path of `read` or `write` (or an `exec` program given by path), normalised: its start
/// (`${cwd}`, `${home}`, `${tmp}`, `${data}`, `~` or `/`) as written, then its parts with
/// `.`, `..` and empty parts resolved lexically. The error says why it cannot be used.
pub fn normalize_entry(entry: &str) -> Result<String, String> {
    const HOW: &str = "start it with ${cwd}, ${home}, ${tmp}, ${data}, ~/ or /";
    if entry.trim().is_empty() {
        return Err("is empty; name a path".to_owned());
    }
    if entry.chars().any(char::is_control) {
        return Err("holds a control character; name a path".to_owned());
    }
    if entry.contains(['*', '?', '[']) {
        return Err(
            "has a glob (`*`, `?` or `[`); name the folder itself: a folder grants everything beneath it"
                .to_owned(),
        );
    }
    let (start, rest) = if let Some(rest) = entry.strip_prefix('/') {
        ("/", rest)
    } else if entry == "~" || entry.starts_with("~/") {
        ("~", &entry[1..])
    } else if let Some(variable) = PATH_VARIABLES.iter().find(|v| entry.starts_with(**v)) {
        let rest = &entry[variable.len()..];
        if !rest.is_empty() && !rest.starts_with('/') {
            return Err(format!(
                "has text right after {variable}; write {variable}/... ({HOW})"
            ));
        }
        (*variable, rest)
    } else if let Some(after) = entry.strip_prefix("${") {
        let name = after.split('}').next().unwrap_or_default();
        return Err(format!(
            "uses the unknown variable ${{{name}}}; the variables are ${{cwd}}, ${{home}}, ${{tmp}} and ${{data}} ({HOW})"
        ));
    } else {
        return Err(format!("is not an absolute path; {HOW}"));
    };
    if rest.contains("${") {
        return Err(format!(
            "has a variable after its start; a variable can only start a path ({HOW})"
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    if start == "/" {
                        // `/..` is `/`.
                        continue;
                    }
                    return Err(format!(
                        "leaves {} once `..` is resolved; name a path inside it",
                        if start == "~" { "~ (your home)" } else { start }
                    ));
                }
            }
            part => parts.push(part),
        }
    }
    let joined = parts.join("/");
    Ok(match (start, joined.is_empty()) {
        ("/", _) => format!("/{joined}"),
        (start, true) => start.to_owned(),
        (start, false) => format!("{start}/{joined}"),
    })
}

/// One `exec` program: a name looked up on `PATH` (no `/`, no glob, not `.` or `..`), or a
/// path ([`normalize_entry`]) when it has a `/` or starts with `$` or `~`.
pub fn check_program(program: &str) -> Result<String, String> {
    if program.trim().is_empty() {
        return Err("is empty; name a program (such as \"git\")".to_owned());
    }
    if program.contains('/') || program.starts_with('$') || program.starts_with('~') {
        return normalize_entry(program);
    }
    if program.chars().any(char::is_control) || program.contains(['*', '?', '[']) {
        return Err(
            "is not a program name (a glob or a control character); name one program (such as \"git\")"
                .to_owned(),
        );
    }
    if program == "." || program == ".." {
        return Err("is not a program; name one (such as \"git\")".to_owned());
    }
    Ok(program.to_owned())
}

/// A plain semantic version: `MAJOR.MINOR.PATCH` (digits), then optionally `-PRERELEASE`
/// and `+BUILD` of dot-separated ASCII letters, digits and `-`.
pub fn check_semver(text: &str) -> Result<(), String> {
    let bad = || "is not a version of the form MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]".to_owned();
    if text.len() > 256 {
        return Err(bad());
    }
    let (rest, build) = match text.split_once('+') {
        Some((rest, build)) => (rest, Some(build)),
        None => (text, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (rest, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let number = |n: &&str| !n.is_empty() && n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit());
    let identifiers = |s: &str| {
        s.split('.').all(|part| {
            !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
    };
    if numbers.len() != 3
        || !numbers.iter().all(number)
        || pre.is_some_and(|p| !identifiers(p))
        || build.is_some_and(|b| !identifiers(b))
    {
        return Err(bad());
    }
    Ok(())
}

/// An ABI version: exactly `MAJOR.MINOR`, digits only.
pub fn check_abi(text: &str) -> Result<(), String> {
    match text.split_once('.') {
        Some((major, minor))
            if [major, minor].iter().all(|n| {
                !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit())
            }) =>
        {
            Ok(())
        }
        _ => Err("is not an ABI version of the form MAJOR.MINOR (digits only)".to_owned()),
    }
}

/// Reads `package.json` bytes; the error says what is wrong and what to do. What the package
/// says is checked here, once: its npm name ([`crate::identity::PackageName::parse`]), its
/// version ([`check_semver`]), its libraries' platform keys
/// ([`super::platform::PLATFORMS`]), paths, SHA-256s and ABIs ([`check_abi`]), its
/// `minHostVersion`, and its capabilities, normalised ([`Capabilities::checked`]).
pub fn parse_package_json(bytes: &[u8]) -> Result<PackageJson, String> {
    use crate::guards::display::escape;
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| format!("package.json is not valid JSON ({e}); repack the package"))?;
    let Value::Object(map) = value else {
        return Err("package.json must hold a JSON object; repack the package".to_owned());
    };
    let text = |key: &str| -> Result<String, String> {
        map.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("package.json has no `{key}` string; repack the package"))
    };
    let (name, version) = (text("name")?, text("version")?);
    let name = crate::identity::PackageName::parse(&name)
        .map_err(|e| format!("package.json's `name`: {e}; repack the package"))?;
    check_semver(&version).map_err(|e| {
        format!(
            "package.json's `version` \"{}\" {e}; repack the package",
            escape(&version)
        )
    })?;
    let ours = map.get(PACKAGE_KEY).and_then(Value::as_object).ok_or_else(|| {
        format!("package.json has no `{PACKAGE_KEY}` object, so it is not a pi-hooks package (pack one with `pi-hooks pack`)")
    })?;
    let manifest_value = ours.get("manifest").ok_or_else(|| {
        format!("package.json's `{PACKAGE_KEY}` has no `manifest`; repack the package")
    })?;
    let mut manifest: Manifest = serde_json::from_value(manifest_value.clone()).map_err(|e| {
        format!(
            "package.json's `{PACKAGE_KEY}.manifest` is not valid ({}); repack the package",
            escape(&e.to_string())
        )
    })?;
    let old_signature = !matches!(ours.get("signature"), None | Some(Value::Null));
    for (platform, library) in &manifest.libraries {
        if !super::platform::PLATFORMS.contains(&platform.as_str()) {
            return Err(format!(
                "package.json's `{PACKAGE_KEY}.manifest.libraries` has the key \"{}\", which is not a platform name (they are {}); repack the package",
                escape(platform),
                super::platform::PLATFORMS.join(", ")
            ));
        }
        check_relative(&library.path).map_err(|e| {
            format!(
                "the {platform} library path \"{}\" {e}; repack the package",
                escape(&library.path)
            )
        })?;
        if library.sha256.len() != 64 || !library.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "the {platform} library's sha256 is not 64 hex digits; repack the package"
            ));
        }
        check_abi(&library.abi).map_err(|e| {
            format!(
                "the {platform} library's abi \"{}\" {e}; repack the package",
                escape(&library.abi)
            )
        })?;
    }
    check_semver(&manifest.min_host_version).map_err(|e| {
        format!(
            "minHostVersion \"{}\" {e}; repack the package",
            escape(&manifest.min_host_version)
        )
    })?;
    if let Some(capabilities) = &manifest.capabilities {
        let checked = capabilities
            .checked()
            .map_err(|e| format!("package.json's {e}; ask the package's publisher to fix it"))?;
        manifest.capabilities = Some(checked);
    }
    let public_key = match ours.get("publicKey") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => {
            return Err(format!(
                "package.json's `{PACKAGE_KEY}.publicKey` must be a string (a minisign public key); repack the package"
            ));
        }
    };
    Ok(PackageJson {
        name,
        version,
        manifest,
        old_signature,
        public_key,
    })
}

/// The pi extension a package made by `pi-hooks pack` carries (`plugins/pi-bridge/
/// native-package.js`): it runs the package's plugin in pi through the bridge of the
/// `pi-hooks` npm package the package depends on.
pub const PI_EXTENSION: &str = "pi-extension.js";

/// Builds a `package.json` for `manifest` (npm's and pi's fields plus ours), named `name` on
/// npm (the plugin's name, or a scoped name such as `@acme/my-gate`). For pi it is a pi
/// package whose extension is [`PI_EXTENSION`], depending on the `pi-hooks` npm package (the
/// bridge and the binary) at the manifest's `minHostVersion` or newer. `public_key` is the
/// signer's (minisign, base64) for a package that will be signed.
pub fn package_json(manifest: &Manifest, name: &str, public_key: Option<&str>) -> Value {
    let manifest_value = serde_json::to_value(manifest).unwrap_or(Value::Null);
    let mut ours = serde_json::Map::new();
    ours.insert("manifest".into(), manifest_value);
    if let Some(public_key) = public_key {
        ours.insert("publicKey".into(), Value::String(public_key.to_owned()));
    }
    serde_json::json!({
        "name": name,
        "version": manifest.plugin.version,
        "description": manifest.plugin.description,
        "keywords": ["pi-package", "pi-hooks-plugin"],
        "dependencies": { "pi-hooks": format!(">={}", manifest.min_host_version) },
        "pi": { "extensions": [format!("./{PI_EXTENSION}")] },
        PACKAGE_KEY: Value::Object(ours),
    })
}

/// A path inside a package: relative, `/`-separated, no `..`, no empty parts.
pub fn check_relative(path: &str) -> Result<(), String> {
    if path.chars().any(char::is_control) {
        return Err("has a control character".to_owned());
    }
    if path.is_empty() || path.starts_with('/') || path.contains('\\') || path.contains(':') {
        return Err("is not a relative path inside the package".to_owned());
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err("has an empty, `.` or `..` part".to_owned());
    }
    Ok(())
}

/// Parses `a.b[.c]` into numbers (at most `parts`); a pre-release or build suffix after `-`
/// or `+` is ignored.
pub fn parse_version(text: &str, parts: usize) -> Result<Vec<u64>, String> {
    let core = text.split(['-', '+']).next().unwrap_or_default();
    let numbers: Result<Vec<u64>, _> = core.split('.').map(str::parse::<u64>).collect();
    match numbers {
        Ok(n) if !n.is_empty() && n.len() <= parts => Ok(n),
        _ => Err(format!(
            "is not a version of the form {}",
            if parts == 2 {
                "MAJOR.MINOR"
            } else {
                "MAJOR.MINOR.PATCH"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A manifest of one linux-x64-gnu library, with `capabilities`.
    fn manifest(capabilities: Option<Capabilities>) -> Manifest {
        let mut libraries = BTreeMap::new();
        libraries.insert(
            "linux-x64-gnu".to_owned(),
            Library {
                path: "lib/a.so".into(),
                sha256: "a".repeat(64),
                abi: "1.3".into(),
            },
        );
        Manifest {
            plugin: PluginMeta {
                name: "p".into(),
                version: "1.0.0".into(),
                description: String::new(),
                registers: Registers::default(),
            },
            libraries,
            capabilities,
            min_host_version: "0.1.0".into(),
        }
    }

    #[test]
    fn reads_what_it_writes_and_refuses_broken_input() {
        let manifest = manifest(None);
        let json = serde_json::to_vec(&package_json(&manifest, "gate", Some("key"))).unwrap();
        let read = parse_package_json(&json).unwrap();
        assert_eq!(
            (
                read.manifest,
                read.public_key.as_deref(),
                read.old_signature
            ),
            (manifest.clone(), Some("key"), false)
        );
        let mut old = package_json(&manifest, "gate", Some("key"));
        old["piHooks"]["signature"] = "untrusted comment: ...".into();
        assert!(
            parse_package_json(&serde_json::to_vec(&old).unwrap())
                .unwrap()
                .old_signature
        );
        assert!(
            parse_package_json(b"{not json")
                .unwrap_err()
                .contains("not valid JSON")
        );
        let mut bad = package_json(&manifest, "gate", None);
        bad["piHooks"]["manifest"]["libraries"]["linux-x64-gnu"]["path"] = "../../x.so".into();
        let e = parse_package_json(&serde_json::to_vec(&bad).unwrap()).unwrap_err();
        assert!(e.contains("`..` part"), "{e}");
        assert!(check_relative("/abs").is_err());
        assert_eq!(parse_version("1.2.3-beta", 3).unwrap(), vec![1, 2, 3]);
        assert!(parse_version("1.x", 2).is_err());
    }

    fn manifest_json() -> Value {
        package_json(&manifest(Some(Capabilities::default())), "gate", None)
    }

    fn refused(change: impl FnOnce(&mut Value)) -> String {
        let mut json = manifest_json();
        change(&mut json);
        let e = parse_package_json(&serde_json::to_vec(&json).unwrap()).unwrap_err();
        assert!(!e.contains('\u{1b}'), "{e}");
        e
    }

    #[test]
    fn what_a_package_says_is_checked() {
        for name in [
            ".lock",
            ".staging-x",
            ".old-mk-1",
            ".",
            "..",
            "@acme+gate",
            "@acme gate",
        ] {
            let e = refused(|j| j["name"] = name.into());
            assert!(
                e.contains("`name`") && e.contains("not a valid package name"),
                "{e}"
            );
        }
        for version in ["1.0", "1.0.0-\u{1b}[2J", "v1.0.0", "1.0.0-", "1.0.0+a b"] {
            let e = refused(|j| j["version"] = version.into());
            assert!(e.contains("`version`"), "{e}");
        }
        for abi in ["1.5-\u{1b}[2Jx", "1", "1.5.0", "1.x", "1.+5"] {
            let e = refused(|j| {
                j["piHooks"]["manifest"]["libraries"]["linux-x64-gnu"]["abi"] = abi.into()
            });
            assert!(e.contains("MAJOR.MINOR (digits only)"), "{e}");
        }
        let e = refused(|j| {
            let libraries = &mut j["piHooks"]["manifest"]["libraries"];
            libraries["linux-\u{1b}[31m"] = libraries["linux-x64-gnu"].clone();
        });
        assert!(e.contains("not a platform name"), "{e}");
        let e = refused(|j| {
            j["piHooks"]["manifest"]["capabilities"]["write"] =
                serde_json::json!(["${data}/../../.."]);
        });
        assert!(
            e.contains("`capabilities.write` entry \"${data}/../../..\" leaves ${data}"),
            "{e}"
        );
        for good in ["1.0.0", "0.1.0-beta.1", "1.2.3+build-5", "10.20.30-rc.1+x"] {
            let mut json = manifest_json();
            json["version"] = good.into();
            parse_package_json(&serde_json::to_vec(&json).unwrap()).unwrap();
        }
    }

    #[test]
    fn capability_paths_are_normalised() {
        for (entry, normal) in [
            ("${cwd}", "${cwd}"),
            ("${cwd}/", "${cwd}"),
            ("${data}/x/../y", "${data}/y"),
            ("${home}//a/./b", "${home}/a/b"),
            ("~/notes/..", "~"),
            ("~", "~"),
            ("/usr/../etc", "/etc"),
            ("/..", "/"),
        ] {
            assert_eq!(normalize_entry(entry).unwrap(), normal, "{entry}");
        }
        for entry in [
            "out",
            "./x",
            "${work}/x",
            "${cwd}x",
            "${data}/..",
            "${tmp}/a/../..",
            "~/../other",
            "/a/*",
            "/a/b?",
            "/a/[ab]",
            "",
            "  ",
            "/a\nb",
        ] {
            assert!(normalize_entry(entry).is_err(), "{entry:?} was accepted");
        }
        assert_eq!(check_program("git").unwrap(), "git");
        assert_eq!(check_program("/usr/bin/../bin/jq").unwrap(), "/usr/bin/jq");
        for program in ["", " ", "bin/jq", "g*t", ".."] {
            assert!(check_program(program).is_err(), "{program:?} was accepted");
        }
    }
}
