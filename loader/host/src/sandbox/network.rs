//! Network grants by host name: `"network": ["api.github.com", "*.slack.com:443",
//! "127.0.0.1:8080"]`.
//!
//! An entry ([`HostRule::parse`], checked where capabilities are read) is a host name, a
//! wildcard `*.name` (any name beneath it, not `name` itself), or a literal IPv4 or IPv6
//! address (`[::1]:443` with a port), each with an optional `:PORT` (any port without).
//!
//! How it holds: with a host list the child may make Internet sockets, and every `connect`,
//! `sendto` with an address, `sendmsg` and `sendmmsg` goes to the supervisor
//! (`super::supervisor`), which copies the address, checks it here (`check`) and makes
//! the call from its copy, or refuses it (`EACCES`) and names the host or address. An
//! address is allowed when
//! - it is a literal of the grant (with its port, if one is given);
//! - it is among the addresses a granted name resolves to (and the port matches): the names
//!   are resolved by a thread of the child of their own (`start`, not under the notifying
//!   filter; the child's DNS goes to the system's resolvers), again every 30 s, and at
//!   once (the check waits for it, at most 1.5 s) when an address
//!   is not known: a name whose addresses rotate is resolved again. A wildcard's names are
//!   those the plugin itself asked the resolvers about: its DNS queries (a `send` to port 53
//!   of a resolver of `/etc/resolv.conf`) are read by the supervisor, and a name beneath a
//!   granted wildcard is resolved by that thread as a granted name is;
//! - it is port 53 of a resolver of `/etc/resolv.conf` (DNS).
//!
//!   A private, loopback, link-local or otherwise non-public address is refused unless a
//!   literal of the grant names it, or the granted name it resolved from is one
//!   `/etc/hosts` maps to it (the machine's own configuration; a name whose DNS answer is
//!   private is a rebinding, refused).
//!
//! Landlock cannot filter TCP by name, so with a host list it handles only binding (no TCP
//! port to listen on): the supervisor is the gate for connecting, and `io_uring` (which makes
//! sockets and connects without a system call the filter sees) must be refused by the seccomp
//! filter. Not covered: what a granted host relays (a proxy, a CONNECT tunnel); a plugin
//! that resolves a name through another channel than the system's resolvers (DNS over
//! HTTPS to a granted host) learns addresses no wildcard check saw, and those are refused.

use std::net::IpAddr;

/// One entry of a host list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostRule {
    /// What it names.
    pub host: Host,
    /// The one port it allows (`None`: any).
    pub port: Option<u16>,
}

/// What a host entry names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A host name, lower case, without a final dot.
    Name(String),
    /// `*.suffix`: any name beneath `suffix` (lower case).
    Beneath(String),
    /// A literal address.
    Literal(IpAddr),
}

impl HostRule {
    /// Reads one entry of a host list; `Err` says what is wrong and what to write.
    pub fn parse(entry: &str) -> Result<HostRule, String> {
        const HOW: &str = "write a host name (api.github.com), a wildcard (*.slack.com) or an address (203.0.113.7, [2001:db8::1]), each with an optional :PORT";
        if entry.is_empty() {
            return Err(format!("is empty; {HOW}"));
        }
        if entry.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!("holds spaces or control characters; {HOW}"));
        }
        let port = |text: &str| -> Result<u16, String> {
            match text.parse::<u16>() {
                Ok(port) if port > 0 => Ok(port),
                _ => Err(format!(
                    "has the port {text:?}, not a number from 1 to 65535"
                )),
            }
        };
        // [v6]:port, or a bare v6 address.
        if let Some(rest) = entry.strip_prefix('[') {
            let Some((address, after)) = rest.split_once(']') else {
                return Err(format!("opens [ without closing it; {HOW}"));
            };
            let address: std::net::Ipv6Addr = address
                .parse()
                .map_err(|_| format!("is not an IPv6 address between [ ]; {HOW}"))?;
            let port = match after {
                "" => None,
                _ => Some(port(after.strip_prefix(':').ok_or_else(|| {
                    format!("has {after:?} after the address; {HOW}")
                })?)?),
            };
            return Ok(HostRule {
                host: Host::Literal(IpAddr::V6(address)),
                port,
            });
        }
        if let Ok(address) = entry.parse::<IpAddr>() {
            return Ok(HostRule {
                host: Host::Literal(address),
                port: None,
            });
        }
        let (host, port) = match entry.rsplit_once(':') {
            Some((host, text)) => (host, Some(port(text)?)),
            None => (entry, None),
        };
        if let Ok(address) = host.parse::<std::net::Ipv4Addr>() {
            return Ok(HostRule {
                host: Host::Literal(IpAddr::V4(address)),
                port,
            });
        }
        let lower = host.trim_end_matches('.').to_ascii_lowercase();
        let (wildcard, name) = match lower.strip_prefix("*.") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, lower.clone()),
        };
        if name.contains('*') {
            return Err(format!(
                "has a * that is not a leading `*.`; {HOW} (true grants every host)"
            ));
        }
        if name.is_empty() || name.len() > 253 {
            return Err(format!("is not a host name; {HOW}"));
        }
        for label in name.split('.') {
            let fine = !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !fine {
                return Err(format!(
                    "is not a host name (the part {label:?}: letters, digits and - only); {HOW}"
                ));
            }
        }
        if wildcard && !name.contains('.') {
            return Err(format!(
                "grants every name beneath {name:?}, a whole top-level domain; name a domain beneath it (such as *.example.{name})"
            ));
        }
        Ok(HostRule {
            host: if wildcard {
                Host::Beneath(name)
            } else {
                Host::Name(name)
            },
            port,
        })
    }

    /// Whether `network` is a host list with a wildcard (`*.name`).
    pub fn any_wildcard(network: &crate::packages::manifest::Network) -> bool {
        match network {
            crate::packages::manifest::Network::Hosts(hosts) => hosts
                .iter()
                .any(|h| HostRule::parse(h).is_ok_and(|r| matches!(r.host, Host::Beneath(_)))),
            _ => false,
        }
    }
}

