//! What a host checks a descriptor against: the layout fingerprint and the struct sizes that
//! each ABI minor defines.

use std::mem::size_of;

use crate::ffi::*;

/// Fingerprint of the ABI source this crate was built from (see `build.rs`): changes with any
/// edit to a type, field, function pointer or constant in `src/ffi`, not with comments.
pub const LAYOUT_FINGERPRINT: u64 = include!(concat!(env!("OUT_DIR"), "/fingerprint.rs"));

/// The fingerprint each released minor had, index = minor. The last entry must equal
/// [`LAYOUT_FINGERPRINT`]; a test fails otherwise, so an ABI edit cannot slip in without
/// either a new minor (append an entry) or a deliberate change before release.
pub const RELEASED_FINGERPRINTS: &[u64] = &[
    0xfad2_28d5_859c_9234,
    0xe243_c031_c00f_dbdb,
    0x2cfe_1107_3f88_c486,
    0x2ea6_12d6_d2e3_4df2,
    0xf44a_4416_3cdc_81dc,
    0x3ca6_bea3_64d9_256b,
    0x57de_cafe_3b1e_531e,
    0x66ff_0e68_cf38_1fd3,
];

/// Sizes of the boundary structs at one ABI minor, on this target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiSizes {
    /// `sizeof(PiPluginDescriptor)`
    pub descriptor: u32,
    /// `sizeof(PiHostApi)`
    pub host_api: u32,
    /// `sizeof(PiValueApi)`
    pub value_api: u32,
    /// `sizeof(PiResultApi)`
    pub result_api: u32,
    /// `sizeof(PiRegistryApi)`
    pub registry_api: u32,
    /// `sizeof(PiActionsApi)`
    pub actions_api: u32,
    /// `sizeof(PiContextApi)`
    pub context_api: u32,
    /// `sizeof(PiUiApi)`
    pub ui_api: u32,
}

impl AbiSizes {
    /// The sizes of the current minor, as compiled.
    pub const CURRENT: AbiSizes = AbiSizes {
        descriptor: size_of::<PiPluginDescriptor>() as u32,
        host_api: size_of::<PiHostApi>() as u32,
        value_api: size_of::<PiValueApi>() as u32,
        result_api: size_of::<PiResultApi>() as u32,
        registry_api: size_of::<PiRegistryApi>() as u32,
        actions_api: size_of::<PiActionsApi>() as u32,
        context_api: size_of::<PiContextApi>() as u32,
        ui_api: size_of::<PiUiApi>() as u32,
    };

    /// The sizes a plugin built for `minor` must declare, or `None` for a minor this build
    /// does not know. Each minor appends to the tables, so an older minor's sizes are the
    /// current ones less what later minors appended.
    pub fn for_minor(minor: u32) -> Option<AbiSizes> {
        /// One function pointer.
        const POINTER: u32 = size_of::<unsafe extern "C" fn()>() as u32;
        /// What minor 2 appended to `PiValueApi`: `new_object` to `json_quote`.
        const VALUE_BUILDERS: u32 = 11 * POINTER;
        // Minor 6: the current tables less minor 7's `PiContextApi::is_project_trusted`,
        // `system_prompt_options` and `thinking_level`.
        let minor_6 = AbiSizes {
            context_api: Self::CURRENT.context_api - 3 * POINTER,
            ..Self::CURRENT
        };
        // Minors 4 and 5 (5 added only the status `PI_ERR_DENIED`): minor 6 less its
        // `PiActionsApi::identity` and `data_dir`.
        let minor_5 = AbiSizes {
            actions_api: minor_6.actions_api - 2 * POINTER,
            ..minor_6
        };
        // Minor 3: minor 4 less its `PiContextApi::is_aborted` and
        // `PiActionsApi::send_user_message_content` and `exec_cancel`.
        let minor_3 = AbiSizes {
            context_api: minor_5.context_api - POINTER,
            actions_api: minor_5.actions_api - 2 * POINTER,
            ..minor_5
        };
        // Minor 2: minor 3 less its `PiValueApi::replace_text`.
        let minor_2 = AbiSizes {
            value_api: minor_3.value_api - POINTER,
            ..minor_3
        };
        // Minor 1: minor 2 less its appendices (the value builders and
        // `PiResultApi::set_from_value`).
        let minor_1 = AbiSizes {
            value_api: minor_2.value_api - VALUE_BUILDERS,
            result_api: minor_2.result_api - POINTER,
            ..minor_2
        };
        match minor {
            // Minor 0: minor 1 less `PiActionsApi::set_model`.
            0 => Some(AbiSizes {
                actions_api: minor_1.actions_api - POINTER,
                ..minor_1
            }),
            1 => Some(minor_1),
            2 => Some(minor_2),
            3 => Some(minor_3),
            4 | 5 => Some(minor_5),
            6 => Some(minor_6),
            7 => Some(Self::CURRENT),
            _ => None,
        }
    }

    /// The sizes a descriptor declares.
    pub fn of_descriptor(d: &PiPluginDescriptor) -> AbiSizes {
        AbiSizes {
            descriptor: d.struct_size,
            host_api: d.host_api_size,
            value_api: d.value_api_size,
            result_api: d.result_api_size,
            registry_api: d.registry_api_size,
            actions_api: d.actions_api_size,
            context_api: d.context_api_size,
            ui_api: d.ui_api_size,
        }
    }

