//! `PiValue` on the host side: an immutable JSON tree whose strings are NUL-terminated for C,
//! read through the accessor table `PiValueApi`.

use std::sync::{Mutex, OnceLock};

use rustc_hash::{FxBuildHasher, FxHashSet};

use pi_hooks_abi::ffi::*;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{barrier, read_str};

/// A NUL-terminated UTF-8 string; `as_str` excludes the terminator.
pub struct CText(Box<str>);

impl CText {
    /// Copies `s` and appends the terminator.
    pub fn new(s: &str) -> Self {
        let mut owned = String::with_capacity(s.len() + 1);
        owned.push_str(s);
        owned.push('\0');
        CText(owned.into_boxed_str())
    }

    /// The text without its terminator.
    pub fn as_str(&self) -> &str {
        &self.0[..self.0.len() - 1]
    }

    /// The text as a `PiStr` (NUL-terminated, borrowed from `self`).
    pub fn as_pi_str(&self) -> PiStr {
        PiStr {
            ptr: self.0.as_ptr().cast(),
            len: self.0.len() - 1,
        }
    }
}

enum Node {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(CText),
    Array(Vec<HostValue>),
    Object(Vec<(CText, HostValue)>),
}

/// A host value handed to plugins as `*const PiValue`.
pub struct HostValue {
    node: Node,
    json: OnceLock<CText>,
}

impl HostValue {
    /// Converts a `serde_json::Value` (consumed).
    pub fn from_json(value: serde_json::Value) -> Self {
        let node = match value {
            serde_json::Value::Null => Node::Null,
            serde_json::Value::Bool(b) => Node::Bool(b),
            serde_json::Value::Number(n) => Node::Number(n),
            serde_json::Value::String(s) => Node::String(CText::new(&s)),
            serde_json::Value::Array(items) => {
                Node::Array(items.into_iter().map(HostValue::from_json).collect())
            }
            serde_json::Value::Object(map) => Node::Object(
                map.into_iter()
                    .map(|(k, v)| (CText::new(&k), HostValue::from_json(v)))
                    .collect(),
            ),
        };
        HostValue {
            node,
            json: OnceLock::new(),
        }
    }

    /// Copies a borrowed `serde_json::Value` (no intermediate JSON or map).
    pub fn from_json_ref(value: &serde_json::Value) -> Self {
        let node = match value {
            serde_json::Value::Null => Node::Null,
            serde_json::Value::Bool(b) => Node::Bool(*b),
            serde_json::Value::Number(n) => Node::Number(n.clone()),
            serde_json::Value::String(s) => Node::String(CText::new(s)),
            serde_json::Value::Array(items) => {
                Node::Array(items.iter().map(HostValue::from_json_ref).collect())
            }
            serde_json::Value::Object(map) => Node::Object(
                map.iter()
                    .map(|(k, v)| (CText::new(k), HostValue::from_json_ref(v)))
                    .collect(),
            ),
        };
        HostValue {
            node,
            json: OnceLock::new(),
        }
    }

    /// A string value.
    pub fn string(text: &str) -> Self {
        HostValue {
            node: Node::String(CText::new(text)),
            json: OnceLock::new(),
        }
    }

    /// An object with these fields, in this order.
    pub fn object<'k>(fields: impl IntoIterator<Item = (&'k str, HostValue)>) -> Self {
        let fields = fields
            .into_iter()
            .map(|(k, v)| (CText::new(k), v))
            .collect();
        HostValue {
            node: Node::Object(fields),
            json: OnceLock::new(),
        }
    }

    /// Copies the value back into a `serde_json::Value`.
    pub fn to_json_value(&self) -> serde_json::Value {
        match &self.node {
            Node::Null => serde_json::Value::Null,
            Node::Bool(b) => serde_json::Value::Bool(*b),
            Node::Number(n) => serde_json::Value::Number(n.clone()),
            Node::String(s) => serde_json::Value::String(s.as_str().to_owned()),
            Node::Array(items) => items.iter().map(HostValue::to_json_value).collect(),
            Node::Object(fields) => serde_json::Value::Object(
                fields
                    .iter()
                    .map(|(k, v)| (k.as_str().to_owned(), v.to_json_value()))
                    .collect(),
            ),
        }
    }

    /// The pointer handed to plugins (borrowed).
    pub fn as_ptr(&self) -> *const PiValue {
        (self as *const HostValue).cast()
    }

    /// Moves the value to the heap and hands ownership to the plugin (`values->free`).
    pub fn into_owned_ptr(self) -> *mut PiValue {
        let ptr: *mut PiValue = Box::into_raw(Box::new(self)).cast();
        owned_values().insert(ptr as usize);
        ptr
    }

    /// Field `key` of an object.
    pub fn field(&self, key: &str) -> Option<&HostValue> {
        match &self.node {
            Node::Object(fields) => fields
                .iter()
                .find(|(k, _)| k.as_str() == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at an RFC 6901 JSON Pointer.
    pub fn pointer(&self, path: &str) -> Option<&HostValue> {
        if path.is_empty() {
            return Some(self);
        }
        let rest = path.strip_prefix('/')?;
        rest.split('/').try_fold(self, |value, token| {
            let token: std::borrow::Cow<'_, str> = if token.contains('~') {
                token.replace("~1", "/").replace("~0", "~").into()
            } else {
                token.into()
            };
            match &value.node {
                Node::Object(_) => value.field(&token),
                Node::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            }
        })
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match &self.node {
            Node::String(s) => Some(s.as_str()),
            _ => None,
        }
    }

    fn json_text(&self) -> &CText {
        self.json.get_or_init(|| {
            CText::new(&serde_json::to_string(self).unwrap_or_else(|_| "null".to_owned()))
        })
    }
}

impl Serialize for HostValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.node {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Number(n) => n.serialize(serializer),
            Node::String(s) => serializer.serialize_str(s.as_str()),
            Node::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Object(fields) => {
                let mut map = serializer.serialize_map(Some(fields.len()))?;
                for (k, v) in fields {
                    map.serialize_entry(k.as_str(), v)?;
                }
                map.end()
            }
        }
    }
}

