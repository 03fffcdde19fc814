//! Workflow definitions: loading `workflow.yaml` and its Markdown phase files from
//! `<agentDir>/workflows/<key>/` and `<cwd>/.pi/workflows/<key>/` (project wins), validation
//! with the original's messages, phase-path safety, cycle removal, subworkflow resolution and
//! duplicate command names. Every problem is a warning (prefixed `[pi-workflows] `) and drops
//! only the workflow it concerns.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value as Yaml;

/// `blacklist` / `whitelist` of a phase (at most one of them is set).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseTools {
    /// Tools blocked in the phase.
    pub blacklist: Option<Vec<String>>,
    /// The only tools allowed in the phase (besides `workflow_step`).
    pub whitelist: Option<Vec<String>>,
}

/// A concrete phase, read from a Markdown file with front matter.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PhaseDefinition {
    /// Front matter `id`.
    pub id: String,
    /// Front matter `name`.
    pub name: String,
    /// Front matter `emoji`.
    pub emoji: String,
    /// The Markdown body, trimmed.
    pub instructions: String,
    /// Front matter `tools`.
    pub tools: Option<PhaseTools>,
    /// Front matter `availableProfiles`.
    pub available_profiles: Option<Vec<String>>,
}

/// One entry of a workflow's `phases`.
#[derive(Debug, Clone, PartialEq)]
pub enum PhaseEntry {
    /// A concrete phase.
    Phase(PhaseDefinition),
    /// `{subworkflow: key}`: the phases of another workflow.
    Subworkflow(String),
}

/// A workflow, as `workflow.yaml` describes it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WorkflowDefinition {
    /// Human-readable name.
    pub name: String,
    /// The name `/workflow <commandName>` starts it by.
    pub command_name: String,
    /// The first user message (a template).
    pub initial_message: String,
    /// Session name prefix (default `Workflow: `).
    pub session_name_prefix: Option<String>,
    /// Session name length limit (default 50).
    pub session_name_max_length: Option<usize>,
    /// The phases, at least one.
    pub phases: Vec<PhaseEntry>,
    /// `show: workflows`: only usable as a subworkflow.
    pub internal: bool,
    /// `loopable` (default true).
    pub loopable: Option<bool>,
    /// Template overrides.
    pub role_instruction: Option<String>,
    /// Template override.
    pub advance_reminder: Option<String>,
    /// Template override.
    pub block_reason_template: Option<String>,
    /// Template override.
    pub not_done_reminder: Option<String>,
    /// Template override (completion and cancellation).
    pub completion_message: Option<String>,
}

impl WorkflowDefinition {
    /// Whether `loop` is allowed (only `loopable: false` forbids it).
    pub fn is_loopable(&self) -> bool {
        self.loopable != Some(false)
    }
}

/// The loaded definitions, in key order (global keys first, then project-only keys).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Definitions {
    entries: Vec<(String, WorkflowDefinition)>,
}

impl Definitions {
    /// Builds definitions from `(key, definition)` pairs, in order (for tests and tools).
    pub fn from_entries(entries: Vec<(String, WorkflowDefinition)>) -> Self {
        Definitions { entries }
    }

    /// The definition of `key`.
    pub fn get(&self, key: &str) -> Option<&WorkflowDefinition> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, d)| d)
    }

    /// Whether `key` is defined.
    pub fn contains(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `(key, definition)` in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &WorkflowDefinition)> {
        self.entries.iter().map(|(k, d)| (k.as_str(), d))
    }

    /// The first workflow (key order) with this command name.
    pub fn by_command(&self, command: &str) -> Option<(&str, &WorkflowDefinition)> {
        self.iter().find(|(_, d)| d.command_name == command)
    }

    /// The display name of a phase entry: a phase's name, a subworkflow's name (or its key).
    pub fn entry_name(&self, entry: &PhaseEntry) -> String {
        match entry {
            PhaseEntry::Phase(p) => p.name.clone(),
            PhaseEntry::Subworkflow(key) => self
                .get(key)
                .map_or_else(|| key.clone(), |d| d.name.clone()),
        }
    }

    /// The first concrete phase of `entry`, drilling through subworkflows.
    pub fn first_phase<'a>(&'a self, entry: &'a PhaseEntry) -> Option<&'a PhaseDefinition> {
        let mut entry = entry;
        for _ in 0..=self.entries.len() {
            match entry {
                PhaseEntry::Phase(p) => return Some(p),
                PhaseEntry::Subworkflow(key) => entry = self.get(key)?.phases.first()?,
            }
        }
        None
    }

    fn insert(&mut self, key: String, def: WorkflowDefinition) {
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = def,
            None => self.entries.push((key, def)),
        }
    }

    fn remove(&mut self, keys: &HashSet<String>) {
        self.entries.retain(|(k, _)| !keys.contains(k));
    }
}