/// Checks every entry of a host list (`Err` names the first bad one).
pub fn check_hosts(hosts: &[String]) -> Result<(), String> {
    for entry in hosts {
        HostRule::parse(entry).map_err(|e| {
            format!(
                "`capabilities.network` entry \"{}\" {e}",
                crate::guards::display::escape(entry)
            )
        })?;
    }
    Ok(())
}

/// Whether `address` is one anyone on the Internet could be reached at (not private,
/// loopback, link-local, unspecified, multicast, shared or documentation space).
pub fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || (a == 198 && (b == 18 || b == 19))
                || a >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || first & 0xfe00 == 0xfc00
                || first & 0xffc0 == 0xfe80
                || first == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}

#[cfg(target_os = "linux")]
pub use resolver::{check, show, start};

#[cfg(target_os = "linux")]
mod resolver {
    use super::{Host, HostRule, is_public};
    use crate::sandbox::Grant;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::time::{Duration, Instant};

    /// How often the granted names are resolved again.
    pub const REFRESH: Duration = Duration::from_secs(30);
    /// How long a check of an unknown address waits for the names to be resolved again.
    pub const MISS_WAIT: Duration = Duration::from_millis(1500);

    /// Most addresses known at once.
    const ENTRIES: usize = 512;
    /// Most wildcard names waiting to be resolved.
    const ASKED: usize = 16;

    /// One allowed address.
    #[derive(Clone, Copy)]
    struct Entry {
        address: [u8; 16],
        /// 0: any port.
        port: u16,
    }

    /// What the check reads: fixed-size, so that the supervisor allocates nothing and the
    /// resolver holds the lock only to copy.
    struct Table {
        entries: [Entry; ENTRIES],
        len: usize,
        /// Incremented at every resolution.
        generation: u64,
        /// A refresh was asked for.
        wanted: bool,
        /// Names the plugin asked DNS about, beneath a wildcard, waiting to be resolved.
        asked: [[u8; 256]; ASKED],
        asked_len: [usize; ASKED],
        asked_count: usize,
    }

    /// A table with nothing in it.
    const EMPTY: Table = Table {
        entries: [Entry {
            address: [0; 16],
            port: 0,
        }; ENTRIES],
        len: 0,
        generation: 0,
        wanted: false,
        asked: [[0; 256]; ASKED],
        asked_len: [0; ASKED],
        asked_count: 0,
    };

    static TABLE: Mutex<Table> = Mutex::new(EMPTY);
    static CHANGED: Condvar = Condvar::new();
    /// Whether the grant has a wildcard (the supervisor then reads DNS queries).
    static WILDCARDS: AtomicBool = AtomicBool::new(false);
    /// Literal rules and resolvers: fixed, set once at start.
    static FIXED: Mutex<Table> = Mutex::new(EMPTY);
    static RESOLVERS: AtomicUsize = AtomicUsize::new(0);

    fn key(address: IpAddr) -> [u8; 16] {
        match address {
            IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            IpAddr::V6(v6) => v6.octets(),
        }
    }

