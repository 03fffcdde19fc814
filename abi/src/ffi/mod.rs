//! The raw C ABI, version 1: exactly what `include/pi_hooks.h` declares.
//!
//! One module per topic of the header. Everything here is `#[repr(C)]`, plain integers, pointers
//! and function pointers: no Rust enums, no Rust-owned types. The header is generated from these
//! files by `scripts/gen-header.sh`; edit them, never the header.

pub mod actions;
pub mod context;
pub mod descriptor;
pub mod host;
pub mod registry;
pub mod result;
pub mod status;
pub mod strings;
pub mod ui;
pub mod value;
pub mod version;

pub use actions::*;
pub use context::*;
pub use descriptor::*;
pub use host::*;
pub use registry::*;
pub use result::*;
pub use status::*;
pub use strings::*;
pub use ui::*;
pub use value::*;
pub use version::*;
