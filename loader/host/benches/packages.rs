//! What installed packages add to start-up beyond loading their libraries.
//!
//! - `packages/discover/10-packages`: discovery with 10 packages recorded under `packages` in
//!   settings.json and installed in the store (the settings read, 10 install records read,
//!   10 SHA-256 pins set);
//! - `packages/discover/10-npm-packages`: discovery with 10 `npm:` entries installed by pi
//!   (or `pi-hooks install npm:`) in npm's global folder, `npm root -g` kept from an earlier
//!   start (10 `package.json` read and checked: platform, ABI, host version; 10 pins);
//! - `packages/discover/10-signed-npm-packages`: the same, each package signed (its
//!   `pi-hooks.sig` checked at each start: every file hashed, the signature verified);
//! - `packages/discover/10-in-hooks-folder`: discovery of the same 10 libraries in
//!   `<agentDir>/hooks/` (what loading them costs anyway, beside the load itself);
//! - `packages/sha256/KiB`: the SHA-256 of a library of that size, what a load of a package
//!   library computes when its file changed since its bytes last matched (a plain global
//!   plugin is not hashed);
//! - `packages/verify-10x1MiB/{read,hashed,recorded}`: reading ten 1 MiB libraries (what
//!   loading them does anyway), then checking each against its package's SHA-256 by hashing
//!   it, or through the record of its unchanged file (`packages::verified`, what every load
//!   after the first does).
//!
//! The difference of the first two, plus the check of each library, is what 10 packages add.
//! Run: `cargo bench -p pi-hooks-host --bench packages`.

use std::path::Path;
use std::time::Duration;

use criterion::Criterion;
use pi_hooks_host::packages::records::{Kind, RecordKey, Records};
use pi_hooks_host::packages::store::{InstallRecord, Scope};
use pi_hooks_host::packages::verify::sha256_hex;
use pi_hooks_host::plugin_files::discover::{DiscoveryOptions, discover};

const PACKAGES: usize = 10;
const LIBRARY_BYTES: usize = 16 << 10;

fn record(name: &str, library: &str, sha256: &str, source: &str) -> InstallRecord {
    InstallRecord {
        name: name.to_owned(),
        version: "1.0.0".to_owned(),
        source: source.to_owned(),
        origin: source.to_owned(),
        pinned: false,
        signer: Some("RWQf6LRCGA9i53mlYecO4IzT51TGPpvWucNSCh1CBM0QTaLn73Y7GFO3".to_owned()),
        platform: "linux-x64-gnu".to_owned(),
        library: library.to_owned(),
        sha256: sha256.to_owned(),
        abi: "1.3".to_owned(),
        description: "a plugin".to_owned(),
        registers: Default::default(),
        capabilities: None,
        location: None,
        replaces_source: None,
    }
}

fn with_packages(agent: &Path, cwd: &Path) {
    let store = agent.join("pi-hooks/packages");
    let records = Records::of(Scope::User, agent, cwd);
    let mut sources = Vec::new();
    for i in 0..PACKAGES {
        let name = format!("plugin-{i}");
        let dir = store.join(&name);
        std::fs::create_dir_all(dir.join("lib/linux-x64-gnu")).unwrap();
        let bytes = vec![i as u8; LIBRARY_BYTES];
        let library = format!("lib/linux-x64-gnu/libplugin_{i}.so");
        std::fs::write(dir.join(&library), &bytes).unwrap();
        let source = dir.display().to_string();
        let r = record(&name, &library, &sha256_hex(&bytes), &source);
        records
            .write(Kind::Install, &RecordKey::package_named(&name).unwrap(), &r)
            .unwrap();
        sources.push(source);
    }
    std::fs::write(
        agent.join("settings.json"),
        serde_json::json!({ "packages": sources }).to_string(),
    )
    .unwrap();
}

fn with_npm_packages(agent: &Path, cwd: &Path) {
    npm_packages(agent, cwd, false);
}

fn with_signed_npm_packages(agent: &Path, cwd: &Path) {
    npm_packages(agent, cwd, true);
}

