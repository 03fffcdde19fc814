//! `pi-hooks pack LIB... [--out DIR] [--sign KEY] [--capabilities FILE]`: one package from
//! one library per platform, and `pi-hooks keygen` for the signing key.
//!
//! The platform of each library is read from its header; the plugin's name, version, ABI,
//! description and what it registers come from loading the library of this machine's
//! platform in a child process (`pi-hooks inspect --json --run-code`): the author's own code,
//! on the author's machine, never in the packer's own process. Libraries for other platforms
//! are taken as the same plugin built for them. Installing never runs plugin code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::Value;

use super::{CommandError, write_stdout};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::packages::manifest::{
    Capabilities, Library, Manifest, PI_EXTENSION, PluginMeta, Registers, package_json,
};
use pi_hooks_host::packages::platform::library_platform;
use pi_hooks_host::packages::signature::{SIGNATURE_FILE, Statement};
use pi_hooks_host::packages::verify::sha256_hex;

/// The arguments of `pi-hooks pack`.
#[derive(Debug, clap::Args)]
pub(super) struct PackArgs {
    /// The plugin's libraries, one per platform (the same plugin built for each).
    #[arg(value_name = "LIB")]
    libraries: Vec<PathBuf>,
    /// The folder the package is written to (default: the current one).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Sign the package with a minisign secret key: with no value the one `pi-hooks keygen`
    /// wrote to its default folder ($XDG_CONFIG_HOME/pi-hooks/keys/, else
    /// ~/.config/pi-hooks/keys/), or the key file given (`--sign=KEY` or `--sign KEY`). An
    /// encrypted key's password is read from PI_HOOKS_KEY_PASSWORD. The signature covers the
    /// name, version and every file with its SHA-256, in the package's file `pi-hooks.sig`.
    #[arg(long, value_name = "KEY", num_args = 0..=1)]
    sign: Option<Option<PathBuf>>,
    /// A JSON file with the capabilities the plugin declares:
    /// {"read": ["PATH", ...], "write": ["PATH", ...], "network": true|false, "exec": ["PROGRAM", ...], "memoryMiB": N}.
    /// Without it the package asks for unrestricted access.
    #[arg(long, value_name = "FILE")]
    capabilities: Option<PathBuf>,
    /// The package's name on npm (default: the plugin's name), for instance a scoped one:
    /// `--name @acme/my-gate`, installed with `pi install npm:@acme/my-gate`.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The lowest pi-hooks version the package needs (default: this one).
    #[arg(long, value_name = "VERSION")]
    min_host_version: Option<String>,
}

/// The arguments of `pi-hooks keygen`.
#[derive(Debug, clap::Args)]
pub(super) struct KeygenArgs {
    /// The folder to write `pi-hooks.key` (secret) and `pi-hooks.pub` (public) to (default:
    /// $XDG_CONFIG_HOME/pi-hooks/keys/, else ~/.config/pi-hooks/keys/, made private to you).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Replace a key pair already in that folder (the old secret key is lost: packages signed
    /// with it can no longer be updated by a package signed with the new one).
    #[arg(long)]
    force: bool,
}

/// The folder `pi-hooks keygen` writes to and `pack --sign` (no value) reads from:
/// `$XDG_CONFIG_HOME/pi-hooks/keys` (an absolute `XDG_CONFIG_HOME`, as the XDG base directory
/// rules say), else `$HOME/.config/pi-hooks/keys`.
pub(super) fn default_key_dir() -> Result<PathBuf, CommandError> {
    if let Some(config) = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Ok(config.join("pi-hooks/keys"));
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Ok(PathBuf::from(home).join(".config/pi-hooks/keys")),
        None => Err(CommandError::failed(
            "neither XDG_CONFIG_HOME nor HOME is set, so there is no default folder for the signing key; pass --out DIR (keygen) or --sign=FILE (pack)",
        )),
    }
}

/// Whether `path` names a shared library (what `pack` takes as LIB, never a key file).
fn is_library_name(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("so" | "dylib" | "dll")
    )
}

