//! The one panic barrier every SDK callback runs behind.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::error::Result;
use crate::ffi::{PI_ERR_PANIC, PI_OK, PiStatus};

/// Runs `body`, turning an `Err` or a panic into a status code and a message given to
/// `report`. Nothing unwinds past this function.
pub(crate) fn guard(report: impl FnOnce(&str), body: impl FnOnce() -> Result<()>) -> PiStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => PI_OK,
        Ok(Err(error)) => {
            report(error.message());
            error.code()
        }
        Err(payload) => {
            let text = format!("panicked: {}", panic_message(payload.as_ref()));
            // A panicking report must not escape either.
            let _ = catch_unwind(AssertUnwindSafe(|| report(&text)));
            PI_ERR_PANIC
        }
    }
}

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-text payload".to_owned()
    }
}
