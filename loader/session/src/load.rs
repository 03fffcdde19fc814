//! Reading a session file: lines to entries, crash residue, and migration of old versions.
//!
//! pi skips every malformed line silently. Here only what an interrupted write leaves is
//! skipped, with a warning:
//!
//! * a last line without its line feed that does not parse (every writer ends a line with its
//!   line feed in the same write, so such a line was never acknowledged): it is cut off before
//!   the next append;
//! * a line that breaks off in the middle of its JSON (serde_json reports the end of the input
//!   inside a value) but does end in a line feed: the fragment of a writer that died, after which
//!   another writer started its own entry on a new line (the store's guard before each append).
//!   No complete entry ever looks like that, so nothing acknowledged is skipped; the line is left
//!   in the file.
//!
//! Any other bad line, the last one included, is an error naming the line: it is complete, so
//! someone wrote and acknowledged it, and skipping it would silently drop an entry and break
//! parent links.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::SessionError;
use super::entry::{CURRENT_VERSION, HEADER_TYPE, MAX_DEPTH};

/// A parsed session file.
#[derive(Debug)]
pub struct Loaded {
    /// The header, migrated to the current version.
    pub header: Map<String, Value>,
    /// The entries in file order, migrated.
    pub entries: Vec<Value>,
    /// What was skipped or migrated, one sentence each.
    pub warnings: Vec<String>,
    /// The file's length when read.
    pub file_len: u64,
    /// Where the damaged last line starts, if there is one: it is cut off before the next append.
    pub damaged_tail_at: Option<u64>,
}

struct Line {
    number: usize,
    start: usize,
    text: Vec<u8>,
    /// A line feed follows the line.
    terminated: bool,
}

/// Why a line is not an entry.
struct BadLine {
    reason: String,
    /// The JSON breaks off before its end (what an interrupted write leaves).
    broken_off: bool,
}

/// Parses the bytes of the session file at `path` (only used in messages).
pub fn parse(path: &Path, bytes: &[u8]) -> Result<Loaded, SessionError> {
    let mut lines = Vec::new();
    let mut start = 0;
    let segments = bytes.split(|b| *b == b'\n').count();
    for (index, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let text = raw.strip_suffix(b"\r").unwrap_or(raw);
        if !text.iter().all(u8::is_ascii_whitespace) {
            lines.push(Line {
                number: index + 1,
                start,
                text: text.to_vec(),
                terminated: index + 1 < segments,
            });
        }
        start += raw.len() + 1;
    }
    let not_a_session = |reason: String| SessionError::NotASession {
        path: path.to_path_buf(),
        reason,
    };
    if lines.is_empty() {
        return Err(not_a_session("the file is empty".into()));
    }

    let mut warnings = Vec::new();
    let mut damaged_tail_at = None;
    let mut parsed: Vec<(usize, Map<String, Value>)> = Vec::with_capacity(lines.len());
    let last = lines.len() - 1;
    for (index, line) in lines.iter().enumerate() {
        match parse_line(&line.text) {
            Ok(object) => parsed.push((line.number, object)),
            Err(bad) if index == 0 && index == last => {
                return Err(not_a_session(format!(
                    "its only line is not a complete session header ({}); the host probably stopped while \
                     creating it, and it holds no entries",
                    bad.reason
                )));
            }
            Err(bad) if index == last && !line.terminated => {
                warnings.push(format!(
                    "{}: skipped damaged last line {} ({} bytes: {}); it has no line feed, so a write was \
                     interrupted and the entry was never acknowledged. It will be cut off before the next entry \
                     is appended",
                    path.display(),
                    line.number,
                    line.text.len(),
                    bad.reason
                ));
                damaged_tail_at = Some(line.start as u64);
            }
            Err(bad) if index > 0 && bad.broken_off => {
                warnings.push(format!(
                    "{}: skipped line {} ({} bytes: {}); it breaks off in the middle, the remains of a write that \
                     was interrupted before another writer went on at the next line, so it never held an \
                     acknowledged entry. It is left in the file",
                    path.display(),
                    line.number,
                    line.text.len(),
                    bad.reason
                ));
            }
            Err(bad) => {
                return Err(SessionError::Corrupt {
                    path: path.to_path_buf(),
                    line: line.number,
                    reason: bad.reason,
                });
            }
        }
    }

    let mut parsed = parsed.into_iter();
    let (_, mut header) = parsed
        .next()
        .expect("a file with lines has a first parsed line");
    let is_header = header.get("type").and_then(Value::as_str) == Some(HEADER_TYPE)
        && header.get("id").is_some_and(Value::is_string);
    if !is_header {
        return Err(not_a_session(
            "its first line is not a session header ({\"type\":\"session\",\"id\":...})".into(),
        ));
    }
    let version = header_version(path, &header)?;

    let mut entries = Vec::with_capacity(lines.len());
    let mut seen = HashSet::new();
    for (number, mut entry) in parsed {
        let corrupt = |reason: &str| SessionError::Corrupt {
            path: path.to_path_buf(),
            line: number,
            reason: reason.to_owned(),
        };
        if entry.get("type").and_then(Value::as_str) == Some(HEADER_TYPE) {
            return Err(corrupt("a second session header"));
        }
        match entry.get("id") {
            Some(Value::String(id)) => {
                if !seen.insert(id.clone()) {
                    warnings.push(format!(
                        "{}: line {number} reuses entry id {id}; the later entry wins lookups by id, as in pi",
                        path.display()
                    ));
                }
            }
            None if version < 2 => {}
            _ => return Err(corrupt("the entry has no string \"id\"")),
        }
        match entry.get("parentId") {
            Some(Value::String(_) | Value::Null) => {}
            None if version < 2 => {}
            // pi reads a missing parent as "no parent".
            None => {
                entry.insert("parentId".into(), Value::Null);
            }
            Some(_) => return Err(corrupt("\"parentId\" is neither a string nor null")),
        }
        entries.push((number, entry));
    }

    if version < CURRENT_VERSION {
        migrate(&mut entries, version);
        header.insert("version".into(), Value::from(CURRENT_VERSION));
        warnings.push(format!(
            "{}: format version {version} read as version {CURRENT_VERSION}; the file itself is left as it is \
             (never rewritten), so this migration is repeated, identically, each time it is opened",
            path.display()
        ));
    }

    if let Some((line, reason)) = parent_cycle(&entries) {
        return Err(SessionError::Corrupt {
            path: path.to_path_buf(),
            line,
            reason,
        });
    }

    Ok(Loaded {
        header,
        entries: entries
            .into_iter()
            .map(|(_, entry)| Value::Object(entry))
            .collect(),
        warnings,
        file_len: bytes.len() as u64,
        damaged_tail_at,
    })
}

