//! A package's signature checked on any bytes: parse the `package.json`, then verify.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::packages::manifest::parse_package_json;
use pi_hooks_host::packages::verify::verify_signature;

fuzz_target!(|data: &[u8]| {
    if let Ok(package) = parse_package_json(data) {
        let _ = verify_signature(&package, "fuzz");
    }
});