/// The agent directory: `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`.
pub fn agent_dir() -> PathBuf {
    match std::env::var_os("PI_CODING_AGENT_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let home = std::env::var_os("HOME").unwrap_or_default();
            PathBuf::from(home).join(".pi").join("agent")
        }
    }
}

/// Loads the workflows of `<agent_dir>/workflows` and, with a `cwd`, of `<cwd>/.pi/workflows`
/// (project wins on the same key), then validates, removes cycles, resolves subworkflows and
/// checks command names. Returns the definitions and the warnings, each prefixed
/// `[pi-workflows] `.
pub fn load(agent_dir: &Path, cwd: Option<&Path>) -> (Definitions, Vec<String>) {
    let mut warnings = Vec::new();
    let mut defs = Definitions::default();
    let mut roots = vec![agent_dir.join("workflows")];
    if let Some(cwd) = cwd {
        roots.push(cwd.join(".pi").join("workflows"));
    }
    for root in roots {
        for (key, def) in load_root(&root, &mut warnings) {
            defs.insert(key, def);
        }
    }
    // Validation.
    let mut invalid = HashSet::new();
    for (key, def) in defs.iter() {
        if let Err(error) = validate(key, def) {
            warnings.push(format!(
                "[pi-workflows] Skipping invalid workflow definition \"{key}\": {error}"
            ));
            invalid.insert(key.to_owned());
        }
    }
    defs.remove(&invalid);
    for (message, keys) in find_cycles(&defs) {
        warnings.push(format!("[pi-workflows] {message}"));
        defs.remove(&keys);
    }
    resolve_references(&mut defs, &mut warnings);
    let mut seen: HashMap<&str, &str> = HashMap::new();
    for (key, def) in defs.iter() {
        if def.command_name.is_empty() {
            continue;
        }
        match seen.get(def.command_name.as_str()) {
            Some(first) => warnings.push(format!(
                "[pi-workflows] Duplicate commandName \"{}\" in workflows \"{first}\" and \"{key}\". The first one found will be used.",
                def.command_name
            )),
            None => {
                seen.insert(&def.command_name, key);
            }
        }
    }
    (defs, warnings)
}

/// The workflows of one root, in name order.
fn load_root(root: &Path, warnings: &mut Vec<String>) -> Vec<(String, WorkflowDefinition)> {
    let read = match std::fs::read_dir(root) {
        Ok(read) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            warnings.push(format!(
                "[pi-workflows] Failed to read workflow directory {}: {e}",
                root.display()
            ));
            return Vec::new();
        }
    };
    let mut dirs: Vec<(String, PathBuf)> = read
        .filter_map(|entry| entry.ok())
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            Some((name, entry.path()))
        })
        .filter(|(_, path)| path.join("workflow.yaml").is_file())
        .collect();
    dirs.sort();
    dirs.into_iter()
        .filter_map(|(key, dir)| match load_workflow(root, &dir) {
            Ok(def) => Some((key, def)),
            Err(warning) => {
                warnings.push(format!("[pi-workflows] {warning}"));
                None
            }
        })
        .collect()
}

/// A string field of a YAML mapping.
fn yaml_str<'a>(map: &'a Yaml, key: &str) -> Option<&'a str> {
    map.get(key).and_then(Yaml::as_str)
}

/// A non-empty string field, or the original's message.
fn required(map: &Yaml, key: &str, dir: &str) -> Result<String, String> {
    match yaml_str(map, key) {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        _ => Err(format!("Missing or invalid \"{key}\" in {dir}")),
    }
}