    /// The address and port of a socket address's bytes (`None`: not AF_INET/AF_INET6).
    fn parse(address: &[u8]) -> Option<(IpAddr, u16)> {
        if address.len() < 2 {
            return None;
        }
        let family = i32::from(u16::from_ne_bytes([address[0], address[1]]));
        match family {
            libc::AF_INET if address.len() >= 8 => {
                let port = u16::from_be_bytes([address[2], address[3]]);
                let ip = Ipv4Addr::new(address[4], address[5], address[6], address[7]);
                Some((IpAddr::V4(ip), port))
            }
            libc::AF_INET6 if address.len() >= 24 => {
                let port = u16::from_be_bytes([address[2], address[3]]);
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&address[8..24]);
                Some((IpAddr::V6(Ipv6Addr::from(octets)), port))
            }
            _ => None,
        }
    }

    /// Writes the address of `address` as text (`203.0.113.7:443`) into `out`; its length.
    pub fn show(address: &[u8], out: &mut [u8]) -> usize {
        use std::io::Write;
        let len = out.len();
        let mut cursor = &mut out[..len.saturating_sub(1)];
        let before = cursor.len();
        let _ = match parse(address) {
            Some((ip, port)) => write!(cursor, "{}", SocketAddr::new(ip, port)),
            None => write!(cursor, "an address of an unknown family"),
        };
        before - cursor.len()
    }

    fn found(table: &Table, address: [u8; 16], port: u16) -> bool {
        table.entries[..table.len]
            .iter()
            .any(|e| e.address == address && (e.port == 0 || e.port == port))
    }

    /// Writes `text` into `why`; its length.
    fn say(why: &mut [u8; 256], text: &str) -> usize {
        let len = text.len().min(why.len());
        why[..len].copy_from_slice(&text.as_bytes()[..len]);
        len
    }

    /// Checks the socket address `address` against the grant's hosts; `Err`: the length of
    /// why it is refused, written into `why`. Allocates nothing; may wait (at most
    /// `MISS_WAIT`) for the names to be resolved again.
    pub fn check(address: &[u8], why: &mut [u8; 256]) -> Result<(), usize> {
        let Some((ip, port)) = parse(address) else {
            return Err(say(why, "not an Internet address"));
        };
        let wanted = key(ip);
        if found(&lock(&FIXED), wanted, port) {
            return Ok(());
        }
        let mut table = lock(&TABLE);
        if found(&table, wanted, port) {
            return Ok(());
        }
        // Unknown: resolve the names again (a rotating name, a wildcard's name just asked),
        // and look again after each resolution (the one under way when this was asked may
        // not have had the name yet).
        let deadline = Instant::now() + MISS_WAIT;
        loop {
            let generation = table.generation;
            table.wanted = true;
            CHANGED.notify_all();
            while table.generation == generation {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                table = CHANGED
                    .wait_timeout(table, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            if found(&table, wanted, port) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                break;
            }
        }
        Err(say(
            why,
            if is_public(ip) {
                "no granted host resolves to it (on that port)"
            } else {
                "not a public address: only a literal address of the grant, or a granted name /etc/hosts maps there, reaches one (on its port)"
            },
        ))
    }

    fn lock(table: &'static Mutex<Table>) -> std::sync::MutexGuard<'static, Table> {
        table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Notes the DNS query the plugin sends (`payload`, a DNS message; `stream`: over TCP,
    /// after its length) to a resolver: a name beneath a granted wildcard is resolved.
    /// Allocates nothing.
    pub fn note_query(payload: &[u8], stream: bool) {
        if !WILDCARDS.load(Ordering::Relaxed) {
            return;
        }
        let message = if stream {
            payload.get(2..).unwrap_or_default()
        } else {
            payload
        };
        let mut name = [0u8; 256];
        let Some(len) = query_name(message, &mut name) else {
            return;
        };
        let mut table = lock(&TABLE);
        if table.asked_count < ASKED
            && !(0..table.asked_count).any(|i| table.asked[i][..table.asked_len[i]] == name[..len])
        {
            let at = table.asked_count;
            table.asked[at][..len].copy_from_slice(&name[..len]);
            table.asked_len[at] = len;
            table.asked_count += 1;
            table.wanted = true;
            CHANGED.notify_all();
        }
    }

    /// Whether `address` (a socket address's bytes) is port 53 of a resolver.
    pub fn is_resolver(address: &[u8]) -> bool {
        let Some((ip, 53)) = parse(address) else {
            return false;
        };
        let resolvers = RESOLVERS.load(Ordering::Relaxed);
        let fixed = lock(&FIXED);
        fixed.entries[..resolvers.min(fixed.len)]
            .iter()
            .any(|e| e.address == key(ip))
    }

    /// Whether wildcards are granted (the supervisor reads the plugin's DNS queries).
    pub fn wildcards() -> bool {
        WILDCARDS.load(Ordering::Relaxed)
    }

    /// The first question's name of the DNS message `message`, lower case, dotted, into
    /// `out`; its length.
    fn query_name(message: &[u8], out: &mut [u8; 256]) -> Option<usize> {
        let mut at = 12;
        let mut len = 0;
        loop {
            let label = *message.get(at)? as usize;
            if label == 0 {
                break;
            }
            if label > 63 {
                return None;
            }
            let text = message.get(at + 1..at + 1 + label)?;
            if len + label + 1 > out.len() {
                return None;
            }
            if len > 0 {
                out[len] = b'.';
                len += 1;
            }
            for (i, b) in text.iter().enumerate() {
                out[len + i] = b.to_ascii_lowercase();
            }
            len += label;
            at += 1 + label;
        }
        (len > 0).then_some(len)
    }

    /// The resolvers of `/etc/resolv.conf`.
    fn resolvers() -> Vec<IpAddr> {
        std::fs::read_to_string("/etc/resolv.conf")
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                (words.next() == Some("nameserver"))
                    .then(|| words.next())
                    .flatten()
                    .and_then(|a| a.split('%').next()?.parse().ok())
            })
            .collect()
    }

    /// The addresses `/etc/hosts` maps `name` to.
    fn hosts_file(name: &str) -> Vec<IpAddr> {
        std::fs::read_to_string("/etc/hosts")
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let line = line.split('#').next()?;
                let mut words = line.split_whitespace();
                let address: IpAddr = words.next()?.parse().ok()?;
                words
                    .any(|w| w.eq_ignore_ascii_case(name))
                    .then_some(address)
            })
            .collect()
    }

    /// The addresses `name` resolves to, by the system's resolver.
    fn resolve(name: &str) -> Vec<IpAddr> {
        use std::net::ToSocketAddrs;
        (name, 0)
            .to_socket_addrs()
            .map(|found| found.map(|a| a.ip()).collect())
            .unwrap_or_default()
    }

    /// The entries one name gives: its addresses with the rule's port, a non-public one
    /// only where `/etc/hosts` maps the name there.
    fn entries_of(name: &str, rule: &HostRule, into: &mut Vec<Entry>) {
        let trusted = hosts_file(name);
        for ip in resolve(name) {
            if is_public(ip) || trusted.contains(&ip) {
                into.push(Entry {
                    address: key(ip),
                    port: rule.port.unwrap_or(0),
                });
            }
        }
    }

    /// Starts resolving `grant`'s host names on a thread of its own (call it before the
    /// notifying filter is installed: its own DNS is not checked). Also for a grant
    /// without a host list, nothing.
    pub fn start(grant: &Grant) -> std::io::Result<()> {
        let crate::packages::manifest::Network::Hosts(hosts) = &grant.network else {
            return Ok(());
        };
        let rules: Vec<HostRule> = hosts
            .iter()
            .filter_map(|h| HostRule::parse(h).ok())
            .collect();
        {
            let mut fixed = lock(&FIXED);
            let mut fixed_entries = Vec::new();
            for ip in resolvers() {
                fixed_entries.push(Entry {
                    address: key(ip),
                    port: 53,
                });
            }
            RESOLVERS.store(fixed_entries.len(), Ordering::Relaxed);
            for rule in &rules {
                if let Host::Literal(ip) = rule.host {
                    fixed_entries.push(Entry {
                        address: key(ip),
                        port: rule.port.unwrap_or(0),
                    });
                }
            }
            let len = fixed_entries.len().min(ENTRIES);
            fixed.entries[..len].copy_from_slice(&fixed_entries[..len]);
            fixed.len = len;
        }
        let wildcards: Vec<HostRule> = rules
            .iter()
            .filter(|r| matches!(r.host, Host::Beneath(_)))
            .cloned()
            .collect();
        WILDCARDS.store(!wildcards.is_empty(), Ordering::Relaxed);
        let names: Vec<HostRule> = rules
            .into_iter()
            .filter(|r| matches!(r.host, Host::Name(_)))
            .collect();
        std::thread::Builder::new()
            .name("pi-hooks-sandbox-resolver".into())
            .spawn(move || {
                crate::sandbox::supervisor::block_signals();
                // Wildcard names the plugin asked about, kept (resolved again with the rest).
                let mut asked: Vec<(String, HostRule)> = Vec::new();
                loop {
                    let mut entries = Vec::new();
                    for rule in &names {
                        if let Host::Name(name) = &rule.host {
                            entries_of(name, rule, &mut entries);
                        }
                    }
                    for (name, rule) in &asked {
                        entries_of(name, rule, &mut entries);
                    }
                    let mut table = lock(&TABLE);
                    let len = entries.len().min(ENTRIES);
                    table.entries[..len].copy_from_slice(&entries[..len]);
                    table.len = len;
                    table.generation += 1;
                    table.wanted = false;
                    CHANGED.notify_all();
                    // Wait for a refresh to be asked for, or the time to do one.
                    let deadline = Instant::now() + REFRESH;
                    while !table.wanted {
                        let left = deadline.saturating_duration_since(Instant::now());
                        if left.is_zero() {
                            break;
                        }
                        table = CHANGED
                            .wait_timeout(table, left)
                            .unwrap_or_else(|e| e.into_inner())
                            .0;
                    }
                    // Copied out before anything is allocated: the supervisor takes this lock.
                    let (count, names_asked, lens) =
                        (table.asked_count, table.asked, table.asked_len);
                    table.asked_count = 0;
                    drop(table);
                    for i in 0..count {
                        let name = String::from_utf8_lossy(&names_asked[i][..lens[i]]).into_owned();
                        let Some(rule) = wildcards.iter().find(|r| match &r.host {
                            Host::Beneath(suffix) => {
                                name.len() > suffix.len()
                                    && name.ends_with(suffix.as_str())
                                    && name.as_bytes()[name.len() - suffix.len() - 1] == b'.'
                            }
                            _ => false,
                        }) else {
                            continue;
                        };
                        if !asked.iter().any(|(known, r)| *known == name && r == rule)
                            && asked.len() < 256
                        {
                            asked.push((name, rule.clone()));
                        }
                    }
                }
            })?;
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn reads_the_name_a_dns_query_asks_about() {
            let mut query = vec![0u8; 12];
            for label in ["Files", "slack", "com"] {
                query.push(label.len() as u8);
                query.extend_from_slice(label.as_bytes());
            }
            query.extend_from_slice(&[0, 0, 1, 0, 1]);
            let mut name = [0u8; 256];
            let len = query_name(&query, &mut name).unwrap();
            assert_eq!(&name[..len], b"files.slack.com");
            assert_eq!(query_name(&query[..15], &mut name), None);
        }

        #[test]
        fn shows_and_parses_socket_addresses() {
            let mut bytes = [0u8; 16];
            bytes[..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
            bytes[2..4].copy_from_slice(&443u16.to_be_bytes());
            bytes[4..8].copy_from_slice(&[203, 0, 113, 7]);
            let mut out = [0u8; 64];
            let len = show(&bytes, &mut out);
            assert_eq!(&out[..len], b"203.0.113.7:443");
        }
    }
}