/// Reads a plugin-given `*const PiValue`.
///
/// # Safety
/// `ptr` must be NULL or a pointer the host handed out (borrowed and still alive, or owned
/// and not yet freed).
pub unsafe fn host_value<'a>(ptr: *const PiValue) -> Option<&'a HostValue> {
    // SAFETY: by the caller's contract every non-NULL PiValue pointer is a live HostValue.
    unsafe { ptr.cast::<HostValue>().as_ref() }
}

unsafe extern "C" fn kind(value: *const PiValue) -> u32 {
    barrier(PI_VALUE_ABSENT, || {
        // SAFETY: plugins pass values the host handed out (ABI contract of PiValue).
        match unsafe { host_value(value) }.map(|v| &v.node) {
            None => PI_VALUE_ABSENT,
            Some(Node::Null) => PI_VALUE_NULL,
            Some(Node::Bool(_)) => PI_VALUE_BOOL,
            Some(Node::Number(_)) => PI_VALUE_NUMBER,
            Some(Node::String(_)) => PI_VALUE_STRING,
            Some(Node::Array(_)) => PI_VALUE_ARRAY,
            Some(Node::Object(_)) => PI_VALUE_OBJECT,
        }
    })
}

unsafe extern "C" fn get(value: *const PiValue, key: PiStr) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `kind`; `key` is a plugin string valid for the call.
        let (value, key) = unsafe { (host_value(value), read_str(key)) };
        match (value, key) {
            (Some(v), Ok(k)) => v.field(k).map_or(std::ptr::null(), HostValue::as_ptr),
            _ => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn pointer(value: *const PiValue, path: PiStr) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `get`.
        let (value, path) = unsafe { (host_value(value), read_str(path)) };
        match (value, path) {
            (Some(v), Ok(p)) => v.pointer(p).map_or(std::ptr::null(), HostValue::as_ptr),
            _ => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn len(value: *const PiValue) -> usize {
    barrier(0, || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Array(items)) => items.len(),
            Some(Node::Object(fields)) => fields.len(),
            _ => 0,
        }
    })
}

unsafe extern "C" fn at(value: *const PiValue, index: usize) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Array(items)) => {
                items.get(index).map_or(std::ptr::null(), HostValue::as_ptr)
            }
            _ => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn entry(
    value: *const PiValue,
    index: usize,
    key_out: *mut PiStr,
) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `kind`.
        let field = match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Object(fields)) => fields.get(index),
            _ => None,
        };
        let Some((key, value)) = field else {
            return std::ptr::null();
        };
        if !key_out.is_null() {
            // SAFETY: non-NULL out-pointers from plugins point to writable PiStr (ABI contract).
            unsafe { key_out.write(key.as_pi_str()) };
        }
        value.as_ptr()
    })
}

/// Writes `out` after checking it, mapping a NULL out-pointer to `PI_ERR_INVALID_ARG`.
fn write_out<T>(out: *mut T, value: T) -> PiStatus {
    if out.is_null() {
        return PI_ERR_INVALID_ARG;
    }
    // SAFETY: non-NULL out-pointers from plugins point to writable storage (ABI contract).
    unsafe { out.write(value) };
    PI_OK
}

unsafe extern "C" fn as_str(value: *const PiValue, out: *mut PiStr) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::String(s)) => write_out(out, s.as_pi_str()),
            _ => PI_ERR_WRONG_TYPE,
        }
    })
}

