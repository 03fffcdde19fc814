//! # pi-hooks-gen-header
//!
//! Generates `include/pi_hooks.h`, the C header of the plugin ABI, from the Rust sources in
//! `abi/src/ffi` with cbindgen, and checks that the committed header is current.
//!
//! What the header looks like is configured in one place, `cbindgen.toml` beside this crate's
//! `Cargo.toml`. This library adds what a static file cannot know:
//!
//! - the list of items to export: every `pub struct`, `pub type` and `pub const` of
//!   `abi/src/ffi/*.rs` ([`ffi_items`]); the ABI has no Rust functions through which cbindgen
//!   would otherwise find them;
//! - the trailer placeholders: the layout fingerprint of the ABI crate and one static assert
//!   per size-prefixed struct.
//!
//! The binary `gen-header` (run it through `scripts/gen-header.sh`) writes the header, or with
//! `--verify` fails when the committed one differs.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The `abi` crate whose `src/ffi` is the ABI.
const ABI_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../abi");
/// The cbindgen configuration.
const CONFIG_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/cbindgen.toml");
/// The root of the repository.
const REPO_ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// Placeholder in the configured trailer for `PI_HOOKS_LAYOUT_FINGERPRINT`'s value.
const FINGERPRINT_PLACEHOLDER: &str = "@PI_HOOKS_LAYOUT_FINGERPRINT@";
/// Placeholder in the configured header for the event reference.
pub const EVENTS_PLACEHOLDER: &str = "@PI_HOOKS_EVENT_REFERENCE@";

/// Where the Markdown event reference goes, relative to the repository root.
pub const EVENTS_DOC_REL_PATH: &str = "docs/events.md";

/// The text of `docs/events.md`.
pub fn events_doc() -> String {
    pi_hooks_abi::event_reference::markdown()
}

/// Placeholder in the configured trailer for the generated layout asserts.
const ASSERTS_PLACEHOLDER: &str = "@PI_HOOKS_LAYOUT_ASSERTS@";

/// Path of the header relative to the repository root, as messages name it.
pub const HEADER_REL_PATH: &str = "include/pi_hooks.h";

/// What kind of item of `abi/src/ffi` a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// A `#[repr(C)]` struct; `size_prefixed` when its first field is `struct_size`.
    Struct { size_prefixed: bool },
    /// A struct without `#[repr(C)]`: an opaque handle such as `PiValue`.
    Opaque,
    /// A `pub type` alias: a function pointer type or `PiStatus`.
    Typedef,
    /// A `pub const`.
    Const,
}

/// One exported item of `abi/src/ffi`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FfiItem {
    /// The Rust (and C) name.
    pub name: String,
    /// What it is.
    pub kind: ItemKind,
    /// The file it is declared in, for messages.
    pub file: String,
    /// Identifiers its declaration mentions (field and parameter types among others).
    pub mentions: Vec<String>,
}

/// The path of `include/pi_hooks.h` in this checkout.
pub fn header_path() -> PathBuf {
    repo_root().join(HEADER_REL_PATH)
}

/// The repository root (canonical when it can be resolved).
pub fn repo_root() -> PathBuf {
    let root = Path::new(REPO_ROOT);
    root.canonicalize().unwrap_or_else(|_| root.to_path_buf())
}

/// Lists every `pub struct`, `pub type` and `pub const` declared at the start of a line in
/// `abi/src/ffi/*.rs`, in file order (files sorted by name).
///
/// This is a line scanner, not a Rust parser: it relies on the ABI's plain style (one item per
/// line start, `#[repr(C)]` on its own line above a struct, the first field on the line after
/// `{`). A test checks the result against the generated header, so a style it cannot read
/// shows up as a failing test, not as a silently missing item.
pub fn ffi_items() -> Result<Vec<FfiItem>, String> {
    let dir = Path::new(ABI_DIR).join("src/ffi");
    let mut files: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut items = Vec::new();
    for path in files {
        let text = fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let file = format!(
            "abi/src/ffi/{}",
            path.file_name().unwrap().to_string_lossy()
        );
        scan_items(&text, &file, &mut items);
    }
    Ok(items)
}

