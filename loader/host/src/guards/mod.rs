//! What keeps a misbehaving plugin from taking the host down with it: checked handles instead
//! of raw pointers ([`handles`]), the C++ exception barrier every call into plugin code goes
//! through ([`exception_barrier`]), the crash report for a plugin that crashes the process
//! anyway ([`crash_guard`]), and the escaping of everything a plugin or a repository controls
//! before it reaches a terminal ([`display`]).

pub mod crash_guard;
pub mod display;
pub mod exception_barrier;
pub mod handles;
