//! Reading a plugin's information block ([`pi_hooks_abi::info_block`]) from the library
//! file's bytes, without loading it: nothing of the plugin runs, not even its static
//! constructors. `pi-hooks inspect` uses it; a loaded plugin's descriptor stays the authority
//! on what the plugin is.

use object::{Object, ObjectSegment};
use pi_hooks_abi::ENTRY_SYMBOL;
use pi_hooks_abi::info_block::{INFO_SYMBOL, MAX_INFO_BYTES, PluginInfo};

/// What a library file says of itself, read without running it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileInfo {
    /// Whether it exports the entry symbol `pi_hooks_plugin_v1`.
    pub has_entry: bool,
    /// Its information block, when it exports one.
    pub info: Option<PluginInfo>,
}

/// Reads the exported symbols of a library (ELF, Mach-O or PE) and its information block.
/// Errors name what is wrong with the file; the caller adds the file's name.
pub fn read_file_info(bytes: &[u8]) -> Result<FileInfo, String> {
    let file = object::File::parse(bytes)
        .map_err(|e| format!("is not a library this host can read ({e})"))?;
    let unreadable = |e: object::Error| format!("has an export table this host cannot read ({e})");
    // (name, address) of every exported symbol; Mach-O prefixes C names with an underscore.
    let mut exports = Vec::new();
    for export in file.exports().map_err(unreadable)? {
        let export = export.map_err(unreadable)?;
        let address = match export.target() {
            object::ExportTarget::Address { address } => Some(address),
            _ => None,
        };
        if let object::NameOrOrdinal::Name(name) = export.name() {
            let name = name
                .strip_prefix(b"_")
                .filter(|n| n.starts_with(b"pi_hooks"))
                .unwrap_or(name);
            exports.push((name.to_vec(), address));
        }
    }
    let find = |wanted: &str| exports.iter().find(|(name, _)| name == wanted.as_bytes());
    let has_entry = find(ENTRY_SYMBOL).is_some();
    let Some((_, address)) = find(INFO_SYMBOL) else {
        return Ok(FileInfo {
            has_entry,
            info: None,
        });
    };
    let outside = || format!("exports {INFO_SYMBOL} outside its file's data; rebuild the plugin");
    let address = address.ok_or_else(outside)?;
    // The block runs to its fifth NUL: take what the segment holds from the symbol on.
    let block = file
        .segments()
        .find_map(|segment| {
            let (start, size) = (segment.address(), segment.size());
            if address < start || address >= start.saturating_add(size) {
                return None;
            }
            let data = segment.data().ok()?;
            let at = usize::try_from(address - start).ok()?;
            data.get(at..)
                .map(|rest| &rest[..rest.len().min(MAX_INFO_BYTES)])
        })
        .ok_or_else(outside)?;
    let info = PluginInfo::parse(block).map_err(|e| format!("{e}; rebuild the plugin"))?;
    Ok(FileInfo {
        has_entry,
        info: Some(info),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_is_no_library_is_refused() {
        assert!(read_file_info(b"hello").is_err());
    }

    #[test]
    fn this_test_binary_has_no_plugin_entry() {
        let exe = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        let info = read_file_info(&exe).unwrap();
        assert!(!info.has_entry && info.info.is_none());
    }
}