/// Reads one workflow directory.
fn load_workflow(root: &Path, dir: &Path) -> Result<WorkflowDefinition, String> {
    let shown = dir.display().to_string();
    let file = dir.join("workflow.yaml");
    let text =
        read_bounded(&file).map_err(|e| format!("Failed to load workflow from {shown}: {e}"))?;
    let yaml: Yaml = serde_yaml_ng::from_str(&text)
        .map_err(|e| format!("Failed to load workflow from {shown}: {e}"))?;
    if !yaml.is_mapping() && !yaml.is_sequence() {
        return Err(format!(
            "Invalid workflow.yaml in {shown}: not a valid YAML object"
        ));
    }
    let internal = yaml_str(&yaml, "show") == Some("workflows");
    let name = required(&yaml, "name", &shown)?;
    let (command_name, initial_message) = if internal {
        (
            yaml_str(&yaml, "commandName").unwrap_or("").to_owned(),
            yaml_str(&yaml, "initialMessage").unwrap_or("").to_owned(),
        )
    } else {
        (
            required(&yaml, "commandName", &shown)?,
            required(&yaml, "initialMessage", &shown)?,
        )
    };
    let raw_phases = match yaml.get("phases").and_then(Yaml::as_sequence) {
        Some(list) if !list.is_empty() => list,
        _ => return Err(format!("Missing or invalid \"phases\" array in {shown}")),
    };
    let mut phases = Vec::new();
    for entry in raw_phases {
        if let Some(path) = entry.as_str() {
            if !path_is_safe(root, dir, path) {
                return Err(format!(
                    "Phase file path escapes workflows root: {path} in {shown}/workflow.yaml"
                ));
            }
            // Folded as the original's `path.resolve` does, so messages name
            // `workflows/_shared/x.md`, not `workflows/dev/../_shared/x.md`.
            let joined = normalize(&dir.join(path));
            let phase = load_phase(&joined)
                .map_err(|e| format!("Failed to load phase file {}: {e}", joined.display()))?;
            phases.push(PhaseEntry::Phase(phase));
        } else if let Some(key) = entry.get("subworkflow").and_then(Yaml::as_str) {
            phases.push(PhaseEntry::Subworkflow(key.to_owned()));
        } else {
            return Err(format!(
                "Invalid phase entry in {shown}/workflow.yaml: expected string or {{ subworkflow: key }} object"
            ));
        }
    }
    let opt = |key: &str| yaml_str(&yaml, key).map(str::to_owned);
    Ok(WorkflowDefinition {
        name,
        command_name,
        initial_message,
        session_name_prefix: opt("sessionNamePrefix"),
        session_name_max_length: yaml
            .get("sessionNameMaxLength")
            .and_then(Yaml::as_u64)
            .and_then(|n| usize::try_from(n).ok()),
        phases,
        internal,
        loopable: yaml.get("loopable").and_then(Yaml::as_bool),
        role_instruction: opt("roleInstruction"),
        advance_reminder: opt("advanceReminder"),
        block_reason_template: opt("blockReasonTemplate"),
        not_done_reminder: opt("notDoneReminder"),
        completion_message: opt("completionMessage"),
    })
}

/// The most a `workflow.yaml` or a phase file may hold: 1 MiB. The files are read at every
/// session start, reload, tree navigation and `/workflow`, and parsing YAML costs several
/// times the text's size, so a larger file (a repository's 50 MB front matter) is refused
/// unread rather than costing hundreds of megabytes each time.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// Reads the UTF-8 text of `path`: a regular file of at most [`MAX_FILE_BYTES`] (a FIFO or a
/// device would block or never end), never more than that read into memory.
pub fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let too_large = || format!("larger than {MAX_FILE_BYTES} bytes, the workflow plugin's limit");
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        // It grew after the size check.
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// Whether the phase file `entry` (relative to `dir`) stays inside the workflows `root`
/// after resolving symlinks (a missing file is judged by its lexical path).
pub fn path_is_safe(root: &Path, dir: &Path, entry: &str) -> bool {
    let Ok(root) = std::fs::canonicalize(root) else {
        return false;
    };
    let joined = dir.join(entry);
    let target = std::fs::canonicalize(&joined).unwrap_or_else(|_| normalize(&joined));
    match target.strip_prefix(&root) {
        Ok(rel) => !rel.as_os_str().is_empty(),
        Err(_) => false,
    }
}

