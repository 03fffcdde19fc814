//! The modes the host runs in, siblings over one session core ([`core`]): each turns the
//! core's events and UI requests into its own medium, and its input into core commands.

pub mod core;
pub mod interactive;
pub mod print;
pub mod rpc;
