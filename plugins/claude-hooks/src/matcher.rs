//! Matchers as Claude Code applies them: empty or `*` matches everything; a matcher made only
//! of letters, digits, `_` and `|` is an exact name or a `|`-separated list of exact names;
//! anything else is a regular expression searched anywhere in the name (unanchored, as
//! JavaScript's `RegExp.test`), and one that does not compile matches nothing.

use regex::Regex;

/// A compiled matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Empty or `*`.
    All,
    /// Exact names (`Bash`, `Write|Edit`).
    Names(Vec<String>),
    /// A regular expression (`Notebook.*`, `mcp__.*__write`).
    Pattern(Regex),
    /// A regular expression that does not compile: never matches (reported at load).
    Invalid,
}

impl Matcher {
    /// Compiles `text`; the error says why a pattern does not compile.
    pub fn new(text: &str) -> (Matcher, Option<String>) {
        if text.is_empty() || text == "*" {
            return (Matcher::All, None);
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|')
        {
            let names = text
                .split('|')
                .map(str::trim)
                .filter(|name| !name.is_empty())
                .map(str::to_owned)
                .collect();
            return (Matcher::Names(names), None);
        }
        match Regex::new(text) {
            Ok(regex) => (Matcher::Pattern(regex), None),
            Err(error) => (Matcher::Invalid, Some(error.to_string())),
        }
    }

    /// Whether the matcher selects `name`.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Names(names) => names.iter().any(|n| n == name),
            Matcher::Pattern(regex) => regex.is_match(name),
            Matcher::Invalid => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Matcher;

    fn m(text: &str, name: &str) -> bool {
        Matcher::new(text).0.matches(name)
    }

    #[test]
    fn claude_code_s_rules() {
        assert!(m("", "Bash"));
        assert!(m("*", "Bash"));
        assert!(m("Bash", "Bash"));
        assert!(!m("Bash", "BashOutput"), "a plain name is exact");
        assert!(!m("bash", "Bash"), "case-sensitive");
        assert!(m("Write|Edit", "Edit"));
        assert!(!m("Write|Edit", "Read"));
        assert!(m("Notebook.*", "NotebookEdit"));
        assert!(m("Ed", "Ed"));
        assert!(m("^(Read|Grep)$", "Grep"));
        assert!(!m("^(Read|Grep)$", "Glob"));
        assert!(
            m("mcp__.*", "mcp__fs__read"),
            "a regex is searched unanchored"
        );
        assert!(!m("([", "(["), "an invalid regex matches nothing");
        assert!(Matcher::new("([").1.is_some());
    }
}
