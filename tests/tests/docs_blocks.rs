//! The docs cannot drift from the code: README.md and every page of `docs/` (issue 34) are
//! read as a reader would follow them and their code blocks are checked against the real
//! tools.
//!
//! - Every relative link points to a file that exists, and every `#anchor` to a heading of
//!   its target (GitHub's anchors: lowercase, spaces to `-`, punctuation dropped, `-1`, `-2`
//!   for repeated headings). `docs/SUMMARY.md` lists every page once.
//! - Every `c` / `cpp` block that is a whole translation unit (it includes `pi_hooks.h` or
//!   `pi_hooks.hpp`) compiles against the committed `include/` (`cc -std=c11` / `c++
//!   -std=c++17`, `-fsyntax-only -Wall -Wextra -Werror`). The other blocks are fragments (a
//!   handler, a line of `init`) and are skipped, counted; at least one C and one C++ unit
//!   must compile, so the check cannot pass by matching nothing.
//! - Every `json` block parses, as one document or as JSON lines. A block whose info string
//!   says `json sketch` shows a shape (`{"name", "description"}`), not a document, and is
//!   skipped.
//! - Every `sh` / `bash` / `console` line that runs `pi-hooks` names a subcommand the binary
//!   has and only flags its `--help` lists (the real binary in target/debug).
//! - Every `rust` block is a doctest: `tests/src/lib.rs` includes every page under
//!   `#[cfg(doctest)]`, so `cargo test -p pi-hooks-tests --doc` (and `cargo test
//!   --workspace`) compiles them; a block marked `ignore` or `no_run` has its reason in an
//!   HTML comment right above it (`<!-- ignore: ... -->`), which this test requires.
//! - The README has at most 400 lines and starts with the demo and the test command.
//!
//! Each checker is also run on a broken input (the `*_catches_*` tests), so none can pass by
//! checking nothing.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use pi_hooks_tests::{pi_hooks_bin, workspace_root};

/// The README's first block, exactly: CI runs the test command as written.
const README_FIRST_BLOCK: &str = "bash scripts/demo.sh      # main job: real sessions through the workflow plugin and the example plugins\n\
cargo test --workspace    # all tests (real plugins, real loader, real C compiler)";

/// The README's most lines.
const README_MAX_LINES: usize = 400;

/// One page: its path (relative to the workspace root) and its text.
struct Page {
    path: PathBuf,
    text: String,
}

/// A fenced code block of a page.
struct Block {
    /// `page:line` of the opening fence.
    place: String,
    /// The whole info string (`rust ignore`, `json sketch`).
    info: String,
    /// Its first word (`rust`, `json`, `sh`).
    lang: String,
    /// The lines, with the fence's indentation removed.
    text: String,
    /// The nearest non-blank line above the fence.
    line_before: String,
}

/// README.md and every `docs/*.md`, sorted.
fn pages() -> Vec<Page> {
    let root = workspace_root();
    let mut paths = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("read docs/")
        .map(|entry| entry.expect("docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .map(|path| Path::new("docs").join(path.file_name().expect("file name")))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|path| Page {
            text: std::fs::read_to_string(root.join(&path))
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display())),
            path,
        })
        .collect()
}

/// The fenced blocks of a page (``` fences, indented in lists or not).
fn blocks(page: &Page) -> Vec<Block> {
    let lines: Vec<&str> = page.text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            let indent = lines[i].len() - trimmed.len();
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && lines[i].trim() != "```" {
                let line = lines[i];
                let cut = line.len() - line.trim_start().len();
                body.push(&line[cut.min(indent)..]);
                i += 1;
            }
            let line_before = lines[..start]
                .iter()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map_or(String::new(), |l| l.trim().to_owned());
            out.push(Block {
                place: format!("{}:{}", page.path.display(), start + 1),
                info: info.trim().to_owned(),
                lang: info.split_whitespace().next().unwrap_or("").to_owned(),
                text: body.join("\n"),
                line_before,
            });
        }
        i += 1;
    }
    out
}

/// The page's lines outside fenced blocks.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut inside = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if !inside {
            out.push((n + 1, line));
        }
    }
    out
}

/// GitHub's anchor for a heading's text.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a page's headings, repeated ones numbered as GitHub numbers them.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let n = seen.entry(base.clone()).or_insert(0);
        out.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of the `[text](target)` links of a line, inline code left out.
