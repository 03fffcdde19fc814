//! What the supervisor checks and makes itself (`loader/host/src/sandbox/supervisor/checked.rs`,
//! `loader/host/src/sandbox/network.rs`): a hostile C plugin
//! (tests/fixtures/sandbox_supervisor.c) under the real binary reaches for Unix socket
//! servers outside its grant (stream, datagram by `sendto`, `sendmsg` and `sendmmsg`,
//! abstract), binds a socket file outside it, changes the mode, times and attributes of a key
//! outside it and watches `$HOME`, connects to hosts its grant does not name. Each is refused
//! and named; with the matching grant each succeeds, so a test cannot pass by breakage.
#![cfg(target_os = "linux")]

use std::io::Read;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{SocketAddr, UnixDatagram, UnixListener};
use std::path::PathBuf;

use pi_hooks_tests::confined::{Run, World, run, world_of};
use serde_json::{Value, json};

fn world() -> World {
    world_of("sandbox_supervisor")
}

/// Socket servers outside the plugin's folders: a stream listener, a datagram socket and an
/// abstract listener, all non-blocking (a test checks nothing arrived).
struct Servers {
    folder: PathBuf,
    stream: UnixListener,
    datagram: UnixDatagram,
    abstract_name: String,
    abstract_listener: UnixListener,
}

fn servers(world: &World) -> Servers {
    let folder = world.sandbox.root().join("sockets");
    std::fs::create_dir_all(&folder).unwrap();
    let stream = UnixListener::bind(folder.join("stream.sock")).unwrap();
    stream.set_nonblocking(true).unwrap();
    let datagram = UnixDatagram::bind(folder.join("datagram.sock")).unwrap();
    datagram.set_nonblocking(true).unwrap();
    // One per world: the tests run at once.
    let abstract_name = format!(
        "pi-hooks-test-{}-{}",
        std::process::id(),
        world.sandbox.root().file_name().unwrap().to_string_lossy()
    );
    let address = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
    let abstract_listener = UnixListener::bind_addr(&address).unwrap();
    abstract_listener.set_nonblocking(true).unwrap();
    Servers {
        folder,
        stream,
        datagram,
        abstract_name,
        abstract_listener,
    }
}

fn attacks(servers: &Servers) -> Vec<String> {
    let stream = servers.folder.join("stream.sock");
    let datagram = servers.folder.join("datagram.sock");
    let bound = servers.folder.join("bound.sock");
    vec![
        format!("unix {}", stream.display()),
        format!("dgram {}", datagram.display()),
        format!("dgrammsg {}", datagram.display()),
        format!("dgrammmsg {}", datagram.display()),
        format!("abstract {}", servers.abstract_name),
        format!("bind {}", bound.display()),
        "pairmmsg".to_owned(),
        "after".to_owned(),
    ]
}

fn run_attacks(world: &World, settings: &Value, attacks: &[String]) -> Run {
    let prompts: Vec<&str> = attacks.iter().map(String::as_str).collect();
    run(world, settings, &[], &prompts)
}

/// How many datagrams wait on `socket`.
fn datagrams(socket: &UnixDatagram) -> usize {
    let mut buffer = [0u8; 16];
    let mut count = 0;
    while let Ok(n) = socket.recv(&mut buffer) {
        assert_eq!(&buffer[..n], b"hi");
        count += 1;
    }
    count
}

#[test]
fn unix_sockets_outside_the_grant_are_refused_and_named() {
    let world = world();
    let servers = servers(&world);
    let settings = json!({"sandbox": {(world.key()): {"read": ["${cwd}"], "network": false}}});
    let run = run_attacks(&world, &settings, &attacks(&servers));
    for (attack, expected) in [
        ("unix", "unix: failed Permission denied"),
        ("dgram", "dgram: failed Permission denied"),
        ("dgrammsg", "dgrammsg: failed Permission denied"),
        ("dgrammmsg", "dgrammmsg: failed Permission denied"),
        ("abstract", "abstract: failed Operation not permitted"),
        ("bind", "bind: failed Permission denied"),
    ] {
        assert_eq!(run.outcome(attack), expected, "{attack}\n{}", run.stderr());
    }
    assert_eq!(run.ran, ["echo after"]);
    // Nothing reached the servers, and no socket file was made.
    assert!(servers.stream.accept().is_err());
    assert_eq!(datagrams(&servers.datagram), 0);
    assert!(servers.abstract_listener.accept().is_err());
    assert!(!servers.folder.join("bound.sock").exists());
    // Named, with the socket's path (or name) and the grant.
    let stream = servers.folder.join("stream.sock");
    let datagram = servers.folder.join("datagram.sock");
    let report = run.report(&format!("connect of {} denied", stream.display()));
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("the grant of plugin hostile"),
        "{report}"
    );
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains("does not let it write there"),
        "{report}"
    );
    run.report(&format!("sendto of {} denied", datagram.display()));
    assert_eq!(
        run.reports_with(&format!("sendmsg of {} denied", datagram.display())),
        2,
        "{:?}",
        run.errors
    );
    run.report(&format!(
        "connect to the abstract Unix socket @{} denied",
        servers.abstract_name
    ));
    run.report(&format!(
        "bind of {} denied",
        servers.folder.join("bound.sock").display()
    ));
}

