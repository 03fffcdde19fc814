//! A confined child's `denied` notification, as the host takes it from the protocol: any
//! bytes parsed as a message (`isolate::child::parse_message`), its kind checked
//! (`check_kind`), and a `denied` notification's params vouched for against the grant the
//! host gave the child (`sandbox::report::vouch`). Whatever the bytes, what the host shows
//! names the host's plugin, grant and source, never the child's.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::isolate::child::{check_kind, parse_message};
use pi_hooks_host::sandbox::Grant;
use pi_hooks_host::sandbox::report::{MAX_ACTION_BYTES, MAX_REASON_BYTES, vouch};

fn grant() -> Grant {
    Grant {
        plugin: "gate".into(),
        source: "package \"gate\" 1.0.0".into(),
        read: vec!["/tmp/gate".into()],
        write: Vec::new(),
        network: pi_hooks_host::packages::manifest::Network::None,
        exec: vec!["git".into()],
        exec_paths: Vec::new(),
        memory_mib: Some(64),
        data: std::path::PathBuf::new(),
    }
}

fuzz_target!(|data: &[u8]| {
    let grant = grant();
    // The bytes as a whole notification, and as its params alone.
    let mut candidates = Vec::new();
    if let Ok(message) = parse_message(data) {
        if check_kind(&message).is_ok() {
            candidates.push(message.get("params").cloned().unwrap_or_default());
        }
        candidates.push(message);
    }
    for params in candidates {
        let Ok(shown) = vouch(&params, Some(&grant)) else {
            continue;
        };
        assert_eq!(shown["plugin"], grant.plugin.as_str());
        assert_eq!(shown["grant"], grant.summary().as_str());
        assert_eq!(shown["source"], grant.source.as_str());
        assert!(shown["action"].as_str().unwrap().len() <= MAX_ACTION_BYTES);
        assert!(shown["reason"].as_str().unwrap().len() <= MAX_REASON_BYTES);
        assert!(vouch(&params, None).is_err());
    }
});
