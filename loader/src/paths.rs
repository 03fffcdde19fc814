//! Path rules shared by discovery, settings and the CLI.

use std::path::{Path, PathBuf};

/// The agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var_os("PI_CODING_AGENT_DIR") {
        Some(dir) if !dir.is_empty() => expand_home(Path::new(&dir)),
        _ => home_dir().join(".pi").join("agent"),
    }
}

/// The user's home directory (`$HOME`; `/` when unset).
pub fn home_dir() -> PathBuf {
    std::env::home_dir().unwrap_or_else(|| PathBuf::from("/"))
}

/// Expands a leading `~` to the home directory (`~` alone, `~/x`, and `~x` as pi does).
pub fn expand_home(path: &Path) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path.to_path_buf();
    };
    match text.strip_prefix('~') {
        Some(rest) => home_dir().join(rest.trim_start_matches('/')),
        None => path.to_path_buf(),
    }
}

/// Resolves a configured path: Unicode spaces become ASCII spaces, `~` is expanded, an
/// absolute path is kept, a relative one is joined to `base`.
pub fn resolve(path: &str, base: &Path) -> PathBuf {
    let normalised: String = path
        .chars()
        .map(|c| match c {
            '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
            c => c,
        })
        .collect();
    let expanded = expand_home(Path::new(&normalised));
    if expanded.is_absolute() {
        expanded
    } else {
        base.join(expanded)
    }
}

/// This platform's library suffix: `so`, `dylib` or `dll`.
pub const LIBRARY_SUFFIX: &str = std::env::consts::DLL_EXTENSION;

/// Whether `name` ends in this platform's library suffix.
pub fn has_library_suffix(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == LIBRARY_SUFFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_relative_absolute_and_home() {
        let base = Path::new("/base");
        assert_eq!(resolve("x.so", base), PathBuf::from("/base/x.so"));
        assert_eq!(resolve("/abs/x.so", base), PathBuf::from("/abs/x.so"));
        assert_eq!(resolve("~/x.so", base), home_dir().join("x.so"));
        assert_eq!(
            resolve("a\u{00A0}b.so", base),
            PathBuf::from("/base/a b.so")
        );
    }
}
