//! Reading host values without copying them.

use serde::de::DeserializeOwned;

use super::error::{Error, Result, check};
use super::strings::{from_host_str, pi_str};
use crate::ffi::*;

/// A borrowed view of a host value (an event payload or part of one), valid for `'a`.
///
/// An absent value (a missing field) is a `Value` too: every accessor answers `None`, so
/// lookups chain: `event.get("input").get("command").as_str()`.
#[derive(Clone, Copy)]
pub struct Value<'a> {
    api: &'a PiValueApi,
    ptr: *const PiValue,
}

impl<'a> Value<'a> {
    /// # Safety
    /// `ptr` must be NULL or a value valid for `'a` under `api`'s host.
    pub(crate) unsafe fn from_raw(api: &'a PiValueApi, ptr: *const PiValue) -> Self {
        Value { api, ptr }
    }

    /// The raw pointer, for passing back to the host.
    pub fn as_ptr(&self) -> *const PiValue {
        self.ptr
    }

    /// The `PI_VALUE_*` kind.
    pub fn kind(&self) -> u32 {
        // SAFETY: `ptr` is NULL or valid for 'a (from_raw's contract); the host accepts NULL.
        unsafe { (self.api.kind)(self.ptr) }
    }

    /// Whether there is no value here (a missing field or index).
    pub fn is_absent(&self) -> bool {
        self.ptr.is_null()
    }

    /// Field `key` of an object.
    pub fn get(&self, key: &str) -> Value<'a> {
        // SAFETY: as in `kind`; `key` is borrowed for the call only.
        let ptr = unsafe { (self.api.get)(self.ptr, pi_str(key)) };
        Value { api: self.api, ptr }
    }

    /// The value at a JSON Pointer such as `/input/command`.
    pub fn pointer(&self, path: &str) -> Value<'a> {
        // SAFETY: as in `get`.
        let ptr = unsafe { (self.api.pointer)(self.ptr, pi_str(path)) };
        Value { api: self.api, ptr }
    }

    /// Element `index` of an array.
    pub fn at(&self, index: usize) -> Value<'a> {
        // SAFETY: as in `kind`.
        let ptr = unsafe { (self.api.at)(self.ptr, index) };
        Value { api: self.api, ptr }
    }

    /// Number of array elements or object fields (0 otherwise).
    pub fn len(&self) -> usize {
        // SAFETY: as in `kind`.
        unsafe { (self.api.len)(self.ptr) }
    }

    /// Whether `len()` is 0.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The array's elements.
    pub fn iter(&self) -> impl Iterator<Item = Value<'a>> + 'a {
        let this = *self;
        (0..this.len()).map(move |i| this.at(i))
    }

    /// The object's fields in order.
    pub fn entries(&self) -> impl Iterator<Item = (&'a str, Value<'a>)> + 'a {
        let this = *self;
        (0..this.len()).map(move |i| {
            let mut key = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            // SAFETY: as in `kind`; `key` is a valid out-pointer.
            let ptr = unsafe { (this.api.entry)(this.ptr, i, &mut key) };
            // SAFETY: the host's key is UTF-8 and lives as long as the value, so for 'a.
            (unsafe { from_host_str(key) }, Value { api: this.api, ptr })
        })
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&'a str> {
        let mut out = PiStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        // SAFETY: as in `kind`; `out` is a valid out-pointer.
        let status = unsafe { (self.api.as_str)(self.ptr, &mut out) };
        // SAFETY: the host's string is UTF-8 and lives as long as the value, so for 'a.
        (status == PI_OK).then(|| unsafe { from_host_str(out) })
    }

    /// The number as an integer, if it is a whole number.
    pub fn as_i64(&self) -> Option<i64> {
        let mut out = 0i64;
        // SAFETY: as in `kind`; `out` is a valid out-pointer.
        let status = unsafe { (self.api.as_int)(self.ptr, &mut out) };
        (status == PI_OK).then_some(out)
    }

    /// The number as a float.
    pub fn as_f64(&self) -> Option<f64> {
        let mut out = 0f64;
        // SAFETY: as in `kind`; `out` is a valid out-pointer.
        let status = unsafe { (self.api.as_float)(self.ptr, &mut out) };
        (status == PI_OK).then_some(out)
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        let mut out = false;
        // SAFETY: as in `kind`; `out` is a valid out-pointer.
        let status = unsafe { (self.api.as_bool)(self.ptr, &mut out) };
        (status == PI_OK).then_some(out)
    }

    /// The whole value as JSON text (`None` when absent).
    pub fn to_json(&self) -> Option<&'a str> {
        let mut out = PiStr {
            ptr: std::ptr::null(),
            len: 0,
        };
        // SAFETY: as in `kind`; `out` is a valid out-pointer.
        let status = unsafe { (self.api.to_json)(self.ptr, &mut out) };
        // SAFETY: the host's JSON text is UTF-8 and lives as long as the value, so for 'a.
        (status == PI_OK).then(|| unsafe { from_host_str(out) })
    }

    /// Deserialises the value into `T` (through its JSON text).
    pub fn deserialize<T: DeserializeOwned>(&self) -> Result<T> {
        let json = self
            .to_json()
            .ok_or_else(|| Error::msg("no value to deserialize"))?;
        Ok(serde_json::from_str(json)?)
    }

    /// Replaces every match of the regular expression `pattern` in the text of this value
    /// with `replacement`, through the host (C's `values->replace_text`): a string is
    /// replaced; in an array of content blocks (a `tool_result`'s `content`) the `text` of
    /// every block is, and image blocks and other fields are kept. Returns the replaced copy
    /// and the number of matches, so a handler can leave the result alone when it is 0:
    ///
    /// ```ignore
    /// pi.on("tool_result", |event, _ctx| {
    ///     let (content, n) = event.get("content").replace_text("AKIA[0-9A-Z]{16}", "[REDACTED]")?;
    ///     Ok((n > 0).then(|| json!({"content": content})))
    /// })
    /// ```
    ///
    /// `pattern` uses the syntax of Rust's `regex` crate, compiled once and cached by the
    /// host; `$1` or `${name}` in `replacement` insert a capture group, `$$` a `$`. An absent
    /// value gives `(null, 0)`. An error when `pattern` is not a valid expression (the host
    /// also prints the reason), or when the host is older than ABI 1.3.
    pub fn replace_text(
        &self,
        pattern: &str,
        replacement: &str,
    ) -> Result<(serde_json::Value, usize)> {
        if self.is_absent() {
            return Ok((serde_json::Value::Null, 0));
        }
        let needed = std::mem::offset_of!(PiValueApi, replace_text)
            + std::mem::size_of::<unsafe extern "C" fn()>();
        if (self.api.struct_size as usize) < needed {
            return Err(Error::msg(
                "replace_text needs a host of ABI 1.3 or later; this host's value table lacks it",
            ));
        }
        let mut replaced = 0usize;
        // SAFETY: `ptr` is valid for 'a (from_raw's contract) and not NULL; the host's table
        // has the entry (its size was checked); the strings are borrowed for the call;
        // `replaced` is a valid out-pointer.
        let out = unsafe {
            (self.api.replace_text)(
                self.ptr,
                pi_str(pattern),
                pi_str(replacement),
                &mut replaced,
            )
        };
        if out.is_null() {
            return Err(Error::msg(format!(
                "replace_text: {pattern:?} is not a valid regular expression (see the host's warning)"
            )));
        }
        // SAFETY: `out` is an owned value the host just handed over; viewed and freed here.
        let value = unsafe { Value::from_raw(self.api, out) }.to_serde();
        // SAFETY: `out` is owned by us and freed exactly once, here.
        unsafe { (self.api.free)(out) };
        Ok((value, replaced))
    }

    /// Copies the value into a `serde_json::Value` (null when absent).
    pub fn to_serde(&self) -> serde_json::Value {
        self.to_json()
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default()
    }
}