#[test]
fn unix_sockets_in_the_write_grant_are_reached_and_abstract_ones_with_the_network() {
    let world = world();
    let servers = servers(&world);
    let folder = servers.folder.display().to_string();
    // The socket in the write grant: reached; the abstract one still needs the network.
    let settings = json!({"sandbox": {(world.key()): {"write": [folder], "network": false}}});
    let run = run_attacks(&world, &settings, &attacks(&servers));
    for attack in ["unix", "dgram", "dgrammsg", "dgrammmsg", "bind"] {
        assert_eq!(
            run.outcome(attack),
            format!("{attack}: ok"),
            "{}",
            run.stderr()
        );
    }
    assert_eq!(
        run.outcome("abstract"),
        "abstract: failed Operation not permitted"
    );
    assert_eq!(run.outcome("pairmmsg"), "pairmmsg: ok 3 3 lengths 1 2 3");
    let (mut peer, _) = servers.stream.accept().unwrap();
    peer.set_nonblocking(false).unwrap();
    let mut got = String::new();
    peer.read_to_string(&mut got).unwrap();
    assert_eq!(got, "hi");
    assert_eq!(datagrams(&servers.datagram), 3);
    assert!(servers.folder.join("bound.sock").exists());
    assert_eq!(run.sandbox_reports(), 1, "{:?}", run.errors);

    // With the network, the abstract socket is reached too.
    let settings = json!({"sandbox": {(world.key()): {"network": true}}});
    let abstract_only = [format!("abstract {}", servers.abstract_name)];
    let run = run_attacks(&world, &settings, &abstract_only);
    assert_eq!(run.outcome("abstract"), "abstract: ok", "{}", run.stderr());
    assert!(servers.abstract_listener.accept().is_ok());
}

#[test]
fn a_program_the_plugin_runs_reaches_no_unix_socket_without_the_network() {
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: the program it runs, /usr/bin/python3, is not on this machine");
        return;
    }
    let world = world();
    let servers = servers(&world);
    let stream = servers.folder.join("stream.sock");
    let folder = servers.folder.display().to_string();
    // The socket is in the write grant, but a program's address cannot be checked.
    let settings = json!({"sandbox": {(world.key()): {
        "write": [folder], "exec": ["/usr/bin/python3"], "network": false}}});
    let attack = [format!("runconnect {}", stream.display())];
    let run = run_attacks(&world, &settings, &attack);
    assert_eq!(
        run.outcome("runconnect"),
        "runconnect: failed status 1",
        "{}",
        run.stderr()
    );
    assert!(servers.stream.accept().is_err());
    run.report("connect to an address of a program it runs denied: the sandbox cannot check a program's addresses");
    // With the network, it runs (unchecked: see the module text of
    // loader/host/src/sandbox/supervisor/mod.rs).
    let settings = json!({"sandbox": {(world.key()): {
        "write": [folder], "exec": ["/usr/bin/python3"], "network": true}}});
    let run = run_attacks(&world, &settings, &attack);
    assert_eq!(
        run.outcome("runconnect"),
        "runconnect: ok",
        "{}",
        run.stderr()
    );
    assert!(servers.stream.accept().is_ok());
}

