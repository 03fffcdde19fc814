//! pi-workflows as a native pi-hooks plugin: phased workflows defined in `workflow.yaml` and
//! Markdown phase files, with tool gating per phase, nested subworkflows, a hidden context
//! message before every agent run, and an auto-continue countdown when the agent stops early.
//! See `plugins/workflow/README.md`.

pub mod context_prompt;
pub mod definitions;
pub mod persistence;
pub mod state;
pub mod status;
pub mod templates;
