//! Writing `settings.json`: the one place pi-hooks changes a settings file, and the only value
//! it changes there is `packages` (the list pi and pi-hooks share).
//!
//! The file is edited in place, as text: every byte outside the `packages` value stays as it
//! was (numbers such as `123456789012345678901234567890` or `1E3`, spacing, key order, unicode
//! and escapes), and so do the bytes of the entries that stay in `packages`. A file that is
//! not JSON (a comment, a trailing comma), that does not hold an object, whose `packages` is
//! not an array or is set twice is refused with its path, line and column, and left unchanged.
//!
//! A symlinked user `settings.json` (a dotfiles folder) is written through to its target: a
//! temporary file in the target's folder is renamed over the target, so the link stays a link
//! and pi never reads half a file. A project's settings file is written only where it lies in
//! the project: a link there (the file or a folder on the way to it, which a cloned
//! repository can bring) is refused, as it could send the write to the user's own settings.

use std::path::{Path, PathBuf};

use jsonc_parser::common::Ranged;
use jsonc_parser::cst::{CstArray, CstInputValue, CstRootNode};
use jsonc_parser::{CollectOptions, ParseOptions, ast};
use serde_json::Value;

use super::files::{MAX_SETTINGS_BYTES, ReadError, read_regular};

/// What is done with a settings file that is a symbolic link.
#[derive(Debug, Clone, Copy)]
pub enum Links<'a> {
    /// Write through the link to its target (the user's own settings).
    WriteThrough,
    /// Refuse a link at the file or at any folder below this one (a project's settings,
    /// below the project folder).
    RefuseBelow(&'a Path),
}

/// Why a settings file cannot be edited: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// What is wrong and, where it helps, what to do.
    pub message: String,
}

/// Changes the `packages` list of `settings` with `change` and writes the file back, changing
/// nothing else in it (see the module's documentation). `Ok(false)` when `change` left the
/// list as it was (nothing is written then; a missing file is created only to hold a
/// non-empty list). On `Err`, naming the file, the line and column and what to do, the file is
/// unchanged.
pub fn update_packages(
    settings: &Path,
    links: Links<'_>,
    change: impl FnOnce(&mut Vec<Value>),
) -> Result<bool, String> {
    let target = match links {
        Links::WriteThrough => resolve_links(settings)?,
        Links::RefuseBelow(root) => {
            refuse_links(settings, root)?;
            settings.to_path_buf()
        }
    };
    let shown = if target == settings {
        settings.display().to_string()
    } else {
        format!("{} (a link to {})", settings.display(), target.display())
    };
    let text = match read_regular(&target, MAX_SETTINGS_BYTES) {
        Ok(bytes) => edit_packages(&bytes, change).map_err(|e| {
            format!(
                "{}:{}:{}: {}; `packages` cannot be recorded in it. Nothing was changed",
                shown, e.line, e.column, e.message
            )
        })?,
        Err(ReadError::NotFound) => {
            let mut list = Vec::new();
            change(&mut list);
            (!list.is_empty()).then(|| {
                let mut map = serde_json::Map::new();
                map.insert("packages".into(), Value::Array(list));
                format!("{:#}\n", Value::Object(map))
            })
        }
        Err(e) => {
            return Err(format!("settings file {shown} {e}; nothing was changed"));
        }
    };
    let Some(text) = text else {
        return Ok(false);
    };
    write_atomically(&target, text.as_bytes())
        .map_err(|e| format!("cannot write {shown}: {e}; nothing was changed"))?;
    Ok(true)
}

