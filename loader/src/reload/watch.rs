//! placeholder
/// A decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Modified.
    Modified(std::path::PathBuf),
    /// Added.
    Added(std::path::PathBuf),
    /// Removed.
    Removed(std::path::PathBuf),
}