/// The first entry (in file order) whose `parentId` links lead back to itself, as its line and
/// the reason naming the cycle; `None` when the links form a tree. A cycle has no root: no
/// branch through it ends, so pi's walks from a leaf to the root would never finish (or stop
/// at an arbitrary entry). Lookups by id take the later of two entries with one id, as pi.
fn parent_cycle(entries: &[(usize, Map<String, Value>)]) -> Option<(usize, String)> {
    let text = |entry: &Map<String, Value>, key: &str| {
        entry.get(key).and_then(Value::as_str).map(str::to_owned)
    };
    let mut by_id: HashMap<String, (usize, Option<String>)> = HashMap::new();
    for (line, entry) in entries {
        if let Some(id) = text(entry, "id") {
            by_id.insert(id, (*line, text(entry, "parentId")));
        }
    }
    // Entries known to reach a root (or a parent that is not in the file).
    let mut rooted: HashSet<&str> = HashSet::new();
    for (_, entry) in entries {
        let Some(start) = entry.get("id").and_then(Value::as_str) else {
            continue;
        };
        let mut walk: Vec<&str> = Vec::new();
        let mut at = by_id.get_key_value(start);
        while let Some((id, (line, parent))) = at {
            if rooted.contains(id.as_str()) {
                break;
            }
            if let Some(from) = walk.iter().position(|w| *w == id) {
                let mut names = walk[from..].to_vec();
                names.push(id);
                return Some((
                    *line,
                    format!(
                        "the parents of entry {id} lead back to it ({}), so its branch has no root",
                        names.join(" -> ")
                    ),
                ));
            }
            walk.push(id);
            at = parent.as_deref().and_then(|p| by_id.get_key_value(p));
        }
        rooted.extend(walk);
    }
    None
}