/// `path` with `.` and `..` components folded, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Reads a phase file: front matter (`id`, `name`, `emoji`, `tools`, `availableProfiles`)
/// and the body as instructions.
fn load_phase(path: &Path) -> Result<PhaseDefinition, String> {
    let text = read_bounded(path)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    // Front matter may follow blank lines, as the host's `parseFrontmatter` (`^\s*---`)
    // allows.
    let text = match text.trim_start() {
        rest if rest.starts_with("---") => rest.to_owned(),
        _ => text,
    };
    let matter = gray_matter::Matter::<gray_matter::engine::YAML>::new();
    let parsed: gray_matter::ParsedEntity<serde_json::Value> =
        matter.parse(&text).map_err(|e| e.to_string())?;
    let shown = path.display();
    let front = parsed.data.unwrap_or(serde_json::json!({}));
    if !front.is_object() {
        return Err(format!("Invalid frontmatter in phase {shown}"));
    }
    let field = |key: &str| match front.get(key).and_then(|v| v.as_str()) {
        Some(s) if !s.is_empty() => Ok(s.to_owned()),
        _ => Err(format!("Missing or invalid \"{key}\" in {shown}")),
    };
    let list = |v: Option<&serde_json::Value>| {
        v.and_then(|v| v.as_array()).map(|items| {
            items
                .iter()
                .map(|item| match item {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
        })
    };
    let tools = front
        .get("tools")
        .filter(|t| t.is_object())
        .map(|t| PhaseTools {
            blacklist: list(t.get("blacklist")),
            whitelist: list(t.get("whitelist")),
        })
        .filter(|t| t.blacklist.is_some() || t.whitelist.is_some());
    // Front matter that ends the file leaves the body in `matter`'s remainder: none.
    let body = if parsed.matter.is_empty() && !text.trim_start().starts_with("---") {
        text.as_str()
    } else {
        parsed.content.as_str()
    };
    Ok(PhaseDefinition {
        id: field("id")?,
        name: field("name")?,
        emoji: field("emoji")?,
        instructions: body.trim().to_owned(),
        tools,
        available_profiles: list(front.get("availableProfiles")),
    })
}

/// `validateWorkflowDefinition`: the first problem, in the original's words.
pub fn validate(key: &str, def: &WorkflowDefinition) -> Result<(), String> {
    if def.name.trim().is_empty() {
        return Err(format!(
            "Workflow \"{key}\": name must be a non-empty string."
        ));
    }
    if !def.internal {
        if def.command_name.is_empty() {
            return Err(format!(
                "Workflow \"{key}\": commandName must be a non-empty string."
            ));
        }
        if !def
            .command_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!(
                "Workflow \"{key}\": commandName must match /^[a-zA-Z0-9_-]+$. Got: \"{}\"",
                def.command_name
            ));
        }
        if def.initial_message.trim().is_empty() {
            return Err(format!(
                "Workflow \"{key}\": initialMessage must be a non-empty string."
            ));
        }
    }
    if def.phases.is_empty() {
        return Err(format!(
            "Workflow \"{key}\": phases must be an array with at least 1 element."
        ));
    }
    let mut ids = HashSet::new();
    for (i, entry) in def.phases.iter().enumerate() {
        let at = format!("Workflow \"{key}\", phase[{i}]");
        match entry {
            PhaseEntry::Subworkflow(target) => {
                if target.trim().is_empty() {
                    return Err(format!("{at}: workflowKey must be a non-empty string."));
                }
            }
            PhaseEntry::Phase(p) => {
                for (field, value) in [
                    ("id", &p.id),
                    ("name", &p.name),
                    ("emoji", &p.emoji),
                    ("instructions", &p.instructions),
                ] {
                    if value.trim().is_empty() {
                        return Err(format!("{at}: {field} must be a non-empty string."));
                    }
                }
                if !ids.insert(p.id.as_str()) {
                    return Err(format!("{at}: duplicate phase id \"{}\".", p.id));
                }
                if let Some(PhaseTools {
                    blacklist: Some(_),
                    whitelist: Some(_),
                }) = &p.tools
                {
                    return Err(format!(
                        "Workflow \"{key}\", phase \"{}\": cannot set both blacklist and whitelist.",
                        p.id
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The subworkflow keys `def` refers to that exist in `defs`, in phase order.
fn edges<'a>(def: &'a WorkflowDefinition, defs: &Definitions) -> Vec<&'a str> {
    def.phases
        .iter()
        .filter_map(|e| match e {
            PhaseEntry::Subworkflow(k) if defs.contains(k) => Some(k.as_str()),
            _ => None,
        })
        .collect()
}

/// Cycles among subworkflow references: `(message, keys of the cycle)` per cycle found by a
/// depth-first search in key order.
pub fn find_cycles(defs: &Definitions) -> Vec<(String, HashSet<String>)> {
    #[derive(Clone, Copy, PartialEq)]
    enum Color {
        White,
        Gray,
        Black,
    }
    let keys: Vec<&str> = defs.iter().map(|(k, _)| k).collect();
    let mut color: HashMap<&str, Color> = keys.iter().map(|k| (*k, Color::White)).collect();
    let mut parent: HashMap<&str, &str> = HashMap::new();
    let mut found = Vec::new();
    for &start in &keys {
        if color[start] != Color::White {
            continue;
        }
        // Stack of (node, next neighbour index).
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        color.insert(start, Color::Gray);
        while let Some((node, next)) = stack.pop() {
            let Some(def) = defs.get(node) else { continue };
            let neighbours = edges(def, defs);
            if next < neighbours.len() {
                stack.push((node, next + 1));
                let target = neighbours[next];
                match color[target] {
                    Color::White => {
                        parent.insert(target, node);
                        color.insert(target, Color::Gray);
                        stack.push((target, 0));
                    }
                    Color::Gray => {
                        // node → … → target → … → node: walk back from node to target.
                        let mut cycle = vec![node];
                        let mut at = node;
                        while at != target {
                            at = parent[at];
                            cycle.push(at);
                        }
                        cycle.reverse();
                        let mut path: Vec<&str> = cycle.clone();
                        path.push(target);
                        let message = format!(
                            "Cycle detected: {}. Skipping workflow \"{target}\".",
                            path.join(" → ")
                        );
                        found.push((message, cycle.iter().map(|k| k.to_string()).collect()));
                    }
                    Color::Black => {}
                }
            } else {
                color.insert(node, Color::Black);
            }
        }
    }
    found
}

/// Removes workflows that refer to a missing subworkflow, repeatedly, so that a workflow
/// whose subworkflow was removed goes too (the documented cascade).
fn resolve_references(defs: &mut Definitions, warnings: &mut Vec<String>) {
    loop {
        let mut broken = HashSet::new();
        for (key, def) in defs.iter() {
            for entry in &def.phases {
                if let PhaseEntry::Subworkflow(target) = entry
                    && !defs.contains(target)
                {
                    warnings.push(format!(
                        "[pi-workflows] Workflow \"{key}\" references non-existent subworkflow \"{target}\". Skipping."
                    ));
                    broken.insert(key.to_owned());
                    break;
                }
            }
        }
        if broken.is_empty() {
            return;
        }
        defs.remove(&broken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn phase_md(id: &str) -> String {
        format!("---\nid: {id}\nname: Phase {id}\nemoji: \"🔍\"\n---\n\nDo {id}.\n")
    }

    fn workflow(root: &Path, key: &str, yaml: &str) {
        write(&root.join(key).join("workflow.yaml"), yaml);
    }

    #[test]
    fn reads_are_bounded_to_regular_files_of_one_mib() {
        let tmp = tempfile::tempdir().unwrap();
        let ok = tmp.path().join("ok.md");
        write(&ok, &"a".repeat(MAX_FILE_BYTES as usize));
        assert_eq!(read_bounded(&ok).unwrap().len(), MAX_FILE_BYTES as usize);
        let big = tmp.path().join("big.md");
        write(&big, &"a".repeat(MAX_FILE_BYTES as usize + 1));
        assert_eq!(
            read_bounded(&big).unwrap_err(),
            "larger than 1048576 bytes, the workflow plugin's limit"
        );
        assert_eq!(read_bounded(tmp.path()).unwrap_err(), "not a regular file");
    }

    #[test]
    fn loads_phases_and_project_wins() {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path().join("agent");
        let cwd = tmp.path().join("proj");
        let g = agent.join("workflows");
        let p = cwd.join(".pi").join("workflows");
        write(&g.join("_shared/a.md"), &phase_md("a"));
        write(
            &g.join("_shared/b.md"),
            "\n\n---\nid: b\nname: B\nemoji: \"🛠\"\ntools:\n  whitelist: [read, grep]\navailableProfiles: [x, 3]\n---\nBody\n",
        );
        workflow(
            &g,
            "dev",
            "name: Dev\ncommandName: dev\ninitialMessage: go\nphases: [../_shared/a.md, ../_shared/b.md]\n",
        );
        workflow(
            &g,
            "other",
            "name: Global\ncommandName: other\ninitialMessage: go\nphases: [../_shared/a.md]\n",
        );
        write(&p.join("other/a.md"), &phase_md("a"));
        workflow(
            &p,
            "other",
            "name: Project\ncommandName: other\ninitialMessage: go\nphases: [a.md]\n",
        );
        let (defs, warnings) = load(&agent, Some(&cwd));
        assert!(warnings.is_empty(), "{warnings:?}");
        let keys: Vec<_> = defs.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["dev", "other"]);
        assert_eq!(defs.get("other").unwrap().name, "Project");
        let dev = defs.get("dev").unwrap();
        let PhaseEntry::Phase(b) = &dev.phases[1] else {
            panic!()
        };
        assert_eq!(b.instructions, "Body");
        assert_eq!(
            b.available_profiles.as_deref(),
            Some(&["x".into(), "3".into()][..])
        );
        assert_eq!(
            b.tools.as_ref().unwrap().whitelist.as_deref(),
            Some(&["read".to_string(), "grep".to_string()][..])
        );
        let (global_only, _) = load(&agent, None);
        assert_eq!(global_only.get("other").unwrap().name, "Global");
    }

    #[test]
    fn broken_workflows_are_reported_and_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path();
        let g = agent.join("workflows");
        write(&g.join("ok/p.md"), &phase_md("p"));
        workflow(
            &g,
            "ok",
            "name: Ok\ncommandName: ok\ninitialMessage: go\nphases: [p.md]\n",
        );
        workflow(&g, "bad", "name: [unclosed\n");
        workflow(&g, "scalar", "just text\n");
        workflow(
            &g,
            "noname",
            "commandName: x\ninitialMessage: y\nphases: [p.md]\n",
        );
        workflow(
            &g,
            "escape",
            "name: E\ncommandName: e\ninitialMessage: go\nphases: [../../secret.md]\n",
        );
        workflow(
            &g,
            "cmd",
            "name: C\ncommandName: \"bad name\"\ninitialMessage: go\nphases: [../ok/p.md]\n",
        );
        workflow(
            &g,
            "entry",
            "name: C\ncommandName: c\ninitialMessage: go\nphases: [3]\n",
        );
        write(&g.join("nofm/p.md"), "---\nid: p\nname: P\n---\nx\n");
        workflow(
            &g,
            "missing",
            "name: M\ncommandName: m\ninitialMessage: go\nphases: [../_shared/none.md]\n",
        );
        workflow(
            &g,
            "nofm",
            "name: N\ncommandName: n\ninitialMessage: go\nphases: [p.md]\n",
        );
        let (defs, warnings) = load(agent, None);
        let keys: Vec<_> = defs.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["ok"]);
        let d = g.display();
        let expect = [
            format!("[pi-workflows] Failed to load workflow from {d}/bad: "),
            format!("[pi-workflows] Invalid workflow.yaml in {d}/scalar: not a valid YAML object"),
            format!("[pi-workflows] Missing or invalid \"name\" in {d}/noname"),
            format!("[pi-workflows] Phase file path escapes workflows root: ../../secret.md in {d}/escape/workflow.yaml"),
            "[pi-workflows] Skipping invalid workflow definition \"cmd\": Workflow \"cmd\": commandName must match /^[a-zA-Z0-9_-]+$. Got: \"bad name\"".to_string(),
            format!("[pi-workflows] Invalid phase entry in {d}/entry/workflow.yaml: expected string or {{ subworkflow: key }} object"),
            format!("[pi-workflows] Failed to load phase file {d}/nofm/p.md: Missing or invalid \"emoji\" in {d}/nofm/p.md"),
            format!("[pi-workflows] Failed to load phase file {d}/_shared/none.md: "),
        ];
        for e in expect {
            assert!(
                warnings.iter().any(|w| w.starts_with(&e)),
                "{e}\n{warnings:#?}"
            );
        }
    }

    #[test]
    fn cycles_missing_refs_and_duplicates() {
        let tmp = tempfile::tempdir().unwrap();
        let g = tmp.path().join("workflows");
        write(&g.join("_s/p.md"), &phase_md("p"));
        let wf = |key: &str, cmd: &str, phases: &str| {
            workflow(
                &g,
                key,
                &format!("name: {key}\ncommandName: {cmd}\ninitialMessage: go\nphases: {phases}\n"),
            )
        };
        wf("a", "a", "[{subworkflow: b}]");
        wf("b", "b", "[{subworkflow: c}]");
        wf("c", "c", "[{subworkflow: a}]");
        wf("d", "d", "[../_s/p.md, {subworkflow: e}]");
        wf("e", "e", "[{subworkflow: missing}]");
        wf("f", "dup", "[../_s/p.md]");
        wf("g", "dup", "[../_s/p.md]");
        wf("self", "self", "[{subworkflow: self}]");
        let (defs, warnings) = load(tmp.path(), None);
        let keys: Vec<_> = defs.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["f", "g"], "{warnings:#?}");
        for e in [
            "[pi-workflows] Cycle detected: a → b → c → a. Skipping workflow \"a\".",
            "[pi-workflows] Cycle detected: self → self. Skipping workflow \"self\".",
            "[pi-workflows] Workflow \"e\" references non-existent subworkflow \"missing\". Skipping.",
            "[pi-workflows] Workflow \"d\" references non-existent subworkflow \"e\". Skipping.",
            "[pi-workflows] Duplicate commandName \"dup\" in workflows \"f\" and \"g\". The first one found will be used.",
        ] {
            assert!(warnings.iter().any(|w| w == e), "{e}\n{warnings:#?}");
        }
        assert_eq!(defs.by_command("dup").unwrap().0, "f");
    }

    #[test]
    fn validation_messages() {
        let phase = |id: &str| {
            PhaseEntry::Phase(PhaseDefinition {
                id: id.into(),
                name: "N".into(),
                emoji: "E".into(),
                instructions: "I".into(),
                ..Default::default()
            })
        };
        let mut def = WorkflowDefinition {
            name: "W".into(),
            command_name: "w".into(),
            initial_message: "go".into(),
            phases: vec![phase("x"), phase("x")],
            ..Default::default()
        };
        assert_eq!(
            validate("k", &def).unwrap_err(),
            "Workflow \"k\", phase[1]: duplicate phase id \"x\"."
        );
        def.phases = vec![PhaseEntry::Phase(PhaseDefinition {
            instructions: " ".into(),
            ..match phase("y") {
                PhaseEntry::Phase(p) => p,
                _ => unreachable!(),
            }
        })];
        assert_eq!(
            validate("k", &def).unwrap_err(),
            "Workflow \"k\", phase[0]: instructions must be a non-empty string."
        );
        def.initial_message = "  ".into();
        assert_eq!(
            validate("k", &def).unwrap_err(),
            "Workflow \"k\": initialMessage must be a non-empty string."
        );
        def.internal = true;
        def.command_name = "not valid".into();
        def.phases = vec![PhaseEntry::Subworkflow(" ".into())];
        assert_eq!(
            validate("k", &def).unwrap_err(),
            "Workflow \"k\", phase[0]: workflowKey must be a non-empty string."
        );
    }

    #[test]
    fn a_symlink_out_of_the_workflows_root_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let g = tmp.path().join("agent/workflows");
        write(&tmp.path().join("outside/secret.md"), &phase_md("s"));
        write(&g.join("sym/real.md"), &phase_md("r"));
        std::os::unix::fs::symlink(tmp.path().join("outside/secret.md"), g.join("sym/link.md"))
            .unwrap();
        workflow(
            &g,
            "sym",
            "name: S\ncommandName: s\ninitialMessage: go\nphases: [real.md, link.md]\n",
        );
        let (defs, warnings) = load(&tmp.path().join("agent"), None);
        assert!(defs.iter().next().is_none(), "the workflow is skipped");
        let d = g.display();
        assert_eq!(
            warnings,
            [format!(
                "[pi-workflows] Phase file path escapes workflows root: link.md in {d}/sym/workflow.yaml"
            )]
        );
        assert!(path_is_safe(&g, &g.join("sym"), "real.md"));
    }
}
