//! A grant from any bytes: as a settings file's `sandbox` object
//! (`SettingsGrant::list_from_settings_value`) and as a manifest's `capabilities`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pi_hooks_host::packages::manifest::Capabilities;
use pi_hooks_host::sandbox::SettingsGrant;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(grants) = SettingsGrant::list_from_settings_value(&value) {
            for grant in &grants {
                let _ = Capabilities::describe(grant.capabilities.as_ref());
            }
        }
    }
    if let Ok(capabilities) = serde_json::from_slice::<Capabilities>(data) {
        let _ = Capabilities::describe(Some(&capabilities));
    }
});
