//! Plugin flags on the command line of `run` and `rpc` (`--plan`, `--model-x foo`,
//! `--model-x=foo`), parsed in two passes as pi parses extension flags: the first pass sets
//! aside every long option `pi-hooks` does not know, so that clap can parse the rest and the
//! plugins can load from the sources it names; the second pass matches what was set aside
//! against the flags the loaded plugins registered, stores their values where `get_flag`
//! reads them ([`pi_hooks_host::plugin::state::set_flag_values`]) and refuses a flag no plugin offers.
//! `--help` of `run` and `rpc` loads the plugins the same way and lists their flags.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;

use clap::{CommandFactory, Parser};
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::{Cli, CommandError};
use pi_hooks_host::guards::display::escape;
use pi_hooks_host::lifecycle::load::LoadReport;

/// The subcommands that take plugin flags.
const SUBCOMMANDS: [&str; 3] = ["chat", "run", "rpc"];

/// A long option the first pass set aside for the plugins.
#[derive(Debug)]
struct SetAside {
    /// Where it stands in the command line.
    index: usize,
    /// The name without dashes.
    name: String,
    /// The value given with `=`, if any.
    value: Option<String>,
    /// The token after it, when that may be its value (it does not start with `-`).
    next: Option<usize>,
}

/// A command line of `run` or `rpc`, split into what clap parses and what the plugins get.
#[derive(Debug)]
pub(super) struct PluginFlags {
    /// The whole command line.
    argv: Vec<OsString>,
    /// `run` or `rpc`.
    subcommand: &'static str,
    /// The long options `pi-hooks` does not know, in order.
    set_aside: Vec<SetAside>,
    /// The `--help` / `-h` token, when one was given.
    help: Option<usize>,
    /// The subcommand's own long options (name, and whether it takes a value).
    builtin: FxHashMap<String, bool>,
}

/// A plugin flag as the loaded plugins registered it (the first registration of a name).
struct Registered {
    /// "boolean" or "string".
    kind: &'static str,
    /// The first registration's description.
    description: String,
    /// The first registration's default.
    default: Option<Value>,
    /// The names of the plugins that registered it, in load order.
    plugins: Vec<String>,
}

/// The flags of the loaded plugins, in the order they were first registered.
fn registered(report: &LoadReport) -> Vec<(String, Registered)> {
    let mut flags: Vec<(String, Registered)> = Vec::new();
    for plugin in &report.plugins {
        for flag in plugin.registrations().flags {
            match flags.iter_mut().find(|(name, _)| *name == flag.name) {
                Some((_, known)) => known.plugins.push(plugin.name().to_owned()),
                None => flags.push((
                    flag.name,
                    Registered {
                        kind: flag.kind,
                        description: flag.description,
                        default: flag.default,
                        plugins: vec![plugin.name().to_owned()],
                    },
                )),
            }
        }
    }
    flags
}

/// `"a"`, or `"a", "b"`: plugin names for a message, escaped.
fn plugin_names(plugins: &[String]) -> String {
    plugins
        .iter()
        .map(|p| format!("\"{}\"", escape(p)))
        .collect::<Vec<_>>()
        .join(", ")
}