#[test]
fn metadata_outside_the_grant_is_refused_and_named() {
    let world = world();
    let home = world.sandbox.home();
    let key = home.join(".ssh/id_rsa");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    let readable = world.sandbox.project().join("readable.txt");
    std::fs::write(&readable, "x").unwrap();
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mine = home.join("out/mine.txt");
    std::fs::write(&mine, "x").unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o600)).unwrap();
    let key_time = std::fs::metadata(&key).unwrap().modified().unwrap();
    let settings = json!({"sandbox": {(world.key()): {
        "read": ["${cwd}"], "write": ["~/out"], "network": false}}});
    let key_text = key.display().to_string();
    let run = run_attacks(
        &world,
        &settings,
        &[
            format!("chmod {key_text}"),
            format!("fchmod {}", readable.display()),
            format!("chown {key_text}"),
            format!("touch {key_text}"),
            format!("xattr {key_text}"),
            format!("watch {}", home.display()),
            "after".to_owned(),
        ],
    );
    for (attack, expected) in [
        ("chmod", "chmod: failed Permission denied"),
        ("fchmod", "fchmod: failed Permission denied"),
        ("chown", "chown: failed Permission denied"),
        ("touch", "touch: failed Permission denied"),
        ("xattr", "xattr: failed Permission denied"),
        ("watch", "watch: failed Permission denied"),
    ] {
        assert_eq!(run.outcome(attack), expected, "{attack}\n{}", run.stderr());
    }
    assert_eq!(run.ran, ["echo after"]);
    // Unchanged.
    let mode = |p: &PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&key), 0o600);
    assert_eq!(mode(&readable), 0o600);
    assert_eq!(
        std::fs::metadata(&key).unwrap().modified().unwrap(),
        key_time
    );
    // Named, with the file and the grant.
    for (verb, path) in [
        ("chmod", &key),
        ("chmod", &readable),
        ("chown", &key),
        ("utimensat", &key),
        ("setxattr", &key),
    ] {
        let report = run.report(&format!("{verb} of {} denied", path.display()));
        assert!(
            report["error"]
                .as_str()
                .unwrap()
                .contains("does not let it write there"),
            "{report}"
        );
    }
    run.report(&format!(
        "inotify_add_watch of {} denied: the grant of plugin hostile",
        home.display()
    ));

    // In the grant: each succeeds.
    let out = home.join("out");
    let run = run_attacks(
        &world,
        &settings,
        &[
            format!("chmod {}", mine.display()),
            format!("touch {}", mine.display()),
            format!("watch {}", out.display()),
            format!("watch {}", world.sandbox.project().display()),
        ],
    );
    assert_eq!(run.outcome("chmod"), "chmod: ok 644", "{}", run.stderr());
    assert_eq!(mode(&mine), 0o644);
    assert_eq!(run.outcome("touch"), "touch: ok");
    assert_eq!(
        std::fs::metadata(&mine).unwrap().modified().unwrap(),
        std::time::UNIX_EPOCH
    );
    assert_eq!(run.outcome("watch"), "watch: ok");
    assert_eq!(run.sandbox_reports(), 0, "{:?}", run.errors);

    // A copy the plugin forks (with `exec` granted) is held to the same: refused, named.
    let settings = json!({"sandbox": {(world.key()): {
        "read": ["${cwd}"], "write": ["~/out"], "exec": ["/bin/true"], "network": false}}});
    let run = run_attacks(&world, &settings, &[format!("forkchmod {key_text}")]);
    assert_eq!(
        run.outcome("forkchmod"),
        "forkchmod: failed Permission denied",
        "{}",
        run.stderr()
    );
    assert_eq!(mode(&key), 0o600);
    run.report("chmod to a process it forked denied");
}

#[test]
fn a_host_list_reaches_its_hosts_only_and_names_the_rest() {
    let world = world();
    let port = world.listener.local_addr().unwrap().port();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other_port = other.local_addr().unwrap().port();
    // `localhost` is mapped by /etc/hosts (so its loopback address is the machine's own
    // choice, not a DNS answer), with the port of the first listener only.
    let settings = json!({"sandbox": {(world.key()): {"network": [format!("localhost:{port}")]}}});
    let one = |attack: String| {
        let run = run_attacks(&world, &settings, &[attack]);
        (run.outcome("tcp").to_owned(), run)
    };
    let (reached, run) = one(format!("tcp localhost {port}"));
    assert_eq!(reached, "tcp: ok 127.0.0.1", "{}", run.stderr());
    assert_eq!(run.sandbox_reports(), 0, "{:?}", run.errors);
    let (refused, run) = one(format!("tcp 127.0.0.1 {other_port}"));
    assert_eq!(refused, "tcp: failed Permission denied");
    let report = run.report(&format!("connect to 127.0.0.1:{other_port} denied"));
    assert!(
        report["error"]
            .as_str()
            .unwrap()
            .contains(&format!("allows network: localhost:{port}")),
        "{report}"
    );
    let (refused, run) = one("tcp 192.0.2.1 443".to_owned());
    assert_eq!(refused, "tcp: failed Permission denied");
    run.report("connect to 192.0.2.1:443 denied: not a public address");
    // A server (a TCP port to listen on) is not granted by a host list.
    let run = run_attacks(&world, &settings, &["listen".to_owned()]);
    assert_eq!(run.outcome("listen"), "listen: failed Permission denied");
    run.report("bind to 127.0.0.1:0 denied: a list of hosts grants connecting to them");

    // A literal address of the grant.
    let settings =
        json!({"sandbox": {(world.key()): {"network": [format!("127.0.0.1:{other_port}")]}}});
    let run = run_attacks(&world, &settings, &[format!("tcp 127.0.0.1 {other_port}")]);
    assert_eq!(run.outcome("tcp"), "tcp: ok 127.0.0.1", "{}", run.stderr());
}

