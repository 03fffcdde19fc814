//! `parse_package_json` on any bytes; what it accepts is described as the install prompt
//! would show it.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::packages::manifest::{Capabilities, parse_package_json};

fuzz_target!(|data: &[u8]| {
    if let Ok(package) = parse_package_json(data) {
        let _ = Capabilities::describe(package.manifest.capabilities.as_ref());
    }
});
