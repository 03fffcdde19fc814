//! Landlock (Linux 5.13 and later, by ABI version): the files a confined child may read,
//! write and execute, TCP (ABI 4), and signals and abstract Unix sockets only within its own
//! sandbox (ABI 6).
//!
//! Besides the grant, the child may read what it needs to run at all: the system's library
//! folders and the loader's cache (the dynamic loader maps the plugin's dependencies), the
//! plugin file, the settings files the child reads, `/dev/null` and `/dev/urandom`, time
//! zones, and the CPU and cgroup files the runtime sizes its threads by. With any network:
//! what resolving names and TLS read ([`NETWORK_READ`]: the resolver's configuration,
//! `/etc/hosts`, the CA certificates; not the private-key folders).
//!
//! Abstract Unix sockets made outside the sandbox are out of reach (scoping, ABI 6) unless
//! the grant has `network: true`. With a host list Landlock does not handle TCP (it cannot
//! filter by name): the supervisor checks every address (`super::network`); binding a TCP
//! port (a listening server) is refused. A granted program
//! may be executed, and so may its dynamic loader (read from its `PT_INTERP`).

use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, LandlockStatus,
    PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::Grant;
use crate::packages::manifest::Network;

/// The Landlock version whose rights are asked for (newer ones are not needed).
const TARGET: ABI = ABI::V6;

/// Read-only folders and files every confined child needs.
const SYSTEM_READ: &[&str] = &[
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/usr/lib",
    "/usr/lib32",
    "/usr/lib64",
    "/usr/local/lib",
    "/etc/ld.so.cache",
    "/etc/ld.so.preload",
    "/etc/localtime",
    "/usr/share/zoneinfo",
    "/dev/urandom",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
];

/// What name resolution and TLS read, readable when any network is granted: the resolver's
/// and the name service's configuration, and the CA certificates (not `/etc/ssl/private` nor
/// `/etc/pki/tls/private`: private keys stay out of reach).
pub const NETWORK_READ: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/host.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl/certs",
    "/etc/ssl/cert.pem",
    "/etc/ssl/openssl.cnf",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/usr/share/ca-certificates",
    "/etc/pki/tls/certs",
    "/etc/pki/tls/cert.pem",
    "/etc/pki/tls/openssl.cnf",
    "/etc/pki/ca-trust",
    "/etc/pki/ca-trust-source",
];

/// The name services' sockets a resolving C library connects to, reachable (by the
/// supervisor's Unix-socket check) when any network is granted.
pub const NETWORK_SOCKETS: &[&str] = &[
    "/run/nscd/socket",
    "/var/run/nscd/socket",
    "/run/systemd/resolve/io.systemd.Resolve",
];

/// What this kernel's Landlock (as `restrict_self` found it) lacks of what a confined plugin
/// is held to, in words (empty: nothing).
fn lacking(status: &LandlockStatus) -> Vec<String> {
    let abi = match *status {
        LandlockStatus::Available { effective_abi, .. } => effective_abi,
        _ => {
            return vec![
                "Landlock (its file, network and signal rules; the seccomp filter and the limits still apply)"
                    .to_owned(),
            ];
        }
    };
    let mut lacking = Vec::new();
    if abi < ABI::V4 {
        lacking.push("Landlock's TCP rules (ABI 4)".to_owned());
    }
    if abi < ABI::V6 {
        lacking.push(
            "Landlock's signal scoping (ABI 6): it can signal other processes of your user"
                .to_owned(),
        );
    }
    lacking
}

/// What [`apply`] did.
pub struct Applied {
    /// What the kernel could not enforce, in words (empty: everything).
    pub lacking: Vec<String>,
    /// What the child may read besides its grant (the system's library folders, its own
    /// file, its settings files, its programs, ...).
    pub also_readable: Vec<PathBuf>,
    /// What the child may write besides its grant (`/dev/null`).
    pub also_writable: Vec<PathBuf>,
}