unsafe extern "C" fn as_int(value: *const PiValue, out: *mut i64) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: as in `kind`.
        let number = match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Number(n)) => n,
            _ => return PI_ERR_WRONG_TYPE,
        };
        let whole = number.as_i64().or_else(|| {
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        });
        whole.map_or(PI_ERR_WRONG_TYPE, |n| write_out(out, n))
    })
}

unsafe extern "C" fn as_float(value: *const PiValue, out: *mut f64) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Number(n)) => n.as_f64().map_or(PI_ERR_WRONG_TYPE, |f| write_out(out, f)),
            _ => PI_ERR_WRONG_TYPE,
        }
    })
}

unsafe extern "C" fn as_bool(value: *const PiValue, out: *mut bool) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) }.map(|v| &v.node) {
            Some(Node::Bool(b)) => write_out(out, *b),
            _ => PI_ERR_WRONG_TYPE,
        }
    })
}

unsafe extern "C" fn to_json(value: *const PiValue, out: *mut PiStr) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: as in `kind`.
        match unsafe { host_value(value) } {
            Some(v) => write_out(out, v.json_text().as_pi_str()),
            None => PI_ERR_INVALID_ARG,
        }
    })
}

unsafe extern "C" fn parse(json: PiStr, out: *mut *mut PiValue) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        // SAFETY: `json` is a plugin string valid for the call.
        let text = match unsafe { read_str(json) } {
            Ok(t) => t,
            Err(status) => return status,
        };
        match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) => write_out(out, HostValue::from_json(v).into_owned_ptr()),
            Err(_) => PI_ERR_INVALID_ARG,
        }
    })
}

/// The values handed to plugins as owned and not yet freed. `free` takes only these, so a
/// borrowed value (a payload, a field of one) or one freed already is ignored instead of
/// corrupting the host's memory.
fn owned_values() -> std::sync::MutexGuard<'static, FxHashSet<usize>> {
    static OWNED: Mutex<FxHashSet<usize>> = Mutex::new(FxHashSet::with_hasher(FxBuildHasher));
    OWNED.lock().unwrap_or_else(|e| e.into_inner())
}

unsafe extern "C" fn free(value: *mut PiValue) {
    barrier((), || {
        if value.is_null() || !owned_values().remove(&(value as usize)) {
            return;
        }
        // SAFETY: the pointer was made by `into_owned_ptr` (it was in the owned set) and is
        // freed once (it has just been taken out of the set).
        drop(unsafe { Box::from_raw(value.cast::<HostValue>()) });
    })
}

/// The host's `PiValueApi`.
pub static VALUE_API: PiValueApi = PiValueApi {
    struct_size: size_of::<PiValueApi>() as u32,
    reserved: 0,
    kind,
    get,
    pointer,
    len,
    at,
    entry,
    as_str,
    as_int,
    as_float,
    as_bool,
    to_json,
    parse,
    free,
};

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accessors_read_a_payload_without_json() {
        let v = HostValue::from_json(
            json!({"toolName": "bash", "input": {"command": "ls"}, "n": 3, "a": [1.5, true]}),
        );
        let p = v.as_ptr();
        // SAFETY: `p` and every pointer derived from it are alive while `v` is.
        unsafe {
            assert_eq!(kind(p), PI_VALUE_OBJECT);
            let cmd = pointer(
                p,
                PiStr {
                    ptr: "/input/command".as_ptr().cast(),
                    len: 14,
                },
            );
            let mut s = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            assert_eq!(as_str(cmd, &mut s), PI_OK);
            assert_eq!(
                std::slice::from_raw_parts(s.ptr.cast::<u8>(), s.len + 1),
                b"ls\0"
            );
            let mut n = 0;
            assert_eq!(
                as_int(
                    get(
                        p,
                        PiStr {
                            ptr: "n".as_ptr().cast(),
                            len: 1
                        }
                    ),
                    &mut n
                ),
                PI_OK
            );
            assert_eq!(n, 3);
            assert_eq!(as_int(cmd, &mut n), PI_ERR_WRONG_TYPE);
            let arr = get(
                p,
                PiStr {
                    ptr: "a".as_ptr().cast(),
                    len: 1,
                },
            );
            assert_eq!(len(arr), 2);
            assert_eq!(as_int(at(arr, 0), &mut n), PI_ERR_WRONG_TYPE);
            assert!(at(arr, 2).is_null());
            assert_eq!(
                kind(get(
                    std::ptr::null(),
                    PiStr {
                        ptr: "x".as_ptr().cast(),
                        len: 1
                    }
                )),
                PI_VALUE_ABSENT
            );
            let mut j = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            assert_eq!(to_json(arr, &mut j), PI_OK);
            assert_eq!(
                std::slice::from_raw_parts(j.ptr.cast::<u8>(), j.len),
                b"[1.5,true]"
            );
        }
    }
}
