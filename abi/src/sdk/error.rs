//! The SDK's error type.

use std::fmt;

/// An error a plugin returns from a handler; its text reaches the host's error report.
///
/// Any `std::error::Error` converts into it with `?`; [`Error::msg`] makes one from text.
pub struct Error {
    message: String,
    status: crate::ffi::PiStatus,
}

/// `Result<T, pi_hooks_abi::sdk::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An error with this message.
    pub fn msg(message: impl fmt::Display) -> Self {
        Error {
            message: message.to_string(),
            status: crate::ffi::PI_ERR,
        }
    }

    /// An error a host call answered with `status`.
    pub(crate) fn status(status: crate::ffi::PiStatus, what: &str) -> Self {
        Error {
            message: format!("{what} failed: {}", status_name(status)),
            status,
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The status code the host will see.
    pub fn code(&self) -> crate::ffi::PiStatus {
        self.status
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for Error {
    fn from(error: E) -> Self {
        Error::msg(error)
    }
}

/// The constant's name for a status code, for messages.
pub fn status_name(status: crate::ffi::PiStatus) -> &'static str {
    use crate::ffi::*;
    match status {
        PI_OK => "PI_OK",
        PI_ERR => "PI_ERR",
        PI_ERR_INVALID_ARG => "PI_ERR_INVALID_ARG",
        PI_ERR_UNAVAILABLE => "PI_ERR_UNAVAILABLE",
        PI_ERR_WRONG_TYPE => "PI_ERR_WRONG_TYPE",
        PI_ERR_NOT_FOUND => "PI_ERR_NOT_FOUND",
        PI_ERR_UTF8 => "PI_ERR_UTF8",
        PI_ERR_PANIC => "PI_ERR_PANIC",
        PI_ERR_TIMEOUT => "PI_ERR_TIMEOUT",
        PI_ERR_CANCELLED => "PI_ERR_CANCELLED",
        PI_ERR_DUPLICATE => "PI_ERR_DUPLICATE",
        PI_ERR_DENIED => "PI_ERR_DENIED",
        _ => "an unknown status",
    }
}

/// Turns a host status into `Ok(())` or an [`Error`] naming the call.
pub(crate) fn check(status: crate::ffi::PiStatus, what: &str) -> Result<()> {
    if status == crate::ffi::PI_OK {
        Ok(())
    } else {
        Err(Error::status(status, what))
    }
}