/// Restricts this process to `grant` (plus what it needs to run, see the module's text).
pub fn apply(grant: &Grant, plugin: &Path, settings: &[PathBuf]) -> Result<Applied, String> {
    let fail = |e: &dyn std::fmt::Display| {
        format!("cannot confine plugin {} with Landlock: {e}", grant.plugin)
    };
    let rules = rules(grant, plugin, settings);
    let (mut also_readable, mut also_writable) = (Vec::new(), Vec::new());
    for (path, access) in &rules {
        if grant.read.contains(path) || grant.write.contains(path) {
            continue;
        }
        if access.contains(AccessFs::WriteFile) {
            also_writable.push(path.clone());
        } else {
            also_readable.push(path.clone());
        }
    }
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET))
        .map_err(|e| fail(&e))?
        .scope(
            if grant.network == crate::packages::manifest::Network::All {
                // With the network, abstract Unix sockets are reachable (they are named from
                // anywhere on the machine, as the network is).
                Scope::from_all(TARGET) & !Scope::AbstractUnixSocket
            } else {
                Scope::from_all(TARGET)
            },
        )
        .map_err(|e| fail(&e))?;
    match &grant.network {
        Network::All => {}
        // Connecting is checked by the supervisor, by name; listening is not granted.
        Network::Hosts(hosts) if !hosts.is_empty() => {
            ruleset = ruleset
                .handle_access(AccessNet::BindTcp)
                .map_err(|e| fail(&e))?;
        }
        _ => {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(TARGET))
                .map_err(|e| fail(&e))?;
        }
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    for (path, access) in rules {
        // A granted path that does not exist (yet) cannot be named by a rule: nothing there
        // is reachable.
        let Ok(fd) = PathFd::new(&path) else {
            continue;
        };
        let access = if path.is_dir() {
            access
        } else {
            access & AccessFs::from_file(TARGET)
        };
        created = created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| fail(&format!("{}: {e}", path.display())))?;
    }
    let status = created.restrict_self().map_err(|e| fail(&e))?;
    let mut missing = lacking(&status.landlock);
    if missing.is_empty() && status.ruleset != RulesetStatus::FullyEnforced {
        missing.push("part of Landlock's rules".to_owned());
    }
    Ok(Applied {
        lacking: missing,
        also_readable,
        also_writable,
    })
}

/// Every path the child may reach and how: the grant's paths, its programs (and their
/// dynamic loader), and what it needs to run (see the module's text).
fn rules(grant: &Grant, plugin: &Path, settings: &[PathBuf]) -> Vec<(PathBuf, BitFlags<AccessFs>)> {
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let write = AccessFs::from_all(TARGET) & !AccessFs::Execute;
    let run = AccessFs::ReadFile | AccessFs::Execute;
    let mut rules: Vec<(PathBuf, BitFlags<AccessFs>)> = Vec::new();
    rules.extend(SYSTEM_READ.iter().map(|p| (PathBuf::from(p), read)));
    rules.push(("/dev/null".into(), AccessFs::ReadFile | AccessFs::WriteFile));
    if grant.network.any() {
        rules.extend(
            NETWORK_READ
                .iter()
                .filter(|p| Path::new(p).exists())
                .map(|p| (PathBuf::from(p), read)),
        );
        // Only the socket files themselves: Landlock does not govern connecting to them; the
        // rule puts them in the supervisor's reach.
        rules.extend(
            NETWORK_SOCKETS
                .iter()
                .filter(|p| Path::new(p).exists())
                .map(|p| (PathBuf::from(p), AccessFs::WriteFile.into())),
        );
    }
    rules.push((plugin.to_path_buf(), AccessFs::ReadFile.into()));
    rules.extend(
        settings
            .iter()
            .map(|p| (p.clone(), AccessFs::ReadFile.into())),
    );
    rules.extend(grant.read.iter().map(|p| (p.clone(), read)));
    rules.extend(grant.write.iter().map(|p| (p.clone(), write)));
    for program in &grant.exec_paths {
        rules.push((program.clone(), run));
        if let Some(interpreter) = interpreter(program) {
            rules.push((interpreter, run));
        }
    }
    rules
}

/// The dynamic loader an executable names (`PT_INTERP`), if any.
fn interpreter(program: &Path) -> Option<PathBuf> {
    use object::read::elf::{ElfFile64, ProgramHeader};
    let bytes = std::fs::read(program).ok()?;
    let elf = ElfFile64::<object::Endianness>::parse(&*bytes).ok()?;
    let endian = elf.endian();
    elf.elf_program_headers().iter().find_map(|header| {
        if header.p_type(endian) != object::elf::PT_INTERP {
            return None;
        }
        let data = header.data(endian, &*bytes).ok()?;
        let text = std::str::from_utf8(data).ok()?.trim_end_matches('\0');
        let path = PathBuf::from(text);
        Some(std::fs::canonicalize(&path).unwrap_or(path))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn says_what_an_older_kernel_lacks() {
        let at = |abi| LandlockStatus::Available {
            effective_abi: abi,
            kernel_abi: None,
        };
        assert!(lacking(&at(ABI::V7)).is_empty());
        let v5 = lacking(&at(ABI::V5));
        assert_eq!(v5.len(), 1);
        assert!(v5[0].contains("signal scoping (ABI 6)"), "{v5:?}");
        let v3 = lacking(&at(ABI::V3));
        assert!(v3[0].contains("TCP rules (ABI 4)"), "{v3:?}");
        let none = lacking(&LandlockStatus::NotEnabled);
        assert!(none[0].starts_with("Landlock (its file"), "{none:?}");
    }

    #[test]
    fn finds_a_programs_dynamic_loader() {
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let loader = interpreter(&sh).expect("a dynamically linked /bin/sh");
        assert!(loader.is_file(), "{}", loader.display());
        assert!(
            loader
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("ld-"),
            "{}",
            loader.display()
        );
    }
}