/// The libraries and the key file of `pack`'s arguments. `--sign` followed by a library
/// (`pack --sign ./libx.so`) means the default key: clap gives an optional value the next
/// word, and no key file is named like a library.
fn libraries_and_key(
    mut libraries: Vec<PathBuf>,
    sign: Option<Option<PathBuf>>,
) -> Result<(Vec<PathBuf>, Option<PathBuf>), CommandError> {
    let key = match sign {
        None => None,
        Some(Some(value)) if is_library_name(&value) => {
            libraries.insert(0, value);
            Some(default_key()?)
        }
        Some(Some(file)) => Some(file),
        Some(None) => Some(default_key()?),
    };
    if libraries.is_empty() {
        return Err(CommandError::failed(
            "pack needs the plugin's library: pi-hooks pack ./libmy_plugin.so [--sign] [--out DIR] (one library per platform)",
        ));
    }
    Ok((libraries, key))
}

/// The default signing key, which must exist.
fn default_key() -> Result<PathBuf, CommandError> {
    let key = default_key_dir()?.join("pi-hooks.key");
    if key.is_file() {
        Ok(key)
    } else {
        Err(CommandError::failed(format!(
            "--sign with no key file signs with your default key, {}, which does not exist: run `pi-hooks keygen` first, or pass --sign=FILE",
            key.display()
        )))
    }
}

