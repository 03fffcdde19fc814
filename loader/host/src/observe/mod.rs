//! What the host tells about plugins as they run: the hook trace for plugin authors
//! ([`trace`]) and the host's own diagnostics ([`diagnostics`]), both as `tracing` events.

pub mod diagnostics;
pub mod trace;