/// The strict grammar: JSON as `JSON.parse` reads it, no JSONC or JSON5 extension.
fn strict() -> ParseOptions {
    ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The text of `bytes` with its `packages` list changed by `change` and nothing else changed;
/// `Ok(None)` when the list stays as it was.
pub fn edit_packages(
    bytes: &[u8],
    change: impl FnOnce(&mut Vec<Value>),
) -> Result<Option<String>, EditError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let (line, column) = line_column(&String::from_utf8_lossy(bytes), e.valid_up_to());
        EditError {
            line,
            column,
            message: "not UTF-8 text".into(),
        }
    })?;
    let syntax = |e: jsonc_parser::errors::ParseError| EditError {
        line: e.line_display(),
        column: e.column_display(),
        message: format!("not valid JSON: {}", e.kind()),
    };
    let parsed =
        jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict()).map_err(syntax)?;
    // What pi-hooks' reader of settings (`super::settings::read_settings`) reads too.
    let value: Value = serde_json::from_str(text).map_err(|e| EditError {
        line: e.line(),
        column: e.column(),
        message: format!("pi-hooks cannot read it: {}", serde_message(&e)),
    })?;
    let at = |offset: usize, message: String| {
        let (line, column) = line_column(text, offset);
        EditError {
            line,
            column,
            message,
        }
    };
    let Some(ast::Value::Object(object)) = &parsed.value else {
        let offset = parsed.value.as_ref().map_or(0, |v| v.range().start);
        return Err(at(
            offset,
            format!("holds {}, not a JSON object", kind_of(&value)),
        ));
    };
    let props: Vec<&ast::ObjectProp> = object
        .properties
        .iter()
        .filter(|p| p.name.as_str() == "packages")
        .collect();
    if let [_, second, ..] = props.as_slice() {
        return Err(at(
            second.range.start,
            format!("`packages` is set {} times; keep one list", props.len()),
        ));
    }
    let old = match value.get("packages") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => list.clone(),
        Some(other) => {
            return Err(at(
                props.first().map_or(0, |p| p.value.range().start),
                format!(
                    "`packages` must be an array of sources, found {}",
                    kind_of(other)
                ),
            ));
        }
    };
    let mut new = old.clone();
    change(&mut new);
    if new == old {
        return Ok(None);
    }
    let edited = if props.is_empty() {
        // Added after the last key, in the object's style (the editor would make a one-line
        // object span several lines).
        append_packages(text, object, &new)
    } else {
        let root = CstRootNode::parse(text, &strict()).map_err(syntax)?;
        let prop = root
            .object_value()
            .and_then(|object| object.get("packages"))
            .ok_or_else(|| at(0, "`packages` cannot be found again".into()))?;
        match prop.array_value() {
            Some(array) => edit_array(&array, &old, &new),
            None => prop.set_value(input(&Value::Array(new.clone()))),
        }
        root.to_string()
    };
    // The edit must give exactly the intended document: the new list, every other key as it
    // was. Anything else (a fault of the editor) is refused before a byte is written.
    let mut expected = value;
    if let Value::Object(map) = &mut expected {
        map.insert("packages".into(), Value::Array(new));
    }
    let position = props.first().map_or(0, |p| p.range.start);
    match serde_json::from_str::<Value>(&edited) {
        Ok(result) if result == expected => Ok(Some(edited)),
        _ => Err(at(
            position,
            "the list could not be changed in place; change `packages` by hand".into(),
        )),
    }
}

/// `text` with `"packages": LIST` added to `object` (its root object) after its last key.
fn append_packages(text: &str, object: &ast::Object, list: &[Value]) -> String {
    let compact = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let one_line = || {
        let items: Vec<String> = list.iter().map(compact).collect();
        format!("[{}]", items.join(", "))
    };
    let (offset, insertion) = match object.properties.last() {
        Some(last) => {
            let line_start = text[..last.range.start].rfind('\n').map_or(0, |i| i + 1);
            let indent = &text[line_start..last.range.start];
            let multiline = text[object.range.start..last.range.start].contains('\n')
                && indent.chars().all(|c| c == ' ' || c == '\t');
            let insertion = if multiline && !list.is_empty() {
                let unit = if indent.is_empty() { "  " } else { indent };
                let items: Vec<String> = list
                    .iter()
                    .map(|v| format!("{indent}{unit}{}", compact(v)))
                    .collect();
                format!(
                    ",\n{indent}\"packages\": [\n{}\n{indent}]",
                    items.join(",\n")
                )
            } else if multiline {
                format!(",\n{indent}\"packages\": []")
            } else {
                format!(", \"packages\": {}", one_line())
            };
            (last.range.end, insertion)
        }
        None => (
            object.range.start + 1,
            format!("\"packages\": {}", one_line()),
        ),
    };
    let mut edited = String::with_capacity(text.len() + insertion.len());
    edited.push_str(&text[..offset]);
    edited.push_str(&insertion);
    edited.push_str(&text[offset..]);
    edited
}