/// Writes `NAME-VERSION.tgz`.
pub(super) fn pack(args: PackArgs) -> Result<ExitCode, CommandError> {
    let (libraries_given, key_file) = libraries_and_key(args.libraries, args.sign)?;
    // Each library's platform, from its header.
    let mut read = Vec::new();
    for path in &libraries_given {
        let shown = path.display();
        let bytes = std::fs::read(path)
            .map_err(|e| CommandError::failed(format!("cannot read {shown}: {e}")))?;
        let platform =
            library_platform(&bytes).map_err(|e| CommandError::failed(format!("{shown} {e}")))?;
        if read.iter().any(|(_, p, _)| *p == platform) {
            return Err(CommandError::failed(format!(
                "two libraries for {platform} ({shown} is the second); give one per platform"
            )));
        }
        read.push((path.clone(), platform, bytes));
    }
    // What the plugin is and registers, from loading the library of this machine's platform
    // (a library for another platform cannot be loaded here; the others are the same plugin
    // built for their platforms, with the same ABI).
    let host = pi_hooks_host::packages::platform::host_platform();
    let Some((native, _, _)) = read.iter().find(|(_, p, _)| p == host) else {
        let there: Vec<&str> = read.iter().map(|(_, p, _)| p.as_str()).collect();
        return Err(CommandError::failed(format!(
            "none of the libraries is for this machine's platform ({host}; given: {}), and pack loads that one to read what the plugin registers; add the {host} build",
            there.join(", ")
        )));
    };
    let described = describe(native)?;
    let abi = text(&described, "abi");
    let plugin = PluginMeta {
        name: text(&described, "name"),
        version: text(&described, "version"),
        description: text(&described, "description"),
        registers: Registers {
            events: names(&described, "events"),
            commands: names(&described, "commands"),
            tools: names(&described, "tools"),
            flags: names(&described, "flags"),
            shortcuts: names(&described, "shortcuts"),
        },
    };
    let mut libraries = BTreeMap::new();
    let mut files = Vec::new();
    for (path, platform, bytes) in read {
        // An installer checks which plugin a library is from its information block, before
        // anything of it runs: each library must carry one naming this plugin.
        let info = pi_hooks_host::library::info::read_file_info(&bytes)
            .map_err(|e| CommandError::failed(format!("{} {e}", path.display())))?
            .info;
        match info {
            Some(info) if info.name == plugin.name => {}
            Some(info) => {
                return Err(CommandError::failed(format!(
                    "{} is the plugin \"{}\", not \"{}\" as the {host} library is; give builds of one plugin",
                    path.display(),
                    escape(&info.name),
                    escape(&plugin.name)
                )));
            }
            None => {
                return Err(CommandError::failed(format!(
                    "{} exports no {} block, so an installer cannot check which plugin it is before it runs; build it with PI_HOOKS_PLUGIN (or PI_HOOKS_PLUGIN_INFO, or the Rust SDK's plugin macro)",
                    path.display(),
                    pi_hooks_abi::INFO_SYMBOL
                )));
            }
        }
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plugin".into());
        let in_package = format!("lib/{platform}/{file_name}");
        libraries.insert(
            platform,
            Library {
                path: in_package.clone(),
                sha256: sha256_hex(&bytes),
                abi: abi.clone(),
            },
        );
        files.push((in_package, bytes));
    }
    let capabilities = match &args.capabilities {
        None => None,
        Some(file) => {
            let bytes = std::fs::read(file).map_err(|e| {
                CommandError::failed(format!("cannot read {}: {e}", file.display()))
            })?;
            let capabilities = serde_json::from_slice::<Capabilities>(&bytes).map_err(|e| {
                CommandError::failed(format!(
                    "{} is not a capabilities object ({e}); see `pi-hooks pack --help`",
                    file.display()
                ))
            })?;
            // Signed as an installer shows them: normalised, or refused naming the entry.
            Some(capabilities.checked().map_err(|e| {
                CommandError::failed(format!("{}: its {e}; fix it", file.display()))
            })?)
        }
    };
    let manifest = Manifest {
        plugin,
        libraries,
        capabilities,
        min_host_version: args
            .min_host_version
            .unwrap_or_else(|| pi_hooks_host::packages::HOST_VERSION.to_owned()),
    };
    let key = match &key_file {
        None => None,
        Some(key) => Some(signing_key(key)?),
    };
    let public_key = key.as_ref().map(|(_, public)| public.to_base64());
    let name = args.name.unwrap_or_else(|| manifest.plugin.name.clone());
    check_npm_name(&name)?;
    files.push((
        PI_EXTENSION.to_owned(),
        include_bytes!("../../../../plugins/pi-bridge/native-package.js").to_vec(),
    ));
    let json = package_json(&manifest, &name, public_key.as_deref());
    let json_text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
    // What an installer reads, read here first: a package it would refuse is not written.
    pi_hooks_host::packages::manifest::parse_package_json(json_text.as_bytes()).map_err(|e| {
        CommandError::failed(format!(
            "the package would be refused at install: {e} (the plugin's name and version come from its descriptor; the npm name from --name)"
        ))
    })?;
    files.insert(0, ("package.json".to_owned(), json_text.into_bytes()));
    // The signature: over npm's name and version and every file (package.json included), in a
    // file of its own.
    if let Some((secret, public)) = &key {
        let statement = Statement::new(
            &name,
            &manifest.plugin.version,
            files
                .iter()
                .map(|(path, bytes)| (path.clone(), sha256_hex(bytes)))
                .collect(),
        );
        files.push((SIGNATURE_FILE.to_owned(), sign(&statement, secret, public)?));
    }
    let out_dir = args.out.unwrap_or_else(|| PathBuf::from("."));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| CommandError::failed(format!("cannot create {}: {e}", out_dir.display())))?;
    let name = &name;
    let out = out_dir.join(format!(
        "{}-{}.tgz",
        name.replace('/', "-").trim_start_matches('@'),
        manifest.plugin.version
    ));
    write_tgz(&out, &files)
        .map_err(|e| CommandError::failed(format!("cannot write {}: {e}", out.display())))?;
    let mut text = format!(
        "Packed {} {} -> {}\n  platforms: {}\n  signed: {}\n",
        name,
        manifest.plugin.version,
        out.display(),
        manifest
            .libraries
            .keys()
            .cloned()
            .collect::<Vec<_>>()
            .join(", "),
        public_key
            .as_ref()
            .map_or("no".to_owned(), |k| format!("yes, by key {k}")),
    );
    for line in Capabilities::describe(manifest.capabilities.as_ref()) {
        text.push_str(&format!("  capabilities: {line}\n"));
    }
    write_stdout(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Refuses a name npm would refuse (`PackageName::parse`, the one check every package name
/// passes), suggesting one.
fn check_npm_name(name: &str) -> Result<(), CommandError> {
    pi_hooks_host::identity::PackageName::parse(name)
        .map(drop)
        .map_err(|e| {
            CommandError::failed(format!(
                "{e}; give one with --name, e.g. --name @yourname/{}",
                pi_hooks_host::guards::display::escape(
                    &name
                        .trim_start_matches('@')
                        .replace(['/', ' '], "-")
                        .to_ascii_lowercase()
                )
            ))
        })
}

/// Loads the library in a child `pi-hooks inspect --json --run-code` and returns its entry.
fn describe(path: &Path) -> Result<Value, CommandError> {
    let exe = std::env::current_exe()
        .map_err(|e| CommandError::setup(format!("cannot find the pi-hooks binary: {e}")))?;
    let output = std::process::Command::new(exe)
        .args(["inspect", "--json", "--run-code"])
        .arg(path)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| CommandError::failed(format!("cannot run pi-hooks inspect: {e}")))?;
    let report: Value = serde_json::from_slice(&output.stdout).map_err(|_| {
        CommandError::failed(format!(
            "{} could not be loaded to read what it registers: {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    })?;
    if let Some(plugin) = report["plugins"].get(0) {
        return Ok(plugin.clone());
    }
    let error = report["errors"][0]["error"]
        .as_str()
        .unwrap_or("it did not load")
        .to_owned();
    Err(CommandError::failed(format!(
        "{} did not load, so it cannot be packed: {error}",
        path.display()
    )))
}

fn text(value: &Value, key: &str) -> String {
    value[key].as_str().unwrap_or_default().to_owned()
}

/// The names of a registration list (strings, or objects with `name` or `key`).
fn names(value: &Value, key: &str) -> Vec<String> {
    value[key]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|item| {
                    item.as_str()
                        .or_else(|| item["name"].as_str())
                        .or_else(|| item["key"].as_str())
                        .or_else(|| item["shortcut"].as_str())
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Opens the minisign secret key in `key` (an encrypted one with PI_HOOKS_KEY_PASSWORD);
/// returns it and its public key.
fn signing_key(key: &Path) -> Result<(minisign::SecretKey, minisign::PublicKey), CommandError> {
    let text = std::fs::read_to_string(key)
        .map_err(|e| CommandError::failed(format!("cannot read the key {}: {e}", key.display())))?;
    let password = std::env::var("PI_HOOKS_KEY_PASSWORD").unwrap_or_default();
    let secret = minisign::SecretKeyBox::from_string(&text)
        .and_then(|b| b.into_secret_key(Some(password)))
        .map_err(|e| {
            CommandError::failed(format!(
                "{} is not a minisign secret key this can open ({e}); make one with `pi-hooks keygen`, or set PI_HOOKS_KEY_PASSWORD for an encrypted key",
                key.display()
            ))
        })?;
    let public = minisign::PublicKey::from_secret_key(&secret)
        .map_err(|e| CommandError::failed(format!("cannot derive the public key: {e}")))?;
    Ok((secret, public))
}

/// Signs `statement`: the contents of the package's `pi-hooks.sig`, minisign's text format
/// with the statement as its trusted comment (see `pi_hooks_host::packages::signature`).
fn sign(
    statement: &Statement,
    secret: &minisign::SecretKey,
    public: &minisign::PublicKey,
) -> Result<Vec<u8>, CommandError> {
    let text = statement.to_text();
    let comment = format!("pi-hooks package {} {}", statement.name, statement.version);
    let signature = minisign::sign(
        Some(public),
        secret,
        std::io::Cursor::new(text.as_bytes()),
        Some(&text),
        Some(&comment),
    )
    .map_err(|e| CommandError::failed(format!("cannot sign: {e}")))?;
    Ok(signature.into_string().into_bytes())
}

/// Writes the package: `files` (`package.json` first) under `package/`, gzip-compressed.
fn write_tgz(out: &Path, files: &[(String, Vec<u8>)]) -> std::io::Result<()> {
    let temp = out.with_extension("tgz.partial");
    let file = std::fs::File::create(&temp)?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::default());
    let mut tar = tar::Builder::new(gz);
    let mut add = |path: &str, bytes: &[u8], mode: u32| -> std::io::Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_mtime(0);
        header.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut header, format!("package/{path}"), bytes)
    };
    for (path, bytes) in files {
        let mode = if path.starts_with("lib/") {
            0o755
        } else {
            0o644
        };
        add(path, bytes, mode)?;
    }
    tar.into_inner()?.finish()?.sync_all()?;
    std::fs::rename(temp, out)
}

/// `pi-hooks keygen`: a minisign key pair for signing packages, by default in
/// [`default_key_dir`] (created private: 0700, the secret key 0600), never the current folder;
/// an existing pair is kept unless `--force`.
pub(super) fn keygen(args: KeygenArgs) -> Result<ExitCode, CommandError> {
    let default = args.out.is_none();
    let out = match args.out {
        Some(out) => out,
        None => default_key_dir()?,
    };
    let mut folder = std::fs::DirBuilder::new();
    folder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut folder, 0o700);
    folder
        .create(&out)
        .map_err(|e| CommandError::failed(format!("cannot create {}: {e}", out.display())))?;
    #[cfg(unix)]
    if default {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).map_err(|e| {
            CommandError::failed(format!("cannot make {} private: {e}", out.display()))
        })?;
    }
    let (secret_path, public_path) = (out.join("pi-hooks.key"), out.join("pi-hooks.pub"));
    if secret_path.exists() && !args.force {
        return Err(CommandError::failed(format!(
            "{} exists: it is your signing key, kept as it is. Packages signed with it are pinned to it, so keep using it (`pi-hooks pack LIB --sign`). To make a new pair anyway: `pi-hooks keygen --force` (the old secret key is lost), or `pi-hooks keygen --out DIR` for another folder",
            secret_path.display()
        )));
    }
    if args.force {
        for old in [&secret_path, &public_path] {
            match std::fs::remove_file(old) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(CommandError::failed(format!(
                        "cannot replace {}: {e}",
                        old.display()
                    )));
                }
            }
        }
    }
    // An empty password leaves the key unencrypted (minisign's own rule); the crate's
    // "unencrypted" pair has no checksum and cannot be read back, so this one is used.
    let password = std::env::var("PI_HOOKS_KEY_PASSWORD").unwrap_or_default();
    let pair = minisign::KeyPair::generate_encrypted_keypair(Some(password))
        .map_err(|e| CommandError::failed(format!("cannot make a key: {e}")))?;
    let secret = pair
        .sk
        .to_box(None)
        .map_err(|e| CommandError::failed(format!("cannot encode the key: {e}")))?
        .into_string();
    let public = pair
        .pk
        .to_box()
        .map_err(|e| CommandError::failed(format!("cannot encode the key: {e}")))?
        .into_string();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    use std::io::Write;
    options
        .open(&secret_path)
        .and_then(|mut f| f.write_all(secret.as_bytes()))
        .map_err(|e| {
            CommandError::failed(format!("cannot write {}: {e}", secret_path.display()))
        })?;
    std::fs::write(&public_path, &public).map_err(|e| {
        CommandError::failed(format!("cannot write {}: {e}", public_path.display()))
    })?;
    let sign = if default {
        "pi-hooks pack LIB --sign".to_owned()
    } else {
        format!("pi-hooks pack LIB --sign={}", secret_path.display())
    };
    write_stdout(&format!(
        "Wrote a signing key pair:\n  secret key: {}\n    keep it private and out of git; `{sign}` signs a package with it\n  public key: {} ({})\n    pack writes it into every package it signs; installers pin it at the first install, so sign\n    every later version with the same secret key. Publish it (say, in your README) so users can\n    check the signer `pi-hooks inspect PACKAGE` shows\n",
        secret_path.display(),
        public_path.display(),
        pair.pk.to_base64()
    ))?;
    Ok(ExitCode::SUCCESS)
}
