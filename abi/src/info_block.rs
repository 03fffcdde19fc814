//! The plugin's information block: its name, version, description and ABI version as plain
//! text in the library's read-only data, exported as the data symbol
//! `pi_hooks_plugin_info_v1` ([`INFO_SYMBOL`]), which a host reads from the file without
//! loading it.
//!
//! The descriptor holds the same facts, but reaching it means calling the entry function, and
//! loading a library at all runs its static constructors: the plugin's own code. The block
//! holds no pointers, so it needs no relocation and its bytes in the file are its value:
//! `pi-hooks inspect` and `pi-hooks install` show what a library is without running any of it.
//!
//! The block is one NUL-separated byte string, as long as its texts need:
//!
//! ```text
//! "pi-hooks-info-1\0" MAJOR "\0" MINOR "\0" NAME "\0" VERSION "\0" DESCRIPTION "\0"
//! ```
//!
//! with MAJOR and MINOR in decimal. It is optional (a library without it still loads; its name
//! is then known only by loading it), it is not part of the struct layouts (no ABI minor
//! depends on it), and the host never trusts it over the descriptor once a plugin is loaded.
//! In C, `PI_HOOKS_PLUGIN` writes it (and `PI_HOOKS_PLUGIN_INFO` alone, for a plugin with an
//! entry function of its own); in Rust, [`plugin!`](crate::plugin).

use crate::ffi::{PI_HOOKS_ABI_MAJOR, PI_HOOKS_ABI_MINOR};

/// Name of the data symbol holding the information block.
pub const INFO_SYMBOL: &str = "pi_hooks_plugin_info_v1";

/// The block's first field (with its NUL): the format and its version.
pub const INFO_MAGIC: &[u8] = b"pi-hooks-info-1\0";

/// The longest block a host reads (the texts beyond it are not shown).
pub const MAX_INFO_BYTES: usize = 1 << 20;

/// What an information block says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginInfo {
    /// `PI_HOOKS_ABI_MAJOR` the plugin was built against.
    pub abi_major: u32,
    /// `PI_HOOKS_ABI_MINOR` the plugin was built against.
    pub abi_minor: u32,
    /// The plugin's name.
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// Its one-line description (may be empty).
    pub description: String,
}

impl PluginInfo {
    /// `major.minor`.
    pub fn abi(&self) -> String {
        format!("{}.{}", self.abi_major, self.abi_minor)
    }

    /// Reads a block from `bytes`, which start at the symbol and may run past the block's
    /// end. Errors say what is wrong, for a message that names the file.
    pub fn parse(bytes: &[u8]) -> Result<PluginInfo, String> {
        let bytes = &bytes[..bytes.len().min(MAX_INFO_BYTES)];
        let rest = bytes.strip_prefix(INFO_MAGIC).ok_or_else(|| {
            format!("has a {INFO_SYMBOL} that does not start with the pi-hooks-info-1 marker")
        })?;
        let mut fields = rest.splitn(6, |b| *b == 0);
        let mut field = |what: &str| -> Result<String, String> {
            let text = fields
                .next()
                .ok_or_else(|| format!("has a {INFO_SYMBOL} that ends before its {what}"))?;
            Ok(String::from_utf8_lossy(text).into_owned())
        };
        let number = |text: String, what: &str| {
            text.parse::<u32>()
                .map_err(|_| format!("has a {INFO_SYMBOL} whose {what} is not a number"))
        };
        let abi_major = number(field("ABI major")?, "ABI major")?;
        let abi_minor = number(field("ABI minor")?, "ABI minor")?;
        let info = PluginInfo {
            abi_major,
            abi_minor,
            name: field("name")?,
            version: field("version")?,
            description: field("description")?,
        };
        // The description must have had its closing NUL (the sixth piece is what follows).
        if fields.next().is_none() {
            return Err(format!("has a {INFO_SYMBOL} without its closing NUL"));
        }
        if info.name.is_empty() {
            return Err(format!("has an empty name in {INFO_SYMBOL}"));
        }
        Ok(info)
    }
}

/// The length of the block [`info_block`] makes for these texts.
pub const fn info_block_len(name: &str, version: &str, description: &str) -> usize {
    INFO_MAGIC.len()
        + decimal_len(PI_HOOKS_ABI_MAJOR)
        + 1
        + decimal_len(PI_HOOKS_ABI_MINOR)
        + 1
        + name.len()
        + 1
        + version.len()
        + 1
        + description.len()
        + 1
}

/// The block for these texts, of length `N` = [`info_block_len`] (what
/// [`plugin!`](crate::plugin) exports). A wrong `N` stops the build.
pub const fn info_block<const N: usize>(name: &str, version: &str, description: &str) -> [u8; N] {
    assert!(
        N == info_block_len(name, version, description),
        "info_block: N must be info_block_len(name, version, description)"
    );
    let mut out = [0u8; N];
    let mut at = copy(&mut out, 0, INFO_MAGIC);
    at = write_decimal(&mut out, at, PI_HOOKS_ABI_MAJOR) + 1;
    at = write_decimal(&mut out, at, PI_HOOKS_ABI_MINOR) + 1;
    at = copy(&mut out, at, name.as_bytes()) + 1;
    at = copy(&mut out, at, version.as_bytes()) + 1;
    copy(&mut out, at, description.as_bytes());
    out
}

const fn copy<const N: usize>(out: &mut [u8; N], at: usize, bytes: &[u8]) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        out[at + i] = bytes[i];
        i += 1;
    }
    at + bytes.len()
}

const fn decimal_len(mut n: u32) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

const fn write_decimal<const N: usize>(out: &mut [u8; N], at: usize, n: u32) -> usize {
    let len = decimal_len(n);
    let mut rest = n;
    let mut i = len;
    while i > 0 {
        i -= 1;
        out[at + i] = b'0' + (rest % 10) as u8;
        rest /= 10;
    }
    at + len
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_reads_back_and_damage_is_named() {
        const LEN: usize = info_block_len("gate", "1.2.3", "Blocks things");
        let block: [u8; LEN] = info_block("gate", "1.2.3", "Blocks things");
        let mut padded = block.to_vec();
        padded.extend_from_slice(b"trailing data of the section");
        let info = PluginInfo::parse(&padded).unwrap();
        assert_eq!(
            (
                info.name.as_str(),
                info.version.as_str(),
                info.description.as_str()
            ),
            ("gate", "1.2.3", "Blocks things")
        );
        assert_eq!(info.abi(), format!("1.{PI_HOOKS_ABI_MINOR}"));
        assert!(
            PluginInfo::parse(&block[..block.len() - 1])
                .unwrap_err()
                .contains("closing NUL")
        );
        assert!(
            PluginInfo::parse(b"garbage")
                .unwrap_err()
                .contains("marker")
        );
        assert!(
            PluginInfo::parse(b"pi-hooks-info-1\0x\0")
                .unwrap_err()
                .contains("not a number")
        );
        let long = "d".repeat(5000);
        assert_eq!(
            PluginInfo::parse(&{
                let mut b = b"pi-hooks-info-1\x001\x005\x00n\x00v\x00".to_vec();
                b.extend_from_slice(long.as_bytes());
                b.push(0);
                b
            })
            .unwrap()
            .description,
            long
        );
    }
}
