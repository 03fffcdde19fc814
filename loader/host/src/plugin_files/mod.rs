//! Which plugin files there are and whether they may run: discovery in pi's order
//! ([`discover`]), path rules ([`paths`]), bounded reads of regular files ([`files`]),
//! `settings.json` ([`settings`]; its one writer, [`settings_write`]) and the trust store
//! that pins project plugins to their SHA-256 ([`trust`]), and pi's own project trust
//! ([`pi_trust`]).

pub mod beneath;
pub mod discover;
pub mod entry_forms;
pub mod files;
pub mod paths;
pub mod pi_trust;
pub mod settings;
pub mod settings_write;
pub mod trust;