/// Ten packages pi installed from npm, each signed (its `pi-hooks.sig` over its name,
/// version and every file) when `signed`.
fn npm_packages(agent: &Path, _cwd: &Path, signed: bool) {
    use pi_hooks_host::packages::signature::{SIGNATURE_FILE, Statement};
    let keys = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    use pi_hooks_host::packages::manifest::{Library, Manifest, PluginMeta, package_json};
    let root = agent.join("npm-global/lib/node_modules");
    let abi = format!(
        "{}.{}",
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MAJOR,
        pi_hooks_abi::ffi::version::PI_HOOKS_ABI_MINOR
    );
    let mut sources = Vec::new();
    for i in 0..PACKAGES {
        let name = format!("plugin-{i}");
        let dir = root.join(&name);
        std::fs::create_dir_all(dir.join("lib/linux-x64-gnu")).unwrap();
        let bytes = vec![i as u8; LIBRARY_BYTES];
        let library = format!("lib/linux-x64-gnu/libplugin_{i}.so");
        std::fs::write(dir.join(&library), &bytes).unwrap();
        let manifest = Manifest {
            plugin: PluginMeta {
                name: name.clone(),
                version: "1.0.0".to_owned(),
                description: "a plugin".to_owned(),
                registers: Default::default(),
            },
            libraries: [(
                pi_hooks_host::packages::platform::host_platform().to_owned(),
                Library {
                    path: library,
                    sha256: sha256_hex(&bytes),
                    abi: abi.clone(),
                },
            )]
            .into(),
            capabilities: None,
            min_host_version: "0.1.0".to_owned(),
        };
        let public = signed.then(|| keys.pk.to_base64());
        let json = package_json(&manifest, &name, public.as_deref()).to_string();
        std::fs::write(dir.join("package.json"), &json).unwrap();
        if signed {
            let statement = Statement::new(
                &name,
                "1.0.0",
                [
                    ("package.json".to_owned(), sha256_hex(json.as_bytes())),
                    (
                        manifest.libraries.values().next().unwrap().path.clone(),
                        sha256_hex(&bytes),
                    ),
                ]
                .into(),
            );
            let text = statement.to_text();
            let signature = minisign::sign(
                Some(&keys.pk),
                &keys.sk,
                std::io::Cursor::new(text.as_bytes()),
                Some(&text),
                Some("pi-hooks package"),
            )
            .unwrap();
            std::fs::write(dir.join(SIGNATURE_FILE), signature.into_string()).unwrap();
        }
        sources.push(format!("npm:{name}"));
    }
    std::fs::create_dir_all(agent.join("pi-hooks")).unwrap();
    std::fs::write(
        agent.join("pi-hooks/npm-root.json"),
        serde_json::json!({ "npmCommand": ["npm"], "root": root }).to_string(),
    )
    .unwrap();
    std::fs::write(
        agent.join("settings.json"),
        serde_json::json!({ "packages": sources }).to_string(),
    )
    .unwrap();
}

fn with_hooks_folder(agent: &Path, _cwd: &Path) {
    let hooks = agent.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for i in 0..PACKAGES {
        std::fs::write(
            hooks.join(format!("libplugin_{i}.so")),
            vec![i as u8; LIBRARY_BYTES],
        )
        .unwrap();
    }
}

/// Ten 1 MiB libraries read and checked against their SHA-256: by hashing, and through the
/// record of an unchanged file.
fn verify_group(c: &mut Criterion, root: &Path) {
    use pi_hooks_host::library::read_plugin_file;
    use pi_hooks_host::packages::verified::matches_pin;
    let dir = root.join("verify");
    let records = Records::of(Scope::User, &root.join("agent"), root);
    std::fs::create_dir_all(&dir).unwrap();
    let libraries: Vec<(std::path::PathBuf, String)> = (0..PACKAGES)
        .map(|i| {
            let path = dir.join(format!("libplugin_{i}.so"));
            let bytes: Vec<u8> = (0..1usize << 20).map(|b| (b * 31 + i) as u8).collect();
            std::fs::write(&path, &bytes).unwrap();
            (path, sha256_hex(&bytes))
        })
        .collect();
    // Records are written only for files whose last change is two seconds old.
    std::thread::sleep(Duration::from_millis(2100));
    for (path, pin) in &libraries {
        assert!(matches_pin(
            &records,
            path,
            &read_plugin_file(path).unwrap(),
            pin
        ));
    }
    let mut group = c.benchmark_group("packages/verify-10x1MiB");
    group.bench_function("read", |b| {
        b.iter(|| {
            for (path, _) in &libraries {
                read_plugin_file(path).unwrap();
            }
        })
    });
    group.bench_function("hashed", |b| {
        b.iter(|| {
            for (path, pin) in &libraries {
                assert_eq!(read_plugin_file(path).unwrap().sha256(), pin);
            }
        })
    });
    group.bench_function("recorded", |b| {
        b.iter(|| {
            for (path, pin) in &libraries {
                assert!(matches_pin(
                    &records,
                    path,
                    &read_plugin_file(path).unwrap(),
                    pin
                ));
            }
        })
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    let root = tempfile::tempdir().unwrap();
    let cwd = root.path().join("project");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut group = c.benchmark_group("packages/discover");
    for (label, setup) in [
        ("10-packages", with_packages as fn(&Path, &Path)),
        ("10-npm-packages", with_npm_packages),
        ("10-signed-npm-packages", with_signed_npm_packages),
        ("10-in-hooks-folder", with_hooks_folder),
    ] {
        let agent = root.path().join(label);
        std::fs::create_dir_all(&agent).unwrap();
        setup(&agent, &cwd);
        let options = DiscoveryOptions {
            cwd: cwd.clone(),
            agent_dir: agent,
            explicit: Vec::new(),
            no_discovery: false,
        };
        // Checks are remembered only for files whose last change is two seconds old: what
        // every start after the first finds.
        std::thread::sleep(Duration::from_millis(2100));
        let found = discover(&options);
        assert_eq!(found.candidates.len(), PACKAGES, "{:?}", found.errors);
        group.bench_function(label, |b| b.iter(|| discover(&options)));
    }
    group.finish();
    verify_group(&mut c, root.path());
    let mut group = c.benchmark_group("packages/sha256");
    for kib in [16usize, 1024] {
        let bytes = vec![7u8; kib << 10];
        group.bench_function(format!("{kib}"), |b| b.iter(|| sha256_hex(&bytes)));
    }
    group.finish();
    c.final_summary();
}