/// Turns the elements of `array` (whose values are `old`) into `new`: entries of `old` that
/// `new` keeps, in order, keep their text; the others are removed, and new ones inserted.
fn edit_array(array: &CstArray, old: &[Value], new: &[Value]) {
    enum Step<'a> {
        Keep,
        Insert(&'a Value),
    }
    let mut kept = vec![false; old.len()];
    let mut next = 0;
    let mut steps = Vec::with_capacity(new.len());
    for value in new {
        match (next..old.len()).find(|&j| old[j] == *value) {
            Some(j) => {
                kept[j] = true;
                next = j + 1;
                steps.push(Step::Keep);
            }
            None => steps.push(Step::Insert(value)),
        }
    }
    let elements = array.elements();
    for (element, kept) in elements.into_iter().zip(kept).rev() {
        if !kept {
            element.remove();
        }
    }
    for (index, step) in steps.into_iter().enumerate() {
        if let Step::Insert(value) = step {
            array.insert(index, input(value));
        }
    }
}

/// `value` as the editor takes it (numbers keep serde_json's text of them).
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit_once('\n')
        .map_or(before, |(_, last)| last)
        .chars()
        .count()
        + 1;
    (line, column)
}

/// Where and why `bytes`, which serde_json refused with `error`, are not JSON: the strict
/// parser's account where it has one ("Comments are not allowed" rather than serde_json's
/// "key must be a string"), else serde_json's.
pub fn json_error(bytes: &[u8], error: &serde_json::Error) -> EditError {
    if let Ok(text) = std::str::from_utf8(bytes)
        && let Err(e) = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict())
    {
        return EditError {
            line: e.line_display(),
            column: e.column_display(),
            message: e.kind().to_string(),
        };
    }
    EditError {
        line: error.line(),
        column: error.column(),
        message: serde_message(error),
    }
}

/// serde_json's message without the position it appends (given apart).
pub fn serde_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_owned()
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The file `path` names once every symbolic link is followed (at most 40, as the kernel).
fn resolve_links(path: &Path) -> Result<PathBuf, String> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = std::fs::read_link(&current)
                    .map_err(|e| format!("cannot read the link {}: {e}", current.display()))?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            _ => return Ok(current),
        }
    }
    Err(format!(
        "{} is a chain of more than 40 symbolic links; point it at the file. Nothing was changed",
        path.display()
    ))
}

/// Refuses `path` when it, or a folder between `root` and it, is a symbolic link.
fn refuse_links(path: &Path, root: &Path) -> Result<(), String> {
    let Ok(relative) = path.strip_prefix(root) else {
        return Err(format!(
            "{} is not inside {}; nothing was changed",
            path.display(),
            root.display()
        ));
    };
    let mut current = root.to_path_buf();
    for part in relative.components() {
        current.push(part);
        if std::fs::symlink_metadata(&current).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!(
                "{} is a symbolic link; pi-hooks writes a project's settings only inside the project (a link could point at your own settings). Replace the link with the file itself. Nothing was changed",
                current.display()
            ));
        }
    }
    Ok(())
}