impl std::fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.to_json().unwrap_or("<absent>"))
    }
}

/// A value the host handed over for keeps; freed on drop.
pub struct OwnedValue {
    api: &'static PiValueApi,
    ptr: *mut PiValue,
}

// SAFETY: owned host values are immutable trees the host allows to be read and freed from any
// thread (PiHostApi: every function may be called from any thread).
unsafe impl Send for OwnedValue {}

impl OwnedValue {
    /// # Safety
    /// `ptr` must be NULL or an owned value from `api`'s host, not freed elsewhere.
    pub(crate) unsafe fn from_raw(api: &'static PiValueApi, ptr: *mut PiValue) -> Option<Self> {
        (!ptr.is_null()).then_some(OwnedValue { api, ptr })
    }

    /// A view of the value.
    pub fn value(&self) -> Value<'_> {
        // SAFETY: `ptr` is an owned value alive until drop, so for the borrow of self.
        unsafe { Value::from_raw(self.api, self.ptr) }
    }

    /// Parses JSON text through the host.
    pub fn parse(api: &'static PiValueApi, json: &str) -> Result<OwnedValue> {
        let mut out = std::ptr::null_mut();
        // SAFETY: `json` is borrowed for the call; `out` is a valid out-pointer.
        check(unsafe { (api.parse)(pi_str(json), &mut out) }, "parse")?;
        // SAFETY: on PI_OK the host handed over an owned value.
        unsafe { OwnedValue::from_raw(api, out) }.ok_or_else(|| Error::msg("parse gave nothing"))
    }
}

impl Drop for OwnedValue {
    fn drop(&mut self) {
        // SAFETY: `ptr` is an owned value freed exactly once, here.
        unsafe { (self.api.free)(self.ptr) }
    }
}