fn link_targets(line: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code {
            prose.push(c);
        }
    }
    let mut out = Vec::new();
    let mut rest = prose.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let end = after.find([')', ' ']).unwrap_or(after.len());
        out.push(after[..end].to_owned());
        rest = &after[end..];
    }
    out
}

/// Problems with the relative links and anchors of `pages`, read from `root`.
fn check_links(root: &Path, pages: &[Page]) -> Vec<String> {
    let mut cache: HashMap<PathBuf, Option<Vec<String>>> = HashMap::new();
    for page in pages {
        cache.insert(page.path.clone(), Some(anchors(&page.text)));
    }
    let mut problems = Vec::new();
    for page in pages {
        let dir = page.path.parent().unwrap_or(Path::new(""));
        for (n, line) in prose_lines(&page.text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let target_path = if file.is_empty() {
                    page.path.clone()
                } else {
                    normalize(&dir.join(file))
                };
                if !cache.contains_key(&target_path) && !root.join(&target_path).exists() {
                    problems.push(format!(
                        "{}:{n}: the link {target} points to {}, which does not exist",
                        page.path.display(),
                        target_path.display()
                    ));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if target_path.extension().is_none_or(|ext| ext != "md") {
                    continue;
                }
                let known = cache
                    .entry(target_path.clone())
                    .or_insert_with(|| {
                        std::fs::read_to_string(root.join(&target_path))
                            .ok()
                            .map(|text| anchors(&text))
                    })
                    .clone()
                    .unwrap_or_default();
                if !known.iter().any(|a| a == anchor) {
                    problems.push(format!(
                        "{}:{n}: the link {target}: {} has no heading with the anchor #{anchor}",
                        page.path.display(),
                        target_path.display()
                    ));
                }
            }
        }
    }
    problems
}

/// `a/b/../c` as `a/c` (without touching the file system).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Problems with the `json` blocks: each parses as one document or as JSON lines.
fn check_json(blocks: &[Block]) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks.iter().filter(|b| b.lang == "json") {
        if block.info.split_whitespace().any(|w| w == "sketch") {
            continue;
        }
        let Err(whole) = serde_json::from_str::<serde_json::Value>(&block.text) else {
            continue;
        };
        let line_errors: Vec<String> = block
            .text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).err())
            .map(|e| e.to_string())
            .collect();
        if !line_errors.is_empty() {
            problems.push(format!(
                "{}: the json block does not parse ({whole}; as JSON lines: {})",
                block.place,
                line_errors.join("; ")
            ));
        }
    }
    problems
}