/// Appends the items declared in one source file.
fn scan_items(text: &str, file: &str, items: &mut Vec<FfiItem>) {
    let lines: Vec<&str> = text.lines().collect();
    let mut repr_c = false;
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_start();
        if line.starts_with("#[repr(C") {
            repr_c = true;
            continue;
        }
        if line.starts_with("#[") || line.starts_with("///") {
            continue;
        }
        let item = if let Some(rest) = line.strip_prefix("pub struct ") {
            let kind = if repr_c {
                let first_field = lines[i + 1..]
                    .iter()
                    .map(|l| l.trim())
                    .find(|l| !l.is_empty() && !l.starts_with("//"));
                let size_prefixed =
                    first_field.is_some_and(|l| l.starts_with("pub struct_size: u32"));
                ItemKind::Struct { size_prefixed }
            } else {
                ItemKind::Opaque
            };
            Some((rest, kind))
        } else if let Some(rest) = line.strip_prefix("pub type ") {
            Some((rest, ItemKind::Typedef))
        } else {
            line.strip_prefix("pub const ")
                .map(|rest| (rest, ItemKind::Const))
        };
        repr_c = false;
        if let Some((rest, kind)) = item {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                items.push(FfiItem {
                    name,
                    kind,
                    file: file.to_string(),
                    mentions: identifiers(&declaration(&lines[i..])),
                });
            }
        }
    }
}

/// The text of the declaration starting at `lines[0]`, without comments: up to the closing
/// `}` of a struct at column 0, or up to the line ending in `;`.
fn declaration(lines: &[&str]) -> String {
    let mut text = String::new();
    let block = lines[0].trim_end().ends_with('{');
    for line in lines {
        let code = line.split("//").next().unwrap_or("");
        text.push_str(code);
        text.push('\n');
        let done = if block {
            line.starts_with('}')
        } else {
            code.trim_end().ends_with(';')
        };
        if done {
            break;
        }
    }
    text
}

/// The identifiers in a piece of Rust code.
fn identifiers(code: &str) -> Vec<String> {
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_alphabetic()))
        .map(str::to_string)
        .collect()
}

/// The names of `items` ordered so that every item comes after the items its declaration
/// mentions (depth first, otherwise in file order); this is the order of `[export] include`.
///
/// cbindgen orders what it emits by the dependencies it sees, but it does not see through
/// `Option<PiInitFn>` (an `Option` of a function pointer alias, cbindgen issue #326): left to
/// itself it would declare a struct before the function pointer types of its fields. Listing
/// the items dependencies first makes cbindgen emit them in that order.
pub fn export_order(items: &[FfiItem]) -> Vec<String> {
    fn visit<'a>(
        item: &'a FfiItem,
        items: &'a [FfiItem],
        seen: &mut Vec<&'a str>,
        out: &mut Vec<String>,
    ) {
        if seen.contains(&item.name.as_str()) {
            return;
        }
        seen.push(&item.name);
        for mention in &item.mentions {
            if let Some(dep) = items
                .iter()
                .find(|i| &i.name == mention && i.name != item.name)
            {
                visit(dep, items, seen, out);
            }
        }
        out.push(item.name.clone());
    }
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for item in items {
        visit(item, items, &mut seen, &mut out);
    }
    out
}

/// `PI_HOOKS_LAYOUT_FINGERPRINT`'s value as a C literal.
pub fn fingerprint_literal() -> String {
    format!("0x{:016x}ULL", pi_hooks_abi::layout::LAYOUT_FINGERPRINT)
}

/// One static assert line per size-prefixed struct.
fn layout_asserts(items: &[FfiItem]) -> String {
    let mut out = String::new();
    for item in items {
        if matches!(
            item.kind,
            ItemKind::Struct {
                size_prefixed: true
            }
        ) {
            let name = &item.name;
            if !out.is_empty() {
                out.push('\n');
            }
            let _ = write!(
                out,
                "PI_HOOKS_STATIC_ASSERT_(offsetof({name}, struct_size) == 0,\n                        \
                 \"{name} starts with struct_size\");"
            );
        }
    }
    out
}

