//! A package's signature checked on any bytes: the first line is the minisign public key
//! (`piHooks.publicKey`), the rest the text of `pi-hooks.sig`; a signature that opens is
//! checked against the statement it signs.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::packages::signature::{check_statement, open_signature};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (key, signature) = text.split_once('\n').unwrap_or(("", &text));
    if let Ok(statement) = open_signature(signature, key, "fuzz") {
        let _ = check_statement(
            &statement,
            &statement.name,
            &statement.version,
            &statement.files,
            "fuzz",
        );
    }
});