#[test]
fn with_the_network_names_resolve_and_the_ca_certificates_are_read() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"network": true}}});
    let run = run_attacks(
        &world,
        &settings,
        &["resolve localhost".to_owned(), "ca".to_owned()],
    );
    assert_eq!(
        run.outcome("resolve"),
        "resolve: ok 127.0.0.1",
        "{}",
        run.stderr()
    );
    assert_eq!(run.outcome("ca"), "ca: ok -----BEGIN CERTIFICATE-----");
    // Without the network, the CA certificates are not read.
    let settings = json!({"sandbox": {(world.key()): {"network": false}}});
    let run = run_attacks(&world, &settings, &["ca".to_owned()]);
    assert_eq!(run.outcome("ca"), "ca: failed Permission denied");
}

#[test]
fn a_bad_host_entry_keeps_the_plugin_from_loading_and_is_named() {
    let world = world();
    let settings = json!({"sandbox": {(world.key()): {"network": ["*"]}}});
    let mut args = world.run_args();
    args.push("after");
    let output = world.sandbox.command_of(&world.binary, &args);
    std::fs::write(
        world.sandbox.agent_dir().join("settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let output = pi_hooks_tests::output_within(output, std::time::Duration::from_secs(60));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        all.contains("`capabilities.network` entry \\\"*\\\"")
            || all.contains("`capabilities.network` entry \"*\""),
        "{all}"
    );
}

/// The cost of `stat` and of a checked call confined (for BENCHMARKS.md): a loop of 200,000
/// `stat` calls of a file in the grant (with `CHECK_LOOKS` of
/// `loader/host/src/sandbox/supervisor/checked.rs` on, each confined one is a round trip to
/// the supervisor), and of 20,000 datagrams sent with `sendto` to a Unix socket in the write
/// grant (each confined one checked by the supervisor), confined and not, median of five
/// runs. `cargo test -p pi-hooks-tests --test sandbox_supervisor -- --ignored --nocapture`.
#[test]
#[ignore]
fn the_cost_of_stat_and_of_a_checked_send() {
    let world = world();
    let file = world.sandbox.project().join("seen.txt");
    std::fs::write(&file, "x").unwrap();
    let confined = json!({"sandbox": {(world.key()): {"read": ["${cwd}"]}}});
    let unconfined = json!({});
    for (label, settings) in [("unconfined", &unconfined), ("confined", &confined)] {
        let mut costs: Vec<f64> = (0..5)
            .map(|_| {
                let run = run_attacks(&world, settings, &[format!("statloop {}", file.display())]);
                let outcome = run.outcome("statloop");
                outcome
                    .strip_prefix("statloop: ok ")
                    .unwrap_or_else(|| panic!("{outcome}"))
                    .parse()
                    .unwrap()
            })
            .collect();
        costs.sort_by(f64::total_cmp);
        println!(
            "stat, {label}: median {:.0} ns per call ({costs:?})",
            costs[2]
        );
    }
    let servers = servers(&world);
    let socket = servers.folder.join("datagram.sock");
    let drain = servers.datagram.try_clone().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let draining = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 16];
            drain.set_nonblocking(false).unwrap();
            drain
                .set_read_timeout(Some(std::time::Duration::from_millis(20)))
                .unwrap();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = drain.recv(&mut buffer);
            }
        })
    };
    let folder = servers.folder.display().to_string();
    let confined = json!({"sandbox": {(world.key()): {"write": [folder]}}});
    for (label, settings) in [("unconfined", &unconfined), ("confined", &confined)] {
        let mut costs: Vec<f64> = (0..5)
            .map(|_| {
                let run = run_attacks(
                    &world,
                    settings,
                    &[format!("sendloop {}", socket.display())],
                );
                let outcome = run.outcome("sendloop");
                outcome
                    .strip_prefix("sendloop: ok ")
                    .unwrap_or_else(|| panic!("{outcome}"))
                    .parse()
                    .unwrap()
            })
            .collect();
        costs.sort_by(f64::total_cmp);
        println!(
            "sendto, {label}: median {:.0} ns per call ({costs:?})",
            costs[2]
        );
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    draining.join().unwrap();
}