/// Whether `path` starts with a session header (pi's `isValidSessionFile`): reads only the first
/// line.
pub fn has_session_header(path: &Path) -> bool {
    use std::io::{BufRead, BufReader, Read};
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = Vec::new();
    if BufReader::new(file.take(1 << 20))
        .read_until(b'\n', &mut first)
        .is_err()
    {
        return false;
    }
    parse_line(&first).is_ok_and(|header| {
        header.get("type").and_then(Value::as_str) == Some(HEADER_TYPE)
            && header.get("id").is_some_and(Value::is_string)
    })
}

fn parse_line(text: &[u8]) -> Result<Map<String, Value>, BadLine> {
    let bad = |reason: String| BadLine {
        reason,
        broken_off: false,
    };
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(object)) => match object.get("type") {
            Some(Value::String(_)) => Ok(object),
            _ => Err(bad("the object has no string \"type\"".into())),
        },
        Ok(_) => Err(bad("not a JSON object".into())),
        Err(error) if error.is_eof() => Err(BadLine {
            reason: format!("the JSON breaks off: {error}"),
            broken_off: true,
        }),
        Err(error) => match text_depth(text) {
            depth if depth > MAX_DEPTH => Err(bad(format!(
                "it nests {depth} levels of arrays and objects, more than the {MAX_DEPTH} a session entry may \
                 have (this host never writes such a line; a host without the check did)"
            ))),
            _ => Err(bad(format!("not valid JSON: {error}"))),
        },
    }
}