/// Writes `bytes` to `file` atomically: a temporary file in its folder (with the old file's
/// permissions), synced, then renamed over it.
fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let dir = match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".settings-")
        .tempfile_in(dir)?;
    if let Ok(meta) = std::fs::metadata(file) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(source: &str) -> impl FnOnce(&mut Vec<Value>) + '_ {
        move |list: &mut Vec<Value>| list.push(Value::String(source.into()))
    }

    fn drop_source(source: &str) -> impl FnOnce(&mut Vec<Value>) + '_ {
        move |list: &mut Vec<Value>| list.retain(|v| v.as_str() != Some(source))
    }

    #[test]
    fn only_the_packages_value_changes() {
        let before = "{\"big\":123456789012345678901234567890,  \"e\" : 1E3,\n\t\"nested\": {\"z\": [1.50, -0.0e-0], \"a\": \"\\u00e9t\u{e9}\"},\n  \"packages\": [\"npm:keep\",   {\"source\": \"npm:obj\", \"extensions\": []}],\n  \"last\": true}";
        let after = edit_packages(before.as_bytes(), add("/x/y"))
            .unwrap()
            .unwrap();
        let (head, tail) = before.split_once("\"packages\": ").unwrap();
        assert!(after.starts_with(head), "{after}");
        let end = tail.find("],").unwrap();
        assert!(after.ends_with(&tail[end + 1..]), "{after}");
        assert!(
            after.contains("[\"npm:keep\",   {\"source\": \"npm:obj\", \"extensions\": []}"),
            "{after}"
        );
        let value: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(value["packages"][2], "/x/y");

        let removed = edit_packages(after.as_bytes(), drop_source("npm:keep"))
            .unwrap()
            .unwrap();
        let value: Value = serde_json::from_str(&removed).unwrap();
        assert_eq!(
            value["packages"],
            serde_json::json!([{"source": "npm:obj", "extensions": []}, "/x/y"])
        );
        assert!(removed.starts_with(head) && removed.ends_with(&tail[end + 1..]));
        assert_eq!(
            edit_packages(removed.as_bytes(), drop_source("npm:absent")),
            Ok(None)
        );
    }

    #[test]
    fn lists_keep_their_layout() {
        let cases = [
            (
                "{\n  \"packages\": [\n    \"a\",\n    \"b\"\n  ],\n  \"z\": 1\n}\n",
                "{\n  \"packages\": [\n    \"b\",\n    \"n\"\n  ],\n  \"z\": 1\n}\n",
            ),
            (
                "{\"packages\": [\"b\", \"a\"], \"z\": 1}",
                "{\"packages\": [\"b\", \"n\"], \"z\": 1}",
            ),
            (
                "{\n    \"x\": {\"y\": 1},\n    \"z\": 1\n}\n",
                "{\n    \"x\": {\"y\": 1},\n    \"z\": 1,\n    \"packages\": [\n        \"n\"\n    ]\n}\n",
            ),
            ("{}", "{\"packages\": [\"n\"]}"),
        ];
        for (before, after) in cases {
            let edited = edit_packages(before.as_bytes(), |list| {
                list.retain(|v| v != "a");
                list.push("n".into());
            });
            assert_eq!(edited, Ok(Some(after.to_owned())), "{before}");
        }
    }

    #[test]
    fn a_missing_or_null_list_is_added() {
        let after = edit_packages(b"{\n  \"a\": 1\n}\n", add("npm:x"))
            .unwrap()
            .unwrap();
        assert!(after.starts_with("{\n  \"a\": 1,\n"), "{after}");
        assert!(after.ends_with("}\n"), "{after}");
        let value: Value = serde_json::from_str(&after).unwrap();
        assert_eq!(value["packages"], serde_json::json!(["npm:x"]));
        let after = edit_packages(b"{\"packages\": null, \"b\": 2}", add("npm:x"))
            .unwrap()
            .unwrap();
        assert_eq!(after, "{\"packages\": [\"npm:x\"], \"b\": 2}");
    }

    #[test]
    fn what_cannot_be_edited_is_refused_with_its_position() {
        let cases: [(&str, usize, usize, &str); 7] = [
            (
                "{\n  // mine\n  \"a\": 1\n}",
                2,
                3,
                "Comments are not allowed",
            ),
            ("{\"a\": [1, 2,],\n}", 1, 12, "Trailing commas"),
            ("[1, 2]", 1, 1, "not a JSON object"),
            ("{\"a\": 1e400}", 1, 11, "pi-hooks cannot read it"),
            (
                "{\"packages\": [],\n \"packages\": []}",
                2,
                2,
                "set 2 times",
            ),
            (
                "{\"x\": 1, \"packages\": \"npm:a\"}",
                1,
                22,
                "must be an array",
            ),
            ("", 1, 0, "pi-hooks cannot read it"),
        ];
        for (text, line, column, message) in cases {
            let e = edit_packages(text.as_bytes(), add("npm:x")).unwrap_err();
            assert_eq!((e.line, e.column), (line, column), "{text}: {e:?}");
            assert!(e.message.contains(message), "{text}: {e:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn writes_through_a_user_link_and_refuses_a_project_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("dotfiles/settings.json");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        std::fs::write(&real, "{\"n\": 1E3}").unwrap();
        let link = dir.path().join("agent/settings.json");
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink("../dotfiles/settings.json", &link).unwrap();
        assert_eq!(
            update_packages(&link, Links::WriteThrough, add("npm:x")),
            Ok(true)
        );
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(
            std::fs::read_to_string(&real).unwrap(),
            "{\"n\": 1E3, \"packages\": [\"npm:x\"]}"
        );
        let e = update_packages(&link, Links::RefuseBelow(dir.path()), add("npm:y")).unwrap_err();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert!(!std::fs::read_to_string(&real).unwrap().contains("npm:y"));
    }
}
