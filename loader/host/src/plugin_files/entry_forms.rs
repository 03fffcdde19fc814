//! pi's forms of an `extensions` (and pi-hooks' `hooks`) settings entry, as pi 1.6's
//! `dist/core/package-manager.js` reads them:
//!
//! - a plain path (no `!`, `+` or `-` first, no `*` or `?`): a file or folder to load;
//! - a glob (`*`, `?`): only the files of the plain entries it matches load;
//! - `!pattern`: the files matching the glob do not load;
//! - `+path`: that exact file loads even if a `!pattern` excluded it;
//! - `-path`: that exact file does not load, whatever else says.
//!
//! The files found in the scope's own folders (`.pi/extensions/`, `<agentDir>/extensions/`,
//! and pi-hooks' `hooks/` beside them) load unless a `!`, `+` or `-` entry of the same
//! scope's settings says otherwise. A pattern is matched against the file's path relative to
//! the settings file's folder, its name and its absolute path; an exact path against the
//! first and the last (a leading `./` dropped).
//!
//! Entries naming pi's built-in extensions (`builtin:mcp`, `-builtin:mcp` and `+builtin:…`,
//! which `pi config` writes) are pi's own and mean nothing to pi-hooks: they are passed over.

use std::path::Path;

use globset::{GlobBuilder, GlobMatcher};

/// pi's prefix of a built-in extension's path (`dist/core/source-info.js`).
pub const BUILTIN_PREFIX: &str = "builtin:";

/// One settings file's entries, split as pi splits them.
#[derive(Debug, Default)]
pub struct EntryForms {
    /// Plain paths, in order.
    pub plain: Vec<String>,
    includes: Vec<String>,
    excludes: Vec<String>,
    force_includes: Vec<String>,
    force_excludes: Vec<String>,
}

impl EntryForms {
    /// Splits `entries` (pi's `splitPatterns`), leaving out pi's built-in names.
    pub fn split<'a>(entries: impl IntoIterator<Item = &'a String>) -> EntryForms {
        let mut forms = EntryForms::default();
        for entry in entries {
            let target = entry
                .strip_prefix(['!', '+', '-'])
                .unwrap_or(entry.as_str());
            if target.starts_with(BUILTIN_PREFIX) {
                continue;
            }
            if let Some(rest) = entry.strip_prefix('+') {
                forms.force_includes.push(rest.to_owned());
            } else if let Some(rest) = entry.strip_prefix('-') {
                forms.force_excludes.push(rest.to_owned());
            } else if let Some(rest) = entry.strip_prefix('!') {
                forms.excludes.push(rest.to_owned());
            } else if entry.contains(['*', '?']) {
                forms.includes.push(entry.clone());
            } else {
                forms.plain.push(entry.clone());
            }
        }
        forms
    }

    /// Whether a file of the plain entries loads (pi's `applyPatterns`).
    pub fn listed_file_enabled(&self, file: &Path, base: &Path) -> bool {
        let mut enabled = self.includes.is_empty() || matches_any(file, &self.includes, base);
        if enabled && matches_any(file, &self.excludes, base) {
            enabled = false;
        }
        if !enabled && matches_any_exact(file, &self.force_includes, base) {
            enabled = true;
        }
        enabled && !matches_any_exact(file, &self.force_excludes, base)
    }

    /// Whether a file found in the scope's own folder loads (pi's `isEnabledByOverrides`).
    pub fn folder_file_enabled(&self, file: &Path, base: &Path) -> bool {
        let mut enabled = !matches_any(file, &self.excludes, base);
        if matches_any_exact(file, &self.force_includes, base) {
            enabled = true;
        }
        enabled && !matches_any_exact(file, &self.force_excludes, base)
    }
}

/// The three strings pi matches a pattern against: relative to `base`, the name, absolute.
fn forms_of(file: &Path, base: &Path) -> [String; 3] {
    let relative = file
        .strip_prefix(base)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    [relative, name, file.to_string_lossy().into_owned()]
}

/// A pattern as minimatch reads it (`*` stops at `/`), `~` expanded as pi does.
fn matcher(pattern: &str) -> Option<GlobMatcher> {
    let pattern = super::paths::expand_home(Path::new(pattern));
    GlobBuilder::new(&pattern.to_string_lossy())
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

fn matches_any(file: &Path, patterns: &[String], base: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let forms = forms_of(file, base);
    patterns.iter().filter_map(|p| matcher(p)).any(|m| {
        forms
            .iter()
            .any(|form| !form.is_empty() && m.is_match(form))
    })
}

fn matches_any_exact(file: &Path, patterns: &[String], base: &Path) -> bool {
    if patterns.is_empty() {
        return false;
    }
    let [relative, _, absolute] = forms_of(file, base);
    patterns.iter().any(|pattern| {
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        let pattern = super::paths::expand_home(Path::new(pattern));
        let pattern = pattern.to_string_lossy();
        (!relative.is_empty() && *pattern == relative) || *pattern == absolute
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(entries: &[&str]) -> EntryForms {
        let owned: Vec<String> = entries.iter().map(|s| (*s).to_owned()).collect();
        EntryForms::split(&owned)
    }

    #[test]
    fn builtin_names_are_pi_s_and_the_other_forms_filter_as_pi_filters() {
        let base = Path::new("/agent");
        let forms = split(&[
            "-builtin:mcp",
            "+builtin:codemode",
            "builtin:tool-search",
            "plugins",
            "!plugins/libdebug*.so",
            "+plugins/libdebug_keep.so",
            "-plugins/libgate.so",
        ]);
        assert_eq!(forms.plain, ["plugins"]);
        let file = |name: &str| Path::new("/agent/plugins").join(name);
        assert!(forms.listed_file_enabled(&file("libok.so"), base));
        assert!(!forms.listed_file_enabled(&file("libdebug_x.so"), base));
        assert!(forms.listed_file_enabled(&file("libdebug_keep.so"), base));
        assert!(!forms.listed_file_enabled(&file("libgate.so"), base));
        // Folder files: only the overrides count.
        let folder = |name: &str| Path::new("/agent/extensions").join(name);
        let overrides = split(&["!libold*.so", "-extensions/libgone.so"]);
        assert!(overrides.folder_file_enabled(&folder("libnew.so"), base));
        assert!(!overrides.folder_file_enabled(&folder("libold1.so"), base));
        assert!(!overrides.folder_file_enabled(&folder("libgone.so"), base));
        // A glob include keeps only what it matches.
        let only = split(&["plugins", "plugins/liba*.so"]);
        assert!(only.listed_file_enabled(&file("liba1.so"), base));
        assert!(!only.listed_file_enabled(&file("libb.so"), base));
    }
}