/// The cbindgen configuration: `cbindgen.toml` plus the exported items and the filled-in
/// trailer.
pub fn config() -> Result<cbindgen::Config, String> {
    let mut config = cbindgen::Config::from_file(CONFIG_FILE)?;
    let items = ffi_items()?;
    if items.is_empty() {
        return Err(format!("no items found in {ABI_DIR}/src/ffi"));
    }
    for name in export_order(&items) {
        if !config.export.include.contains(&name) {
            config.export.include.push(name);
        }
    }
    for item in &items {
        if item.kind == ItemKind::Typedef {
            // cbindgen turns `Option<extern "C" fn ...>` into a nullable function pointer, but
            // not `Option<Alias>` of a function pointer alias such as `Option<PiInitFn>`: it
            // declares an opaque `Option_PiInitFn` instead. A C function pointer is nullable
            // anyway, so the field is simply of the alias type.
            let option = format!("Option_{}", item.name);
            config.export.exclude.push(option.clone());
            config.export.rename.insert(option, item.name.clone());
        }
    }
    let header = config
        .header
        .take()
        .ok_or_else(|| format!("{CONFIG_FILE}: `header` is missing"))?;
    if !header.contains(EVENTS_PLACEHOLDER) {
        return Err(format!(
            "{CONFIG_FILE}: the header lacks the placeholder {EVENTS_PLACEHOLDER}"
        ));
    }
    let events: Vec<String> = pi_hooks_abi::event_reference::header_lines()
        .iter()
        .map(|line| format!(" * {line}").trim_end().to_owned())
        .collect();
    config.header = Some(header.replace(EVENTS_PLACEHOLDER, &events.join("\n")));
    let trailer = config
        .trailer
        .take()
        .ok_or_else(|| format!("{CONFIG_FILE}: `trailer` is missing"))?;
    for placeholder in [FINGERPRINT_PLACEHOLDER, ASSERTS_PLACEHOLDER] {
        if !trailer.contains(placeholder) {
            return Err(format!(
                "{CONFIG_FILE}: the trailer lacks the placeholder {placeholder}"
            ));
        }
    }
    config.trailer = Some(
        trailer
            .replace(FINGERPRINT_PLACEHOLDER, &fingerprint_literal())
            .replace(ASSERTS_PLACEHOLDER, &layout_asserts(&items)),
    );
    Ok(config)
}

/// Generates the text of `include/pi_hooks.h`.
pub fn generate() -> Result<String, String> {
    let bindings = cbindgen::Builder::new()
        .with_crate(ABI_DIR)
        .with_config(config()?)
        .generate()
        .map_err(|e| format!("cbindgen failed on {ABI_DIR}: {e}"))?;
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).map_err(|e| format!("cbindgen wrote invalid UTF-8: {e}"))
}

/// A short line diff from `old` to `new` in the style of `diff -u` without context: `@@`
/// headers with line numbers, `-` for lines only in `old`, `+` for lines only in `new`. At
/// most `max_lines` lines are printed; the rest is summarised. Empty when equal.
pub fn line_diff(old: &str, new: &str, max_lines: usize) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    // Common prefix and suffix first: the quadratic table then only covers the changed middle.
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if ma.is_empty() && mb.is_empty() {
        return if old == new {
            String::new()
        } else {
            "(the files differ only in line endings or the final newline)\n".to_string()
        };
    }
    // lcs[i][j]: length of the longest common subsequence of ma[i..] and mb[j..].
    let (n, m) = (ma.len(), mb.len());
    if n.saturating_mul(m) > 16_000_000 {
        return format!(
            "@@ {HEADER_REL_PATH} line {} @@ (too many changes for a line diff)\n-{}\n+{}\n",
            prefix + 1,
            ma.first().copied().unwrap_or(""),
            mb.first().copied().unwrap_or("")
        );
    }
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if ma[i] == mb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut lines = Vec::new();
    let (mut i, mut j) = (0, 0);
    let mut in_hunk = false;
    while i < n || j < m {
        if i < n && j < m && ma[i] == mb[j] {
            i += 1;
            j += 1;
            in_hunk = false;
            continue;
        }
        if !in_hunk {
            lines.push(format!(
                "@@ {HEADER_REL_PATH} line {}, generated line {} @@",
                prefix + i + 1,
                prefix + j + 1
            ));
            in_hunk = true;
        }
        if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            lines.push(format!("-{}", ma[i]));
            i += 1;
        } else {
            lines.push(format!("+{}", mb[j]));
            j += 1;
        }
    }
    let total = lines.len();
    let mut out = String::new();
    for line in lines.iter().take(max_lines) {
        out.push_str(line);
        out.push('\n');
    }
    if total > max_lines {
        let _ = writeln!(out, "... ({} more diff lines)", total - max_lines);
    }
    out
}