#[cfg(target_os = "linux")]
pub use resolver::{is_resolver, note_query, wildcards};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_host_entries_and_names_a_bad_one() {
        let rule = |e: &str| HostRule::parse(e).unwrap();
        assert_eq!(
            rule("API.github.com"),
            HostRule {
                host: Host::Name("api.github.com".into()),
                port: None
            }
        );
        assert_eq!(
            rule("*.slack.com:443"),
            HostRule {
                host: Host::Beneath("slack.com".into()),
                port: Some(443)
            }
        );
        assert_eq!(rule("127.0.0.1:8080").port, Some(8080));
        assert_eq!(rule("[::1]:22").host, Host::Literal("::1".parse().unwrap()));
        assert_eq!(rule("2001:db8::1").port, None);
        for (bad, why) in [
            ("", "is empty"),
            ("*", "not a leading"),
            ("*.com", "whole top-level domain"),
            ("a.*.com", "not a leading"),
            ("host:0", "from 1 to 65535"),
            ("host:http", "from 1 to 65535"),
            ("bad host", "spaces"),
            ("-x.com", "letters, digits"),
            ("[::1", "without closing"),
            ("x..com", "letters, digits"),
        ] {
            let e = HostRule::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        let e = check_hosts(&["ok.com".into(), "*".into()]).unwrap_err();
        assert!(e.starts_with("`capabilities.network` entry \"*\""), "{e}");
    }

    #[test]
    fn tells_public_addresses() {
        for public in ["1.1.1.1", "140.82.112.3", "2606:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
    }
}