/// How deep `[` and `{` nest in JSON text, outside strings (for the message about a line too
/// deep to read).
fn text_depth(text: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in text {
        match byte {
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'[' | b'{' if !in_string => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' if !in_string => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

fn header_version(path: &Path, header: &Map<String, Value>) -> Result<u64, SessionError> {
    let unsupported = |version: String| SessionError::UnsupportedVersion {
        path: path.to_path_buf(),
        version,
    };
    match header.get("version") {
        // Version 1 headers had no version (pi: `header.version ?? 1`).
        None | Some(Value::Null) => Ok(1),
        Some(Value::Number(number)) => match number.as_u64() {
            Some(version) if version <= CURRENT_VERSION => Ok(version.max(1)),
            _ => Err(unsupported(number.to_string())),
        },
        Some(other) => Err(unsupported(other.to_string())),
    }
}

/// pi's migrations, in memory: v1 -> v2 gives every entry without an id one, linked to the entry
/// before it, and turns a compaction's `firstKeptEntryIndex` into `firstKeptEntryId`; v2 -> v3
/// renames the message role `hookMessage` to `custom`.
///
/// pi draws random ids for v1 entries and rewrites the file. This host never rewrites a file, so
/// the ids must come out the same at every opening (later entries point at them): an entry gets
/// its line number as 8 hex digits (`0000002a` for line 42). Entries that already have an id
/// (appended by this host after an earlier migration) keep it and their parent.
fn migrate(entries: &mut [(usize, Map<String, Value>)], version: u64) {
    if version < 2 {
        let mut taken: HashSet<String> = entries
            .iter()
            .filter_map(|(_, entry)| entry.get("id").and_then(Value::as_str).map(str::to_owned))
            .collect();
        let mut previous: Option<String> = None;
        for (number, entry) in entries.iter_mut() {
            if let Some(id) = entry.get("id").and_then(Value::as_str) {
                previous = Some(id.to_owned());
                continue;
            }
            let id = (0u32..)
                .map(|salt| format!("{:08x}", (*number as u32) ^ salt.wrapping_mul(0x9e37_79b9)))
                .find(|candidate| !taken.contains(candidate))
                .expect("some 32-bit id is free");
            taken.insert(id.clone());
            entry.insert("id".into(), Value::String(id.clone()));
            entry.insert(
                "parentId".into(),
                previous.clone().map_or(Value::Null, Value::String),
            );
            previous = Some(id);
        }
        // The index counted the header as 0 (pi indexes its list of file entries).
        let ids: Vec<Value> = entries
            .iter()
            .map(|(_, entry)| entry.get("id").cloned().unwrap_or(Value::Null))
            .collect();
        for (_, entry) in entries.iter_mut() {
            if entry.get("type").and_then(Value::as_str) != Some("compaction") {
                continue;
            }
            let Some(index) = entry.get("firstKeptEntryIndex").and_then(Value::as_u64) else {
                continue;
            };
            entry.remove("firstKeptEntryIndex");
            if let Some(id) = (index as usize).checked_sub(1).and_then(|at| ids.get(at)) {
                entry.insert("firstKeptEntryId".into(), id.clone());
            }
        }
    }
    for (_, entry) in entries.iter_mut() {
        if entry.get("type").and_then(Value::as_str) != Some("message") {
            continue;
        }
        if let Some(Value::Object(message)) = entry.get_mut("message")
            && message.get("role").and_then(Value::as_str) == Some("hookMessage")
        {
            message.insert("role".into(), Value::String("custom".into()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Result<Loaded, SessionError> {
        parse(Path::new("/s.jsonl"), text.as_bytes())
    }

    #[test]
    fn migrates_version_1_deterministically() {
        let text = concat!(
            r#"{"type":"session","id":"u","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}"#,
            "\n",
            r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","content":"x"}}"#,
            "\n",
            r#"{"type":"compaction","timestamp":"t","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}"#,
            "\n",
            r#"{"type":"custom","customType":"k","id":"abcdef01","parentId":"00000004","timestamp":"t"}"#,
            "\n",
        );
        let loaded = load(text).unwrap();
        assert_eq!(loaded.header["version"], json!(3));
        assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
        let ids: Vec<_> = loaded.entries.iter().map(|e| e["id"].clone()).collect();
        assert_eq!(
            ids,
            [
                json!("00000002"),
                json!("00000003"),
                json!("00000004"),
                json!("abcdef01")
            ]
        );
        let parents: Vec<_> = loaded
            .entries
            .iter()
            .map(|e| e["parentId"].clone())
            .collect();
        assert_eq!(
            parents,
            [
                Value::Null,
                json!("00000002"),
                json!("00000003"),
                json!("00000004")
            ]
        );
        assert_eq!(loaded.entries[1]["message"]["role"], "custom");
        assert_eq!(loaded.entries[2]["firstKeptEntryId"], "00000003");
        assert!(loaded.entries[2].get("firstKeptEntryIndex").is_none());
        // The same ids at every opening.
        let again = load(text).unwrap();
        assert_eq!(again.entries, loaded.entries);
    }

    #[test]
    fn rejects_newer_versions_and_non_sessions() {
        let newer = load("{\"type\":\"session\",\"version\":4,\"id\":\"u\"}\n").unwrap_err();
        assert!(
            matches!(newer, SessionError::UnsupportedVersion { .. }),
            "{newer}"
        );
        assert!(newer.to_string().contains("version 4"), "{newer}");
        let other = load("{\"type\":\"message\",\"id\":\"a\"}\n").unwrap_err();
        assert!(matches!(other, SessionError::NotASession { .. }), "{other}");
        assert!(matches!(
            load("\n\n"),
            Err(SessionError::NotASession { .. })
        ));
        assert!(matches!(
            load("{\"type\":\"sess"),
            Err(SessionError::NotASession { .. })
        ));
    }

    #[test]
    fn parent_links_that_form_a_cycle_are_refused_naming_the_entry() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"u\"}\n";
        let entry = |id: &str, parent: &str| {
            format!(
                "{{\"type\":\"custom\",\"customType\":\"k\",\"id\":\"{id}\",\"parentId\":{parent}}}\n"
            )
        };
        let tree = format!(
            "{header}{}{}{}",
            entry("a", "null"),
            entry("b", "\"a\""),
            entry("c", "\"a\"")
        );
        assert_eq!(load(&tree).unwrap().entries.len(), 3);
        // A dangling parent is not a cycle.
        assert!(load(&format!("{header}{}", entry("a", "\"gone\""))).is_ok());
        let cyclic = format!(
            "{header}{}{}{}{}",
            entry("r", "null"),
            entry("a", "\"c\""),
            entry("b", "\"a\""),
            entry("c", "\"b\"")
        );
        let error = load(&cyclic).unwrap_err().to_string();
        assert!(
            error.contains("line 3")
                && error.contains("the parents of entry a lead back to it (a -> c -> b -> a)"),
            "{error}"
        );
        let own = format!("{header}{}", entry("s", "\"s\""));
        let error = load(&own).unwrap_err().to_string();
        assert!(
            error.contains("entry s lead back to it (s -> s)"),
            "{error}"
        );
    }

    #[test]
    fn damaged_tail_is_skipped_and_located() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"u\"}\n";
        let good = "{\"type\":\"custom\",\"customType\":\"k\",\"id\":\"a\",\"parentId\":null}\n";
        let loaded = load(&format!("{header}{good}\n{{\"type\":\"cus")).unwrap();
        assert_eq!(loaded.entries.len(), 1);
        assert_eq!(
            loaded.damaged_tail_at,
            Some((header.len() + good.len() + 1) as u64)
        );
        assert!(
            loaded.warnings[0].contains("line 4"),
            "{:?}",
            loaded.warnings
        );
        // Without its line feed, any damage is an interrupted write, not only a JSON prefix.
        let garbled = load(&format!("{header}{good}\0\0\0")).unwrap();
        assert_eq!(
            garbled.damaged_tail_at,
            Some((header.len() + good.len()) as u64)
        );
        // A whole entry without its line feed is an entry.
        let unterminated = load(&format!("{header}{}", good.trim_end())).unwrap();
        assert_eq!(unterminated.entries.len(), 1);
        assert!(unterminated.damaged_tail_at.is_none());
        assert!(unterminated.warnings.is_empty());
    }

    #[test]
    fn a_complete_last_line_that_does_not_parse_is_an_error() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"u\"}\n";
        for last in ["{\"type\":\"custom\" oops}\n", "\0\0\0\0\n\n", "[1]\n"] {
            let error = load(&format!("{header}{last}")).unwrap_err();
            assert!(
                matches!(error, SessionError::Corrupt { line: 2, .. }),
                "{last:?}: {error}"
            );
        }
    }

    #[test]
    fn a_broken_off_line_followed_by_a_line_feed_is_skipped_and_kept() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"u\"}\n";
        let fragment = "{\"type\":\"custom\",\"data\":[1,\n";
        let good = "{\"type\":\"custom\",\"customType\":\"k\",\"id\":\"a\",\"parentId\":null}\n";
        for text in [
            format!("{header}{fragment}{good}"),
            format!("{header}{good}{fragment}"),
        ] {
            let loaded = load(&text).unwrap();
            assert_eq!(loaded.entries.len(), 1, "{text}");
            assert_eq!(
                loaded.damaged_tail_at, None,
                "a line with its line feed is never cut"
            );
            assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
            assert!(
                loaded.warnings[0].contains("breaks off"),
                "{:?}",
                loaded.warnings
            );
        }
        // A broken-off header is still not a session.
        let error = load(&format!("{{\"type\":\"sess\n{good}")).unwrap_err();
        assert!(
            matches!(error, SessionError::Corrupt { line: 1, .. }),
            "{error}"
        );
    }

    #[test]
    fn every_cut_of_a_line_breaks_off() {
        let line = r#"{"type":"custom","customType":"k\"\\é\u00e9","data":{"n":-1.5e-3,"t":true,"f":false,"z":null,"a":[[],{}]},"id":"a","parentId":null}"#;
        assert!(parse_line(line.as_bytes()).is_ok());
        for end in 1..line.len() {
            match parse_line(&line.as_bytes()[..end]) {
                Err(bad) => assert!(bad.broken_off, "cut at {end}: {}", bad.reason),
                Ok(_) => panic!("cut at {end} parsed"),
            }
        }
    }

    #[test]
    fn a_line_too_deep_to_read_is_named_as_such() {
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"u\"}\n";
        let deep = |depth: usize| {
            let data = "[".repeat(depth - 1) + &"]".repeat(depth - 1);
            format!(
                "{{\"type\":\"custom\",\"customType\":\"k\",\"data\":{data},\"id\":\"d\",\"parentId\":null}}\n"
            )
        };
        let loaded = load(&format!("{header}{}", deep(MAX_DEPTH))).unwrap();
        assert_eq!(loaded.entries.len(), 1);
        for text in [
            format!("{header}{}", deep(MAX_DEPTH + 1)),
            format!("{header}{}{}", deep(MAX_DEPTH + 1), deep(2)),
        ] {
            let error = load(&text).unwrap_err().to_string();
            assert!(error.contains("line 2"), "{error}");
            assert!(
                error.contains(&format!("nests {} levels", MAX_DEPTH + 1))
                    && error.contains(&MAX_DEPTH.to_string()),
                "{error}"
            );
        }
    }
}
