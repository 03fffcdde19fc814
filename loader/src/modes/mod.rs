//! The modes the host runs in. Each builds the agent over the loaded plugins and decides
//! where events and errors go.

pub mod print;
