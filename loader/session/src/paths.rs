//! Where session files live and how they are named, as pi does it:
//! `<agentDir>/sessions/--<cwd, '/' '\' ':' -> '-'>--/<timestamp>_<uuid>.jsonl`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::ids::{is_uuid, new_uuid};
use super::load::has_session_header;
use super::timestamp::now_iso;

/// `<agent_dir>/sessions/<encoded cwd>/`, the directory pi keeps the sessions of `cwd` in.
pub fn session_dir(agent_dir: &Path, cwd: &Path) -> PathBuf {
    agent_dir.join("sessions").join(encode_cwd(cwd))
}

/// pi's directory name for a working directory: one leading `/` or `\` dropped, every `/`, `\`
/// and `:` turned into `-`, and `--` on both sides (`/home/me/app` -> `--home-me-app--`,
/// `C:\src` -> `--C--src--`).
pub fn encode_cwd(cwd: &Path) -> String {
    let text = cwd.to_string_lossy();
    let text = text.strip_prefix(['/', '\\']).unwrap_or(&text);
    format!("--{}--", text.replace(['/', '\\', ':'], "-"))
}

/// A new session file path in `dir`: `<ISO timestamp with ':' and '.' as '-'>_<uuid>.jsonl`
/// (`2026-01-24T16-22-26-831Z_e99116ac-a6da-48fc-ad8b-2feca1c51550.jsonl`). A session
/// [created](super::SessionStore::create) at such a path takes the uuid as its id and the time
/// as its timestamp, as pi's do.
pub fn new_session_path(dir: &Path) -> PathBuf {
    let stamp = now_iso().replace([':', '.'], "-");
    dir.join(format!("{stamp}_{}.jsonl", new_uuid()))
}

/// The id and ISO timestamp a file named by [`new_session_path`] carries, if it is so named.
pub fn parse_session_file_name(path: &Path) -> Option<(String, String)> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let (stamp, uuid) = name.rsplit_once('_')?;
    if !is_uuid(uuid) {
        return None;
    }
    // 2026-01-24T16-22-26-831Z -> 2026-01-24T16:22:26.831Z
    let bytes = stamp.as_bytes();
    let shaped = bytes.len() == 24
        && bytes.iter().enumerate().all(|(i, b)| match i {
            4 | 7 | 13 | 16 | 19 => *b == b'-',
            10 => *b == b'T',
            23 => *b == b'Z',
            _ => b.is_ascii_digit(),
        });
    if !shaped {
        return None;
    }
    let timestamp = format!(
        "{}:{}:{}.{}",
        &stamp[..13],
        &stamp[14..16],
        &stamp[17..19],
        &stamp[20..]
    );
    Some((uuid.to_owned(), timestamp))
}

/// The most recently modified session file in `dir` (pi's `findMostRecentSession`, for
/// `--continue`): `*.jsonl` files whose first line is a session header, newest modification time
/// first (the greater name on a tie). `None` when there is none or `dir` cannot be read.
pub fn most_recent(dir: &Path) -> Option<PathBuf> {
    let listing = std::fs::read_dir(dir).ok()?;
    let mut newest: Option<(SystemTime, PathBuf)> = None;
    for item in listing.flatten() {
        let path = item.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let Ok(modified) = meta.modified() else {
            continue;
        };
        if !meta.is_file() || !has_session_header(&path) {
            continue;
        }
        let candidate = (modified, path);
        if newest.as_ref().is_none_or(|best| candidate > *best) {
            newest = Some(candidate);
        }
    }
    newest.map(|(_, path)| path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_cwd_as_pi() {
        assert_eq!(
            encode_cwd(Path::new("/home/will/projects/myapp")),
            "--home-will-projects-myapp--"
        );
        assert_eq!(encode_cwd(Path::new("/")), "----");
        assert_eq!(encode_cwd(Path::new("C:\\Users\\me")), "--C--Users-me--");
        assert_eq!(
            session_dir(Path::new("/h/.pi/agent"), Path::new("/w/x")),
            PathBuf::from("/h/.pi/agent/sessions/--w-x--")
        );
    }

    #[test]
    fn names_new_files_as_pi_and_reads_them_back() {
        let path = new_session_path(Path::new("/d"));
        let (id, timestamp) = parse_session_file_name(&path).expect("a pi session file name");
        assert!(is_uuid(&id));
        assert_eq!(timestamp.len(), 24);
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            format!("{}_{id}.jsonl", timestamp.replace([':', '.'], "-"))
        );
        let known =
            Path::new("2026-01-24T16-22-26-831Z_e99116ac-a6da-48fc-ad8b-2feca1c51550.jsonl");
        assert_eq!(
            parse_session_file_name(known),
            Some((
                "e99116ac-a6da-48fc-ad8b-2feca1c51550".into(),
                "2026-01-24T16:22:26.831Z".into()
            ))
        );
        assert_eq!(parse_session_file_name(Path::new("mine.jsonl")), None);
    }
}