    /// `(struct name, declared, expected)` for every size that differs.
    pub fn mismatches(&self, expected: &AbiSizes) -> Vec<(&'static str, u32, u32)> {
        let pairs = [
            ("PiPluginDescriptor", self.descriptor, expected.descriptor),
            ("PiHostApi", self.host_api, expected.host_api),
            ("PiValueApi", self.value_api, expected.value_api),
            ("PiResultApi", self.result_api, expected.result_api),
            ("PiRegistryApi", self.registry_api, expected.registry_api),
            ("PiActionsApi", self.actions_api, expected.actions_api),
            ("PiContextApi", self.context_api, expected.context_api),
            ("PiUiApi", self.ui_api, expected.ui_api),
        ];
        pairs
            .into_iter()
            .filter(|(_, got, want)| got != want)
            .collect()
    }
}

/// The fingerprint a plugin built for `minor` must carry (when it carries one), if known.
pub fn fingerprint_for_minor(minor: u32) -> Option<u64> {
    RELEASED_FINGERPRINTS.get(minor as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_minor_fingerprint_is_released() {
        assert_eq!(
            RELEASED_FINGERPRINTS.len(),
            PI_HOOKS_ABI_MINOR as usize + 1,
            "RELEASED_FINGERPRINTS needs one entry per minor"
        );
        assert_eq!(
            fingerprint_for_minor(PI_HOOKS_ABI_MINOR),
            Some(LAYOUT_FINGERPRINT),
            "the ABI types in abi/src/ffi changed (fingerprint now {LAYOUT_FINGERPRINT:#018x}). \
             Plugins built before would be misread. Bump PI_HOOKS_ABI_MINOR and append the new \
             fingerprint to RELEASED_FINGERPRINTS (appending fields only), then regenerate the \
             header with scripts/gen-header.sh"
        );
    }

    #[test]
    fn minor_sizes_end_where_the_next_minor_appended() {
        use std::mem::offset_of;
        let one = AbiSizes::for_minor(1).expect("minor 1");
        assert_eq!(one.value_api as usize, offset_of!(PiValueApi, new_object));
        assert_eq!(
            one.result_api as usize,
            offset_of!(PiResultApi, set_from_value)
        );
        let zero = AbiSizes::for_minor(0).expect("minor 0");
        assert_eq!(
            zero.actions_api as usize,
            offset_of!(PiActionsApi, set_model)
        );
        assert_eq!(zero.value_api, one.value_api);
        let two = AbiSizes::for_minor(2).expect("minor 2");
        assert_eq!(two.value_api as usize, offset_of!(PiValueApi, replace_text));
        assert_eq!(two.result_api, AbiSizes::CURRENT.result_api);
        let three = AbiSizes::for_minor(3).expect("minor 3");
        assert_eq!(
            three.context_api as usize,
            offset_of!(PiContextApi, is_aborted)
        );
        assert_eq!(
            three.actions_api as usize,
            offset_of!(PiActionsApi, send_user_message_content)
        );
        assert_eq!(three.value_api, AbiSizes::CURRENT.value_api);
        let four = AbiSizes::for_minor(4).expect("minor 4");
        assert_eq!(
            four.actions_api as usize,
            offset_of!(PiActionsApi, identity)
        );
        let six = AbiSizes::for_minor(6).expect("minor 6");
        assert_eq!(four.context_api, six.context_api);
        assert_eq!(
            six.context_api as usize,
            offset_of!(PiContextApi, is_project_trusted)
        );
        assert_eq!(six.actions_api, AbiSizes::CURRENT.actions_api);
        // Minor 5 added a status code only.
        assert_eq!(AbiSizes::for_minor(5), Some(four));
        assert_eq!(AbiSizes::for_minor(7), Some(AbiSizes::CURRENT));
        assert_eq!(AbiSizes::for_minor(8), None);
    }

    #[test]
    fn every_struct_starts_with_its_size() {
        // The first field of every boundary struct is the u32 struct_size at offset 0.
        use std::mem::offset_of;
        assert_eq!(offset_of!(PiPluginDescriptor, struct_size), 0);
        assert_eq!(offset_of!(PiHostApi, struct_size), 0);
        assert_eq!(offset_of!(PiValueApi, struct_size), 0);
        assert_eq!(offset_of!(PiResultApi, struct_size), 0);
        assert_eq!(offset_of!(PiRegistryApi, struct_size), 0);
        assert_eq!(offset_of!(PiActionsApi, struct_size), 0);
        assert_eq!(offset_of!(PiContextApi, struct_size), 0);
        assert_eq!(offset_of!(PiUiApi, struct_size), 0);
        assert_eq!(offset_of!(PiCommandDef, struct_size), 0);
        assert_eq!(offset_of!(PiToolDef, struct_size), 0);
        assert_eq!(offset_of!(PiFlagDef, struct_size), 0);
        assert_eq!(offset_of!(PiExecRequest, struct_size), 0);
    }
}
