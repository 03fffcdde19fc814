//! `PiResult` on the host side: the result a handler builds.

use pi_hooks_abi::ffi::*;
use serde_json::{Map, Value};

use super::value::host_value;
use super::{barrier, read_str};

/// A result under construction; `None` means the handler returned nothing.
#[derive(Debug, Default)]
pub struct ResultBuilder {
    value: Option<Value>,
}

impl ResultBuilder {
    /// An empty result.
    pub fn new() -> Self {
        Self::default()
    }

    /// Where this result lives, for the call slot (plugins get a token, see
    /// `crate::guards::handles`).
    pub fn address(&mut self) -> *mut std::os::raw::c_void {
        (self as *mut ResultBuilder).cast()
    }

    /// What the plugin returned.
    #[inline]
    pub fn into_value(self) -> Option<Box<Value>> {
        self.value.map(Box::new)
    }

    fn object(&mut self) -> Result<&mut Map<String, Value>, PiStatus> {
        match self.value.get_or_insert_with(|| Value::Object(Map::new())) {
            Value::Object(map) => Ok(map),
            _ => Err(PI_ERR_WRONG_TYPE),
        }
    }
}

/// The builder behind a `PiResult *`, if it is the result of a call running on this thread;
/// `None` for NULL, a wild pointer, a result kept past its call, or another thread.
fn builder_of<'a>(result: *mut PiResult) -> Option<&'a mut ResultBuilder> {
    let address = crate::guards::handles::result_on_this_thread(result)?;
    // SAFETY: the address is the ResultBuilder of a call that runs on this very thread and has
    // not returned; `invoke` does not touch it while the plugin runs, and the setters are not
    // re-entered, so this is the only reference.
    unsafe { address.cast::<ResultBuilder>().as_mut() }
}

/// Runs `f` on the plugin's result with its key already read.
fn with_field(
    result: *mut PiResult,
    key: PiStr,
    f: impl FnOnce(&mut Map<String, Value>, String) -> PiStatus,
) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(builder) = builder_of(result) else {
            return PI_ERR_INVALID_ARG;
        };
        // SAFETY: `key` is a plugin string valid for the call.
        let key = match unsafe { read_str(key) } {
            Ok(k) => k.to_owned(),
            Err(status) => return status,
        };
        match builder.object() {
            Ok(map) => f(map, key),
            Err(status) => status,
        }
    })
}

/// Reads a plugin string and inserts what `make` builds from it.
fn insert_str(
    result: *mut PiResult,
    key: PiStr,
    text: PiStr,
    make: impl FnOnce(&str) -> Option<Value>,
) -> PiStatus {
    with_field(result, key, |map, key| {
        // SAFETY: `text` is a plugin string valid for the call.
        match unsafe { read_str(text) } {
            Ok(t) => match make(t) {
                Some(v) => {
                    map.insert(key, v);
                    PI_OK
                }
                None => PI_ERR_INVALID_ARG,
            },
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn set_json(result: *mut PiResult, json: PiStr) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(builder) = builder_of(result) else {
            return PI_ERR_INVALID_ARG;
        };
        // SAFETY: `json` is a plugin string valid for the call.
        match unsafe { read_str(json) }.map(serde_json::from_str::<Value>) {
            Ok(Ok(v)) => {
                builder.value = Some(v);
                PI_OK
            }
            Ok(Err(_)) => PI_ERR_INVALID_ARG,
            Err(status) => status,
        }
    })
}

unsafe extern "C" fn set_string(result: *mut PiResult, key: PiStr, value: PiStr) -> PiStatus {
    insert_str(result, key, value, |s| Some(Value::String(s.to_owned())))
}

unsafe extern "C" fn set_field_json(result: *mut PiResult, key: PiStr, json: PiStr) -> PiStatus {
    insert_str(result, key, json, |s| serde_json::from_str(s).ok())
}

unsafe extern "C" fn set_bool(result: *mut PiResult, key: PiStr, value: bool) -> PiStatus {
    with_field(result, key, |map, key| {
        map.insert(key, Value::Bool(value));
        PI_OK
    })
}

unsafe extern "C" fn set_int(result: *mut PiResult, key: PiStr, value: i64) -> PiStatus {
    with_field(result, key, |map, key| {
        map.insert(key, Value::from(value));
        PI_OK
    })
}

unsafe extern "C" fn set_float(result: *mut PiResult, key: PiStr, value: f64) -> PiStatus {
    with_field(result, key, |map, key| {
        map.insert(
            key,
            serde_json::Number::from_f64(value).map_or(Value::Null, Value::Number),
        );
        PI_OK
    })
}

unsafe extern "C" fn set_value(
    result: *mut PiResult,
    key: PiStr,
    value: *const PiValue,
) -> PiStatus {
    with_field(result, key, |map, key| {
        // SAFETY: plugins pass values the host handed out and that are still alive.
        let copy = unsafe { host_value(value) }.map_or(Value::Null, |v| v.to_json_value());
        map.insert(key, copy);
        PI_OK
    })
}

unsafe extern "C" fn add_text(result: *mut PiResult, text: PiStr) -> PiStatus {
    with_field(
        result,
        PiStr {
            ptr: "content".as_ptr().cast(),
            len: 7,
        },
        |map, key| {
            // SAFETY: `text` is a plugin string valid for the call.
            let text = match unsafe { read_str(text) } {
                Ok(t) => t,
                Err(status) => return status,
            };
            let content = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
            match content {
                Value::Array(items) => {
                    items.push(serde_json::json!({"type": "text", "text": text}));
                    PI_OK
                }
                _ => PI_ERR_WRONG_TYPE,
            }
        },
    )
}

unsafe extern "C" fn set_from_value(result: *mut PiResult, value: *const PiValue) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let Some(builder) = builder_of(result) else {
            return PI_ERR_INVALID_ARG;
        };
        // SAFETY: plugins pass values the host handed out and that are still alive.
        let copy = unsafe { host_value(value) }.map_or(Value::Null, |v| v.to_json_value());
        builder.value = Some(copy);
        PI_OK
    })
}

/// The host's `PiResultApi`.
pub static RESULT_API: PiResultApi = PiResultApi {
    struct_size: size_of::<PiResultApi>() as u32,
    reserved: 0,
    set_json,
    set_string,
    set_bool,
    set_int,
    set_float,
    set_value,
    set_field_json,
    add_text,
    set_from_value,
};