impl PluginFlags {
    /// Splits `argv` when its subcommand is `chat`, `run` or `rpc`; `None` for any other command line.
    pub(super) fn split(argv: Vec<OsString>) -> Option<Self> {
        let subcommand = SUBCOMMANDS
            .into_iter()
            .find(|s| argv.get(1).map(OsString::as_os_str) == Some(OsStr::new(s)))?;
        let mut command = Cli::command();
        command.build();
        let mut builtin = FxHashMap::default();
        let mut shorts = FxHashMap::default();
        if let Some(sub) = command.find_subcommand(subcommand) {
            for arg in sub.get_arguments() {
                // An option that takes its value only with `=` (`--trace=json`) never takes
                // the next token.
                let takes_value = arg.get_action().takes_values() && !arg.is_require_equals_set();
                let longs = arg
                    .get_long()
                    .into_iter()
                    .chain(arg.get_all_aliases().unwrap_or_default());
                for long in longs {
                    builtin.insert(long.to_owned(), takes_value);
                }
                for short in arg
                    .get_short()
                    .into_iter()
                    .chain(arg.get_all_short_aliases().unwrap_or_default())
                {
                    shorts.insert(short, takes_value);
                }
            }
        }
        let mut flags = PluginFlags {
            argv,
            subcommand,
            set_aside: Vec::new(),
            help: None,
            builtin,
        };
        let mut i = 2;
        while i < flags.argv.len() {
            let Some(token) = flags.argv[i].to_str() else {
                i += 1;
                continue;
            };
            if token == "--" {
                break;
            }
            if token == "--help" || token == "-h" {
                flags.help = Some(i);
            } else if let Some(body) = token.strip_prefix("--") {
                let (name, value) = match body.split_once('=') {
                    Some((name, value)) => (name, Some(value.to_owned())),
                    None => (body, None),
                };
                match flags.builtin.get(name) {
                    // A built-in option's value is never a plugin flag.
                    Some(true) if value.is_none() => i += 1,
                    Some(_) => {}
                    None => {
                        let next = flags
                            .argv
                            .get(i + 1)
                            .filter(|_| value.is_none())
                            .filter(|t| !t.to_string_lossy().starts_with('-'))
                            .map(|_| i + 1);
                        flags.set_aside.push(SetAside {
                            index: i,
                            name: name.to_owned(),
                            value,
                            next,
                        });
                        if next.is_some() {
                            i += 1;
                        }
                    }
                }
            } else if let Some(cluster) = token.strip_prefix('-') {
                // Short options (`-c`, `-e PATH`, `-ePATH`): skip the value of one that takes it.
                for (at, short) in cluster.char_indices() {
                    match shorts.get(&short) {
                        Some(true) => {
                            if at + short.len_utf8() == cluster.len() {
                                i += 1;
                            }
                            break;
                        }
                        Some(false) => {}
                        None => break,
                    }
                }
            }
            i += 1;
        }
        Some(flags)
    }

    /// The command line for clap's first pass: without the set-aside options, the tokens that
    /// may be their values, and `--help`.
    pub(super) fn first_pass(&self) -> Vec<OsString> {
        let mut skip: Vec<usize> = self.help.into_iter().collect();
        for flag in &self.set_aside {
            skip.push(flag.index);
            skip.extend(flag.next);
        }
        self.without(&skip)
    }

    fn without(&self, skip: &[usize]) -> Vec<OsString> {
        self.argv
            .iter()
            .enumerate()
            .filter(|(i, _)| !skip.contains(i))
            .map(|(_, token)| token.clone())
            .collect()
    }

    /// Whether `--help` or `-h` was given.
    pub(super) fn wants_help(&self) -> bool {
        self.help.is_some()
    }

    /// The second pass, once the plugins are loaded: matches the set-aside options against
    /// their flags, stores the values (`true` for a boolean flag, the string for a string
    /// flag, the first registration's default for a flag left out) where `get_flag` reads
    /// them, and returns the command line re-parsed when a token the first pass set aside
    /// turned out not to be a flag's value (`run --plan "a prompt"`).
    pub(super) fn apply(&self, report: &LoadReport) -> Result<Option<Cli>, CommandError> {
        let flags = registered(report);
        let mut values: FxHashMap<String, Value> = FxHashMap::default();
        let mut skip: Vec<usize> = self.help.into_iter().collect();
        let mut given_back = false;
        for given in &self.set_aside {
            skip.push(given.index);
            let Some((_, flag)) = flags.iter().find(|(name, _)| *name == given.name) else {
                return Err(self.unknown(&given.name, &flags));
            };
            let value = match (flag.kind, &given.value) {
                ("boolean", None) => {
                    given_back |= given.next.is_some();
                    Value::Bool(true)
                }
                ("boolean", Some(text)) => match text.as_str() {
                    "true" => Value::Bool(true),
                    "false" => Value::Bool(false),
                    _ => {
                        return Err(CommandError::usage(format!(
                            "--{} is a boolean flag (plugin {}): give it alone or as --{0}=true / --{0}=false, not --{0}={}",
                            escape(&given.name),
                            plugin_names(&flag.plugins),
                            escape(text)
                        )));
                    }
                },
                (_, Some(text)) => Value::String(text.clone()),
                (_, None) => match given.next {
                    Some(next) => {
                        skip.push(next);
                        Value::String(self.argv[next].to_string_lossy().into_owned())
                    }
                    None => {
                        return Err(CommandError::usage(format!(
                            "--{} (a string flag of plugin {}) needs a value: --{0} VALUE or --{0}=VALUE (use the = form for a value that starts with -)",
                            escape(&given.name),
                            plugin_names(&flag.plugins)
                        )));
                    }
                },
            };
            values.insert(given.name.clone(), value);
        }
        for (name, flag) in &flags {
            if let (false, Some(default)) = (values.contains_key(name), &flag.default) {
                values.insert(name.clone(), default.clone());
            }
        }
        pi_hooks_host::plugin::state::set_flag_values(values);
        if !given_back {
            return Ok(None);
        }
        match Cli::try_parse_from(self.without(&skip)) {
            Ok(cli) => Ok(Some(cli)),
            Err(error) => error.exit(),
        }
    }

