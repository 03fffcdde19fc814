//! Path rules shared by discovery, settings and the CLI.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::guards::display::escape;

/// The agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
///
/// A relative agent directory is refused: the trust store and the user's own ("global")
/// plugins live there, so a relative one would put them inside whatever directory the command
/// runs in, a cloned repository included, which could then trust or add plugins for itself.
/// The error says which variable made it relative and what to set instead.
pub fn agent_dir() -> Result<PathBuf, String> {
    agent_dir_from(
        std::env::var_os("PI_CODING_AGENT_DIR").as_deref(),
        &home_dir(),
    )
}

/// [`agent_dir`] for the given `PI_CODING_AGENT_DIR` value and home directory.
fn agent_dir_from(variable: Option<&OsStr>, home: &Path) -> Result<PathBuf, String> {
    const WHY: &str = "the trust store and your own plugins would then live inside whatever \
                       directory pi-hooks runs in, such as a cloned repository";
    match variable {
        Some(dir) if !dir.is_empty() => {
            let given = Path::new(dir);
            let expanded = expand_home_in(given, home);
            if expanded.is_absolute() {
                Ok(expanded)
            } else if expanded != given {
                Err(format!(
                    "PI_CODING_AGENT_DIR \"{}\" is relative because HOME \"{}\" is: {WHY}. \
                     Set HOME, or PI_CODING_AGENT_DIR, to an absolute path",
                    escape(&given.to_string_lossy()),
                    escape(&home.to_string_lossy()),
                ))
            } else {
                Err(format!(
                    "PI_CODING_AGENT_DIR \"{}\" is a relative path: {WHY}. Set it to an \
                     absolute path (or unset it to use ~/.pi/agent)",
                    escape(&given.to_string_lossy()),
                ))
            }
        }
        _ if home.is_absolute() => Ok(home.join(".pi").join("agent")),
        _ => Err(format!(
            "HOME \"{}\" is not an absolute path, so the agent directory ~/.pi/agent would be \
             relative: {WHY}. Set HOME (or PI_CODING_AGENT_DIR) to an absolute path",
            escape(&home.to_string_lossy()),
        )),
    }
}

/// The user's home directory (`$HOME`; `/` when unset).
pub fn home_dir() -> PathBuf {
    std::env::home_dir().unwrap_or_else(|| PathBuf::from("/"))
}

/// Expands a leading `~` to the home directory (`~` alone, `~/x`, and `~x` as pi does).
pub fn expand_home(path: &Path) -> PathBuf {
    expand_home_in(path, &home_dir())
}

/// [`expand_home`] with `home` as the home directory.
fn expand_home_in(path: &Path, home: &Path) -> PathBuf {
    let Some(text) = path.to_str() else {
        return path.to_path_buf();
    };
    match text.strip_prefix('~') {
        Some(rest) => home.join(rest.trim_start_matches('/')),
        None => path.to_path_buf(),
    }
}

/// Resolves a configured path: Unicode spaces become ASCII spaces, `~` is expanded, an
/// absolute path is kept, a relative one is joined to `base`; then `.` components are
/// dropped and `..` removes the folder before it where that folder is not a symbolic link
/// (so the result names the same file, and shows as `/work/b/x.so`, not `/work/./a/../b/x.so`).
pub fn resolve(path: &str, base: &Path) -> PathBuf {
    tidy(&resolve_raw(path, base))
}

/// `path` without `.` components and with `..` applied to each preceding folder that is not
/// a symbolic link (through a link, `..` leads elsewhere, so it is kept); `/..` is `/`.
fn tidy(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            // `/..` is `/`.
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::RootDir)) => {}
            Component::ParentDir => {
                let last_is_plain =
                    matches!(out.components().next_back(), Some(Component::Normal(_)))
                        && !std::fs::symlink_metadata(&out)
                            .is_ok_and(|m| m.file_type().is_symlink());
                if last_is_plain {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

fn resolve_raw(path: &str, base: &Path) -> PathBuf {
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
    fn dot_and_dot_dot_are_applied_except_through_a_link() {
        let base = Path::new("/base");
        assert_eq!(
            resolve("./a/../b/x.so", base),
            PathBuf::from("/base/b/x.so")
        );
        assert_eq!(resolve("/abs/./x.so", base), PathBuf::from("/abs/x.so"));
        assert_eq!(
            resolve("/a/./b/../c/./x.so", base),
            PathBuf::from("/a/c/x.so")
        );
        assert_eq!(resolve("/../x.so", base), PathBuf::from("/x.so"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("real"), dir.path().join("link")).unwrap();
            assert_eq!(
                resolve("link/../x.so", dir.path()),
                dir.path().join("link/../x.so")
            );
        }
        assert_eq!(resolve("real/../x.so", dir.path()), dir.path().join("x.so"));
    }

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

    #[test]
    fn a_relative_agent_dir_is_refused_with_the_reason() {
        let home = Path::new("/home/me");
        let var = |s: &'static str| Some(OsStr::new(s));
        assert_eq!(
            agent_dir_from(None, home).unwrap(),
            PathBuf::from("/home/me/.pi/agent")
        );
        assert_eq!(
            agent_dir_from(var(""), home).unwrap(),
            PathBuf::from("/home/me/.pi/agent")
        );
        assert_eq!(
            agent_dir_from(var("/abs/agent"), Path::new("rel")).unwrap(),
            PathBuf::from("/abs/agent")
        );
        assert_eq!(
            agent_dir_from(var("~/agent"), home).unwrap(),
            PathBuf::from("/home/me/agent")
        );
        let relative = agent_dir_from(var(".pi/agent"), home).unwrap_err();
        assert!(relative.starts_with("PI_CODING_AGENT_DIR \".pi/agent\" is a relative path"));
        assert!(relative.contains("inside whatever directory"), "{relative}");
        assert!(relative.contains("absolute path"), "{relative}");
        let via_home = agent_dir_from(var("~/agent"), Path::new("rel")).unwrap_err();
        assert!(via_home.contains("because HOME \"rel\" is"), "{via_home}");
        for home in ["rel", ""] {
            let error = agent_dir_from(None, Path::new(home)).unwrap_err();
            assert!(error.starts_with(&format!("HOME \"{home}\" is not an absolute path")));
        }
        let escaped = agent_dir_from(var("a\u{1b}[2Jb"), home).unwrap_err();
        assert!(escaped.contains("a\\e[2Jb") && !escaped.contains('\u{1b}'));
    }
}