/// Compiles the whole C and C++ translation units among `blocks` against `include/`:
/// the problems, and how many units of each language compiled.
fn check_c(blocks: &[Block]) -> (Vec<String>, BTreeMap<&'static str, usize>) {
    let include = workspace_root().join("include");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut problems = Vec::new();
    let mut compiled = BTreeMap::new();
    for (i, block) in blocks.iter().enumerate() {
        let (lang, compiler, ext, std) = match block.lang.as_str() {
            "c" => (
                "c",
                std::env::var("CC").unwrap_or("cc".into()),
                "c",
                "-std=c11",
            ),
            "cpp" | "c++" => (
                "cpp",
                std::env::var("CXX").unwrap_or("c++".into()),
                "cpp",
                "-std=c++17",
            ),
            _ => continue,
        };
        let whole = block.text.lines().any(|l| {
            let l = l.trim();
            l == "#include \"pi_hooks.h\"" || l == "#include \"pi_hooks.hpp\""
        });
        if !whole {
            continue; // a fragment
        }
        let file = dir.path().join(format!("block{i}.{ext}"));
        std::fs::write(&file, &block.text).expect("write block");
        let out = Command::new(&compiler)
            .args([std, "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(&include)
            .arg(&file)
            .output()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        if out.status.success() {
            *compiled.entry(lang).or_insert(0) += 1;
        } else {
            problems.push(format!(
                "{}: the {lang} block does not compile against include/:\n{}",
                block.place,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    (problems, compiled)
}

/// A shell word, and whether any of it was quoted.
struct Word {
    text: String,
    quoted: bool,
}

/// Splits one command line into words and the operators `|`, `;`, `&`, `(`, `)` (also
/// `&&`, `||` and `$(` as their parts); a `#` starting a word begins a comment.
fn shell_words(line: &str) -> Vec<Word> {
    let mut out: Vec<Word> = Vec::new();
    let mut current: Option<Word> = None;
    let mut chars = line.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                current.as_mut().expect("open word").text.push(c);
            }
            continue;
        }
        match c {
            '\'' | '"' => {
                quote = Some(c);
                current
                    .get_or_insert(Word {
                        text: String::new(),
                        quoted: true,
                    })
                    .quoted = true;
            }
            '\\' => {
                if let Some(next) = chars.next() {
                    current
                        .get_or_insert(Word {
                            text: String::new(),
                            quoted: true,
                        })
                        .text
                        .push(next);
                }
            }
            '#' if current.is_none() => break,
            c if c.is_whitespace() => out.extend(current.take()),
            '|' | ';' | '&' | '(' | ')' => {
                let dollar = current.as_ref().is_some_and(|w| w.text == "$" && c == '(');
                if !dollar {
                    out.extend(current.take());
                } else {
                    current = None;
                }
                out.push(Word {
                    text: c.to_string(),
                    quoted: false,
                });
            }
            c => current
                .get_or_insert(Word {
                    text: String::new(),
                    quoted: false,
                })
                .text
                .push(c),
        }
    }
    out.extend(current);
    out
}

/// The commands of a shell block that run `pi-hooks`: each as its words after `pi-hooks`.
fn pi_hooks_commands(block: &Block) -> Vec<Vec<Word>> {
    let console = block.lang == "console";
    let mut joined = Vec::new();
    let mut pending = String::new();
    for line in block.text.lines() {
        let line = match (console, line.strip_prefix("$ ")) {
            (_, Some(command)) => command,
            (true, None) if pending.is_empty() => continue,
            _ => line,
        };
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
        } else {
            pending.push_str(line);
            joined.push(std::mem::take(&mut pending));
        }
    }
    let mut out = Vec::new();
    for line in joined {
        let words = shell_words(&line);
        let mut at_start = true;
        let mut i = 0;
        while i < words.len() {
            let word = &words[i];
            let op = !word.quoted && ["|", ";", "&", "(", ")"].contains(&word.text.as_str());
            if op {
                at_start = true;
            } else if at_start {
                let assignment = !word.quoted
                    && word.text.split_once('=').is_some_and(|(name, _)| {
                        !name.is_empty()
                            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    });
                let wrapper =
                    ["npx", "exec", "time", "command", "sudo"].contains(&word.text.as_str());
                if !assignment && !wrapper {
                    at_start = false;
                    if word.text == "pi-hooks" || word.text.ends_with("/pi-hooks") {
                        let mut args = Vec::new();
                        let mut j = i + 1;
                        while j < words.len()
                            && (words[j].quoted
                                || !["|", ";", "&", "(", ")"].contains(&words[j].text.as_str()))
                        {
                            args.push(Word {
                                text: words[j].text.clone(),
                                quoted: words[j].quoted,
                            });
                            j += 1;
                        }
                        out.push(args);
                        i = j;
                        continue;
                    }
                }
            }
            i += 1;
        }
    }
    out
}

/// `pi-hooks ARGS --help`, cached.
struct Help {
    bin: PathBuf,
    cache: HashMap<Vec<String>, String>,
}

impl Help {
    fn of(&mut self, command: &[&str]) -> &str {
        let key: Vec<String> = command.iter().map(|s| (*s).to_owned()).collect();
        let bin = self.bin.clone();
        self.cache.entry(key).or_insert_with(|| {
            let out = Command::new(&bin)
                .args(command)
                .arg("--help")
                .output()
                .expect("run pi-hooks --help");
            assert!(out.status.success(), "pi-hooks {command:?} --help failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        })
    }

    /// The subcommands `pi-hooks [SUB] --help` lists under "Commands:".
    fn subcommands(&mut self, command: &[&str]) -> Vec<String> {
        let text = self.of(command);
        let mut out = Vec::new();
        let mut inside = false;
        for line in text.lines() {
            if line.starts_with("Commands:") {
                inside = true;
            } else if inside && line.starts_with("  ") && !line.starts_with("   ") {
                out.extend(line.split_whitespace().next().map(str::to_owned));
            } else if inside && !line.starts_with(' ') {
                inside = false;
            }
        }
        out
    }
}

/// Whether `help` lists the flag `flag` (`--name` or `-x`).
fn lists_flag(help: &str, flag: &str) -> bool {
    help.match_indices(flag).any(|(at, _)| {
        let before = help[..at].chars().next_back();
        let after = help[at + flag.len()..].chars().next();
        before.is_none_or(|c| c.is_whitespace() || c == '[')
            && after.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'))
    })
}

/// Problems with the `pi-hooks` command lines of the shell blocks.
fn check_commands(blocks: &[Block], help: &mut Help) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    let commands = help.subcommands(&[]);
    for block in blocks {
        if !["sh", "bash", "shell", "console"].contains(&block.lang.as_str()) {
            continue;
        }
        for args in pi_hooks_commands(block) {
            checked += 1;
            let mut rest = args.iter().peekable();
            let mut global = Vec::new();
            while let Some(word) = rest.next_if(|w| !w.quoted && w.text.starts_with('-')) {
                global.push(word.text.clone());
            }
            let mut path: Vec<String> = Vec::new();
            match rest.peek() {
                Some(word) if !word.text.starts_with('-') => {
                    if !commands.contains(&word.text) {
                        problems.push(format!(
                            "{}: `pi-hooks {}`: pi-hooks has no subcommand {:?} (it has {})",
                            block.place,
                            args.iter()
                                .map(|w| w.text.as_str())
                                .collect::<Vec<_>>()
                                .join(" "),
                            word.text,
                            commands.join(", ")
                        ));
                        continue;
                    }
                    path.push(word.text.clone());
                    rest.next();
                    let refs: Vec<&str> = path.iter().map(String::as_str).collect();
                    let nested = help.subcommands(&refs);
                    if !nested.is_empty() {
                        match rest.next() {
                            Some(word) if nested.contains(&word.text) => {
                                path.push(word.text.clone())
                            }
                            other => {
                                problems.push(format!(
                                    "{}: `pi-hooks {}` needs one of {} after it, not {:?}",
                                    block.place,
                                    path.join(" "),
                                    nested.join(", "),
                                    other.map(|w| w.text.as_str())
                                ));
                                continue;
                            }
                        }
                    }
                }
                // `pi-hooks` alone, or with options only: the interactive mode.
                _ => path.push("chat".to_owned()),
            }
            let refs: Vec<&str> = path.iter().map(String::as_str).collect();
            let text = help.of(&refs).to_owned();
            let flags = global.iter().cloned().chain(
                rest.filter(|w| !w.quoted && w.text.starts_with('-') && w.text.len() > 1)
                    .map(|w| w.text.clone()),
            );
            for flag in flags {
                let name = flag.split_once('=').map_or(flag.as_str(), |(n, _)| n);
                if !lists_flag(&text, name) {
                    problems.push(format!(
                        "{}: `pi-hooks {} ... {flag}`: `pi-hooks {} --help` has no {name}",
                        block.place,
                        path.join(" "),
                        path.join(" ")
                    ));
                }
            }
        }
    }
    (problems, checked)
}

/// Problems with the README as the entry: its length and its first block.
fn check_readme(text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > README_MAX_LINES {
        problems.push(format!(
            "README.md has {lines} lines; at most {README_MAX_LINES} (move the rest into docs/)"
        ));
    }
    let page = Page {
        path: PathBuf::from("README.md"),
        text: text.to_owned(),
    };
    match blocks(&page).first() {
        Some(block) if block.text == README_FIRST_BLOCK => {}
        Some(block) => problems.push(format!(
            "{}: the README's first block must be the demo and the test command, exactly:\n{README_FIRST_BLOCK}\nit is:\n{}",
            block.place, block.text
        )),
        None => problems.push("README.md has no code block".to_owned()),
    }
    problems
}

/// Problems with the rust blocks' doctest set-up: every page included by
/// `tests/src/lib.rs`, and every `ignore` / `no_run` block with its reason above it.
fn check_rust(pages: &[Page], lib_rs: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for page in pages {
        let include = format!("include_str!(\"../../{}\")", page.path.display());
        if !lib_rs.contains(&include) {
            problems.push(format!(
                "tests/src/lib.rs does not include {} among the doctest pages (`#[doc = {include}]`)",
                page.path.display()
            ));
        }
        for block in blocks(page) {
            if block.lang.is_empty() {
                problems.push(format!(
                    "{}: a block without a language is compiled by rustdoc as Rust; name its language (text, console, ...)",
                    block.place
                ));
            }
            let words: Vec<&str> = block.info.split([' ', ',']).collect();
            if words.first() == Some(&"rust")
                && (words.contains(&"ignore") || words.contains(&"no_run"))
                && !(block.line_before.starts_with("<!-- ignore:")
                    || block.line_before.starts_with("<!-- no_run:"))
            {
                problems.push(format!(
                    "{}: a rust block marked {} needs its reason in a comment right above it (<!-- ignore: ... -->)",
                    block.place, block.info
                ));
            }
        }
    }
    problems
}

fn fail_on(what: &str, problems: &[String]) {
    assert!(problems.is_empty(), "{what}:\n{}", problems.join("\n"));
}

fn all_blocks() -> Vec<Block> {
    pages().iter().flat_map(blocks).collect()
}

fn help() -> Help {
    Help {
        bin: pi_hooks_bin(),
        cache: HashMap::new(),
    }
}

#[test]
fn the_readme_is_an_entry_of_at_most_400_lines_starting_with_the_two_commands() {
    let text = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    fail_on("README.md", &check_readme(&text));
}

#[test]
fn summary_lists_every_page_once_in_reading_order() {
    let root = workspace_root();
    let summary = std::fs::read_to_string(root.join("docs/SUMMARY.md")).expect("docs/SUMMARY.md");
    let listed: Vec<String> = prose_lines(&summary)
        .iter()
        .flat_map(|(_, line)| link_targets(line))
        .collect();
    let mut problems = Vec::new();
    for page in pages() {
        let Ok(name) = page.path.strip_prefix("docs") else {
            continue;
        };
        let name = name.display().to_string();
        if name == "SUMMARY.md" {
            continue;
        }
        let times = listed.iter().filter(|l| **l == name).count();
        if times != 1 {
            problems.push(format!(
                "docs/SUMMARY.md lists {name} {times} times (once wanted)"
            ));
        }
    }
    fail_on("docs/SUMMARY.md", &problems);
}

#[test]
fn relative_links_and_anchors_resolve() {
    fail_on("links", &check_links(&workspace_root(), &pages()));
}

#[test]
fn c_and_cpp_translation_units_compile_against_the_committed_header() {
    let (problems, compiled) = check_c(&all_blocks());
    fail_on("C and C++ blocks", &problems);
    assert!(
        compiled.get("c").copied().unwrap_or(0) >= 1
            && compiled.get("cpp").copied().unwrap_or(0) >= 1,
        "expected at least one whole C and one whole C++ block to compile, compiled {compiled:?}"
    );
}

#[test]
fn json_blocks_parse() {
    let blocks = all_blocks();
    assert!(blocks.iter().filter(|b| b.lang == "json").count() >= 10);
    fail_on("json blocks", &check_json(&blocks));
}

#[test]
fn pi_hooks_command_lines_name_real_subcommands_and_flags() {
    let (problems, checked) = check_commands(&all_blocks(), &mut help());
    fail_on("pi-hooks command lines", &problems);
    assert!(
        checked >= 30,
        "only {checked} pi-hooks command lines were found"
    );
}

#[test]
fn every_page_is_a_doctest_and_ignored_rust_blocks_say_why() {
    let lib_rs =
        std::fs::read_to_string(workspace_root().join("tests/src/lib.rs")).expect("lib.rs");
    fail_on("rust blocks", &check_rust(&pages(), &lib_rs));
}

// The checkers on broken input: each must report it.

fn page(path: &str, text: &str) -> Page {
    Page {
        path: PathBuf::from(path),
        text: text.to_owned(),
    }
}

#[test]
fn the_link_check_catches_a_missing_file_and_a_missing_anchor() {
    let pages = [page(
        "docs/a.md",
        "# A page\n\n## Its part (`x`)\n\n[ok](#its-part-x) [ok](sessions.md#sessions)\n\
             [gone](nope.md) [no anchor](#nothing-here) [other](sessions.md#not-a-heading)\n\
             `[in code](nope.md)`\n```sh\n[in a block](nope.md)\n```\n",
    )];
    let problems = check_links(&workspace_root(), &pages);
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("nope.md"), "{problems:#?}");
    assert!(problems[1].contains("#nothing-here"), "{problems:#?}");
    assert!(problems[2].contains("#not-a-heading"), "{problems:#?}");
    assert_eq!(
        anchors(
            "# Isolating plugins (`--isolate`)\n## The `piHooks` key of package.json\n## Twice\n## Twice\n"
        ),
        [
            "isolating-plugins---isolate",
            "the-pihooks-key-of-packagejson",
            "twice",
            "twice-1"
        ]
    );
}

#[test]
fn the_json_check_catches_a_block_that_does_not_parse() {
    let page = page(
        "docs/x.md",
        "```json\n{\"a\": }\n```\n```json\n{\"a\": 1}\n{\"b\": 2}\n```\n```json sketch\n{\"a\", \"b\"}\n```\n",
    );
    let problems = check_json(&blocks(&page));
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("docs/x.md:1"), "{problems:#?}");
}

#[test]
fn the_c_check_compiles_whole_units_and_catches_an_error() {
    let page = page(
        "docs/x.md",
        "```c\n#include \"pi_hooks.h\"\nint f(void) { return no_such_thing; }\n```\n\
         ```c\nhost->registry->on(plugin, pi_str(\"x\"), f, NULL);\n```\n\
         ```cpp\n#include \"pi_hooks.hpp\"\nint g() { return 0; }\n```\n",
    );
    let (problems, compiled) = check_c(&blocks(&page));
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert!(problems[0].contains("no_such_thing"), "{problems:#?}");
    assert_eq!(compiled.get("cpp"), Some(&1));
    assert_eq!(compiled.get("c"), None);
}

#[test]
fn the_command_check_catches_an_unknown_subcommand_and_flag() {
    let page = page(
        "docs/x.md",
        "```sh\npi-hooks run --no-such-flag \"--not-a-flag\" -p\nPI_HOOKS_TRACE=1 pi-hooks nosuch\n\
         npm install -g pi-hooks   # not a pi-hooks command line\npi-hooks bridge install --project\n\
         echo x | target/debug/pi-hooks emit lib.so tool_call --payload '{\"a\":\"--b\"}' --nope\n\
         pi-hooks --trace=json list --json\n```\n```console\n$ pi-hooks list \\\n    --jsn\nout --not-read\n```\n",
    );
    let (problems, checked) = check_commands(&blocks(&page), &mut help());
    assert_eq!(checked, 6, "{problems:#?}");
    assert_eq!(problems.len(), 4, "{problems:#?}");
    assert!(problems[0].contains("--no-such-flag"), "{problems:#?}");
    assert!(problems[1].contains("\"nosuch\""), "{problems:#?}");
    assert!(problems[2].contains("--nope"), "{problems:#?}");
    assert!(problems[3].contains("--jsn"), "{problems:#?}");
}

#[test]
fn the_readme_check_catches_a_long_readme_and_a_changed_first_block() {
    let good = format!("# pi-hooks\n\n```sh\n{README_FIRST_BLOCK}\n```\n");
    assert!(check_readme(&good).is_empty());
    let long = format!("{good}{}", "line\n".repeat(400));
    assert_eq!(check_readme(&long).len(), 1);
    let changed = good.replace("cargo test --workspace", "cargo test");
    assert_eq!(check_readme(&changed).len(), 1);
}

#[test]
fn the_rust_check_catches_an_unlisted_page_and_an_ignore_without_a_reason() {
    let pages = [page(
        "docs/x.md",
        "```rust ignore\nlet x = 1;\n```\n\n<!-- ignore: a fragment -->\n```rust ignore\nlet y = 2;\n```\n```\nno language\n```\n",
    )];
    let problems = check_rust(&pages, "");
    assert_eq!(problems.len(), 3, "{problems:#?}");
    let listed = check_rust(&pages, "#[doc = include_str!(\"../../docs/x.md\")]");
    assert_eq!(listed.len(), 2, "{listed:#?}");
}