    /// The error for `--name` that no loaded plugin registered, in pi's words
    /// (`Unknown option: --name`), with the flags the plugins do offer.
    fn unknown(&self, name: &str, flags: &[(String, Registered)]) -> CommandError {
        let offered = if flags.is_empty() {
            "no loaded plugin registers a flag".to_owned()
        } else {
            let list: Vec<String> = flags
                .iter()
                .map(|(name, flag)| format!("--{} ({})", escape(name), plugin_names(&flag.plugins)))
                .collect();
            format!("the loaded plugins' flags are {}", list.join(", "))
        };
        CommandError::usage(format!(
            "Unknown option: --{}: it is not an option of 'pi-hooks {}' and {offered}. See 'pi-hooks {1} --help'",
            escape(name),
            self.subcommand
        ))
    }

    /// Warnings for plugin flags named like one of the subcommand's own options, which the
    /// command line always gives to the built-in option.
    pub(super) fn shadow_warnings(&self, report: &LoadReport) -> Vec<String> {
        let mut lines = Vec::new();
        for plugin in &report.plugins {
            for flag in plugin.registrations().flags {
                if self.builtin.contains_key(&flag.name) || flag.name == "help" {
                    lines.push(format!(
                        "Warning: plugin {} ({}): flag --{} has the name of an option of 'pi-hooks {}', which takes it; the plugin gets only the flag's default",
                        escape(plugin.name()),
                        escape(&plugin.path),
                        escape(&flag.name),
                        self.subcommand
                    ));
                }
            }
        }
        lines
    }

    /// The "Plugin flags" section of `--help`: each flag of the loaded plugins with its
    /// type, default, description and the plugins that registered it.
    fn help_section(&self, report: &LoadReport) -> String {
        let flags = registered(report);
        let mut out = String::from("Plugin flags (registered by the loaded plugins):\n");
        if flags.is_empty() {
            out.push_str("  (none: no loaded plugin registers a flag)\n");
        }
        for (name, flag) in &flags {
            let usage = if flag.kind == "string" {
                format!("--{} <VALUE>", escape(name))
            } else {
                format!("--{}", escape(name))
            };
            let mut about = format!("{}; plugin {}", flag.kind, plugin_names(&flag.plugins));
            if let Some(default) = &flag.default {
                let _ = write!(about, "; default {}", escape(&default.to_string()));
            }
            if self.builtin.contains_key(name) || name == "help" {
                about.push_str("; hidden by the built-in option of that name");
            }
            let _ = writeln!(out, "  {usage}");
            if !flag.description.is_empty() {
                let _ = writeln!(out, "          {}", escape(&flag.description));
            }
            let _ = writeln!(out, "          [{about}]");
        }
        out
    }

    /// Prints the subcommand's help with the loaded plugins' flags after the options, and
    /// ends the process as clap's `--help` does.
    pub(super) fn print_help(&self, report: &LoadReport) -> ! {
        let section = self.help_section(report);
        let mut command = Cli::command().mut_subcommand(self.subcommand, |c| c.after_help(section));
        let help = self.help.map_or("--help".into(), |i| self.argv[i].clone());
        let argv = [self.argv[0].clone(), self.subcommand.into(), help];
        match command.try_get_matches_from_mut(argv) {
            Ok(_) => std::process::exit(0),
            Err(error) => error.exit(),
        }
    }
}