/// Compares the committed header with the generated text: `Ok(())` when current, otherwise a
/// message with a diff that says how to fix it.
pub fn verify() -> Result<(), String> {
    let generated = generate()?;
    let path = header_path();
    let committed = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) => {
            return Err(format!(
                "{HEADER_REL_PATH} is stale: cannot read {} ({e}); run scripts/gen-header.sh",
                path.display()
            ));
        }
    };
    let doc_path = repo_root().join(EVENTS_DOC_REL_PATH);
    if fs::read_to_string(&doc_path).ok().as_deref() != Some(events_doc().as_str()) {
        return Err(format!(
            "{EVENTS_DOC_REL_PATH} is stale (it is generated from abi/src/event_reference.rs): run scripts/gen-header.sh"
        ));
    }
    if committed == generated {
        return Ok(());
    }
    Err(format!(
        "{HEADER_REL_PATH} is stale: run scripts/gen-header.sh\n\
         --- {HEADER_REL_PATH} (committed)\n+++ {HEADER_REL_PATH} (generated from abi/src/ffi)\n{}",
        line_diff(&committed, &generated, 80)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generated() -> String {
        generate().expect("generate the header")
    }

    /// The part of the header cbindgen derived from Rust items: between the include guard
    /// and its `#endif`.
    fn generated_items(header: &str) -> &str {
        let start = header.find("#define PI_HOOKS_H\n").expect("include guard");
        let end = header
            .find("#endif  /* PI_HOOKS_H */")
            .expect("end of include guard");
        &header[start..end]
    }

    #[test]
    fn committed_header_is_current() {
        if let Err(message) = verify() {
            panic!("{message}");
        }
    }

    #[test]
    fn every_ffi_item_is_declared_with_its_docs() {
        let header = generated();
        let items = ffi_items().unwrap();
        assert!(
            items.len() > 50,
            "the scanner found only {} items",
            items.len()
        );
        let lines: Vec<&str> = header.lines().collect();
        for item in &items {
            let name = &item.name;
            let declares = |line: &str| match item.kind {
                ItemKind::Struct { .. } => line == format!("typedef struct {name} {{"),
                ItemKind::Opaque => line == format!("typedef struct {name} {name};"),
                ItemKind::Typedef => {
                    line.starts_with("typedef ")
                        && (line.contains(&format!("(*{name})("))
                            || line.ends_with(&format!(" {name};")))
                }
                ItemKind::Const => line.starts_with(&format!("#define {name} ")),
            };
            let at = lines
                .iter()
                .position(|l| declares(l))
                .unwrap_or_else(|| panic!("{name} ({}) is not declared in the header", item.file));
            // Every ffi item is documented: its doc comment ends right above the declaration.
            assert!(
                at > 0 && lines[at - 1] == " */",
                "{name} ({}) has no doc comment in the header",
                item.file
            );
        }
    }

    #[test]
    fn struct_fields_keep_their_docs() {
        let header = generated();
        // A sample of field docs from several files.
        for doc in [
            "`sizeof(PiPluginDescriptor)` as the plugin was compiled.",
            "Length in bytes, without any terminating NUL.",
            "The field `key` of an object, borrowed from `value`",
            "Lets the user pick one of `count` options",
            "Time limit in milliseconds, 0 for none.",
        ] {
            assert!(
                header.contains(doc),
                "field doc missing from the header: {doc}"
            );
        }
    }

    #[test]
    fn opaque_handles_are_opaque() {
        let header = generated();
        for name in ["PiValue", "PiResult", "PiPlugin", "PiContext"] {
            assert!(
                header.contains(&format!("typedef struct {name} {name};")),
                "{name} is not an opaque typedef"
            );
            assert!(
                !header.contains(&format!("typedef struct {name} {{")),
                "{name} has a body"
            );
        }
    }

    #[test]
    fn only_ffi_items_are_declared() {
        let header = generated();
        let items = ffi_items().unwrap();
        let known = |name: &str| items.iter().any(|i| i.name == name) || name == "PI_HOOKS_H";
        for line in generated_items(&header).lines() {
            let name = if let Some(rest) = line.strip_prefix("#define ") {
                rest.split_whitespace().next()
            } else if let Some(rest) = line.strip_prefix("typedef struct ") {
                rest.split_whitespace().next()
            } else if line.starts_with("typedef ") {
                // `typedef int32_t PiStatus;` or `typedef R (*Name)(...);`
                line.split("(*")
                    .nth(1)
                    .map(|r| r.split(')').next().unwrap_or(r))
                    .or_else(|| line.trim_end_matches(';').split_whitespace().last())
            } else {
                None
            };
            if let Some(name) = name {
                assert!(
                    known(name),
                    "`{name}` is in the header but not an item of abi/src/ffi: add it to \
                     [export] exclude in scripts/gen-header/cbindgen.toml"
                );
            }
        }
    }

    #[test]
    fn trailer_has_the_c_helpers() {
        let header = generated();
        let fingerprint = format!(
            "#define PI_HOOKS_LAYOUT_FINGERPRINT {}",
            fingerprint_literal()
        );
        for needle in [
            fingerprint.as_str(),
            "#define PI_HOOKS_ENTRY_SYMBOL \"pi_hooks_plugin_v1\"",
            "#define PI_HOOKS_EXPORT",
            "#define PI_HOOKS_EXTERN_C",
            "#define PI_STR_LIT(literal)",
            "static inline PiStr pi_str(const char *s)",
            "static inline PiStr pi_str_n(const char *s, size_t n)",
            "#define PI_HOOKS_DESCRIPTOR(name, version, description, init_fn, shutdown_fn)",
            "#define PI_HOOKS_PLUGIN(name, version, description, init_fn, shutdown_fn)",
            "offsetof(PiPluginDescriptor, struct_size) == 0",
            "offsetof(PiExecRequest, struct_size) == 0",
        ] {
            assert!(header.contains(needle), "the trailer lacks `{needle}`");
        }
        assert!(
            !header.contains("@PI_HOOKS_"),
            "a trailer placeholder was not replaced"
        );
        assert_eq!(pi_hooks_abi::ENTRY_SYMBOL, "pi_hooks_plugin_v1");
    }

    #[test]
    fn descriptor_macro_lists_every_field_in_order() {
        // PI_HOOKS_DESCRIPTOR is positional: it must have one initialiser per field of
        // PiPluginDescriptor. Count the fields in the generated struct.
        let header = generated();
        let start = header.find("typedef struct PiPluginDescriptor {").unwrap();
        let end = start + header[start..].find("} PiPluginDescriptor;").unwrap();
        let fields = header[start..end]
            .lines()
            .filter(|l| l.trim_end().ends_with(';') && !l.trim_start().starts_with('*'))
            .count();
        let mstart = header.find("#define PI_HOOKS_DESCRIPTOR(").unwrap();
        let mend = mstart + header[mstart..].find("\n\n").unwrap();
        let body = &header[mstart..mend];
        let body = &body[body.find('{').unwrap() + 1..body.rfind('}').unwrap()];
        let initialisers = body
            .lines()
            .map(|l| l.trim_end_matches('\\').trim())
            .filter(|l| !l.is_empty())
            .count();
        assert_eq!(
            fields, initialisers,
            "PiPluginDescriptor has {fields} fields but PI_HOOKS_DESCRIPTOR (cbindgen.toml) \
             initialises {initialisers}: update the macro"
        );
    }

    #[test]
    fn diff_shows_changed_lines() {
        let diff = line_diff("a\nb\nc\n", "a\nB\nc\nd\n", 10);
        assert_eq!(
            diff,
            "@@ include/pi_hooks.h line 2, generated line 2 @@\n-b\n+B\n\
             @@ include/pi_hooks.h line 4, generated line 4 @@\n+d\n"
        );
        assert_eq!(line_diff("x\n", "x\n", 10), "");
    }
}
