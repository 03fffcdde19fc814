//! ABI version numbers and the name of the entry symbol.

/// ABI major version. A plugin whose major differs from the host's is refused: the entry
/// symbol carries the major in its name (`pi_hooks_plugin_v1`), so a plugin for another major
/// is not even found. The major changes only for a break that cannot be made by appending.
pub const PI_HOOKS_ABI_MAJOR: u32 = 1;

/// ABI minor version. A minor adds fields and functions at the end of structs and tables,
/// never anything else. A host of minor N loads plugins built for minors 0..=N; a plugin built
/// for a minor newer than the host's is refused (it may call entries the host lacks).
///
/// Minor 1 appended `PiActionsApi::set_model`; minor 2 appended the value builders to
/// `PiValueApi` (`new_object` ... `json_quote`) and `PiResultApi::set_from_value`; minor 3
/// appended `PiValueApi::replace_text` and gave `PiExecRequest`'s reserved field its use as
/// `flags` (`PI_EXEC_CANCEL_ON_ABORT`); minor 4 appended `PiContextApi::is_aborted` and
/// `PiActionsApi::send_user_message_content` and `exec_cancel`; minor 5 added the status
/// `PI_ERR_DENIED` (a confined plugin's grant refused an action); minor 6 appended
/// `PiActionsApi::identity` and `data_dir` (who the plugin is, and its own folder); minor 7
/// (pi 1.6's hook surface) appended `PiContextApi::is_project_trusted`,
/// `system_prompt_options` and `thinking_level`, and added the widget placement
/// `PI_WIDGET_DEFAULT` (no placement given).
pub const PI_HOOKS_ABI_MINOR: u32 = 7;
