//! `PiValue` on the host side: an immutable JSON tree whose strings are NUL-terminated for C,
//! read through the accessor table `PiValueApi`.

use std::sync::{Mutex, OnceLock};

use rustc_hash::{FxBuildHasher, FxHashSet};

use pi_hooks_abi::ffi::*;
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{barrier, read_bytes, read_str};

/// A NUL-terminated UTF-8 string; `as_str` excludes the terminator.
#[derive(Clone)]
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

    /// The bytes of the text without its terminator.
    pub fn as_bytes(&self) -> &[u8] {
        self.0
            .as_bytes()
            .split_last()
            .map_or(&[][..], |(_nul, text)| text)
    }

    /// Whether the text is `key`, byte for byte. The stored length (terminator included) is
    /// compared first, so a lookup skips a key of another length with one comparison.
    #[inline]
    pub fn is(&self, key: &[u8]) -> bool {
        let stored = self.0.as_bytes();
        // `key.len() + 1` cannot overflow: a slice is at most `isize::MAX` bytes long.
        stored.len() == key.len() + 1
            && stored
                .get(..key.len())
                .is_some_and(|text| same_bytes(text, key))
    }

    /// The text as a `PiStr` (NUL-terminated, borrowed from `self`).
    pub fn as_pi_str(&self) -> PiStr {
        PiStr {
            ptr: self.0.as_ptr().cast(),
            len: self.0.len() - 1,
        }
    }
}

#[derive(Clone)]
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

/// A deep copy; the copy computes its own JSON text when asked.
impl Clone for HostValue {
    fn clone(&self) -> Self {
        HostValue::of(self.node.clone())
    }
}

impl HostValue {
    fn of(node: Node) -> Self {
        HostValue {
            node,
            json: OnceLock::new(),
        }
    }

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
        self.field_bytes(key.as_bytes())
    }

    /// Field `key` of an object, the key given as bytes. Keys are compared byte-wise (a
    /// linear scan: payloads have a handful of fields), so the key needs no UTF-8 check: the
    /// host's keys are UTF-8, and bytes that are not never match one.
    pub fn field_bytes(&self, key: &[u8]) -> Option<&HostValue> {
        match &self.node {
            Node::Object(fields) => fields.iter().find(|(k, _)| k.is(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value at an RFC 6901 JSON Pointer.
    pub fn pointer(&self, path: &str) -> Option<&HostValue> {
        self.pointer_bytes(path.as_bytes())
    }

    /// The value at an RFC 6901 JSON Pointer given as bytes: `""` is the value itself, every
    /// other path starts with `/`; in a token `~1` stands for `/` and `~0` for `~` (any other
    /// `~` is kept as it is); an array index is `0` or digits without a leading zero or sign.
    /// Walks the path in place, allocating nothing. As in [`HostValue::field_bytes`], the
    /// path needs no UTF-8 check: `/` and the escapes are ASCII, which never occurs inside a
    /// multi-byte UTF-8 sequence, so an invalid path only yields tokens that match no key.
    pub fn pointer_bytes(&self, path: &[u8]) -> Option<&HostValue> {
        let mut rest = match path.split_first() {
            None => return Some(self),
            Some((b'/', rest)) => rest,
            Some(_) => return None,
        };
        let mut value = self;
        loop {
            let (slash, escaped) = first_token(rest);
            let Some(end) = slash else {
                return value.pointer_step(rest, escaped);
            };
            value = value.pointer_step(rest.get(..end)?, escaped)?;
            rest = rest.get(end + 1..)?;
        }
    }

    /// One step of a JSON Pointer: the field or element that `token` names (`escaped`: it
    /// holds a `~`, so it is compared unescaped).
    #[inline]
    fn pointer_step(&self, token: &[u8], escaped: bool) -> Option<&HostValue> {
        match &self.node {
            Node::Object(_) if escaped => self.field_escaped(token),
            Node::Object(_) => self.field_bytes(token),
            Node::Array(items) => array_index(token).and_then(|i| items.get(i)),
            _ => None,
        }
    }

    /// Field of an object named by a JSON Pointer token with escapes (rare, so kept out of
    /// the common path).
    #[cold]
    #[inline(never)]
    fn field_escaped(&self, token: &[u8]) -> Option<&HostValue> {
        match &self.node {
            Node::Object(fields) => fields
                .iter()
                .find(|(k, _)| unescape_token(token).eq(k.as_bytes().iter().copied()))
                .map(|(_, v)| v),
            _ => None,
        }
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

/// Whether `a` and `b`, of the same length, hold the same bytes. Keys are short, so this
/// compares a few (overlapping) words in place instead of calling `memcmp`; with no call in
/// it, a lookup loop needs no registers saved.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    debug_assert_eq!(a.len(), b.len());
    let n = a.len();
    match n {
        0..4 => a.first() == b.first() && a.get(n / 2) == b.get(n / 2) && a.last() == b.last(),
        4..8 => {
            a.first_chunk::<4>().map(|w| u32::from_ne_bytes(*w))
                == b.first_chunk::<4>().map(|w| u32::from_ne_bytes(*w))
                && a.last_chunk::<4>().map(|w| u32::from_ne_bytes(*w))
                    == b.last_chunk::<4>().map(|w| u32::from_ne_bytes(*w))
        }
        _ => {
            let word = |w: &[u8; 8]| u64::from_ne_bytes(*w);
            a.chunks_exact(8)
                .zip(b.chunks_exact(8))
                .all(|(x, y)| x.first_chunk().map(word) == y.first_chunk().map(word))
                && a.last_chunk().map(word) == b.last_chunk().map(word)
        }
    }
}

/// Where the first `/` in `path` is, if anywhere, and whether the token before it (or all of
/// `path`) holds a `~`. Looks at eight bytes at a time (tokens are short: a byte-by-byte
/// loop was a third of the cost of a `pointer` call).
fn first_token(path: &[u8]) -> (Option<usize>, bool) {
    let mut escaped = false;
    let mut offset = 0;
    let mut chunks = path.chunks_exact(8);
    for chunk in chunks.by_ref() {
        let word = chunk.first_chunk().map_or(0, |w| u64::from_le_bytes(*w));
        if let Some(at) = find_slash(word, &mut escaped) {
            return (Some(offset + at), escaped);
        }
        offset += 8;
    }
    let word = load_short(chunks.remainder());
    (
        find_slash(word, &mut escaped).map(|at| offset + at),
        escaped,
    )
}

/// The index of the first `/` among the eight bytes of `word` (little-endian); sets `escaped`
/// when a `~` comes before it (or anywhere in `word` when there is no `/`).
#[inline]
fn find_slash(word: u64, escaped: &mut bool) -> Option<usize> {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    // The high bit of every byte of `word` that equals `byte`: exact up to the lowest match
    // (a borrow may also mark bytes above it), so only the lowest match is used.
    let matches = |byte: u8| {
        let x = word ^ (ONES * u64::from(byte));
        x.wrapping_sub(ONES) & !x & HIGHS
    };
    let (slash, tilde) = (matches(b'/'), matches(b'~'));
    if slash == 0 {
        *escaped |= tilde != 0;
        return None;
    }
    // The bits below the lowest `/`: a `~` there (its lowest mark is exact) comes before it.
    let below_slash = (slash & slash.wrapping_neg()) - 1;
    *escaped |= tilde & below_slash != 0;
    Some((slash.trailing_zeros() / 8) as usize)
}

/// The bytes of `bytes` (fewer than eight) as a little-endian word padded with zeros (NUL is
/// neither `/` nor `~`), read as two overlapping halves or three single bytes.
#[inline]
fn load_short(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    // `i` is below 8; `% 8` only shows the compiler that the shift stays in range.
    let byte_at = |i: usize| bytes.get(i).map_or(0, |&b| u64::from(b) << (8 * (i % 8)));
    let half = |w: &[u8; 4]| u64::from(u32::from_le_bytes(*w));
    match n {
        0 => 0,
        1..4 => byte_at(0) | byte_at(n / 2) | byte_at(n - 1),
        _ => {
            let low = bytes.first_chunk().map_or(0, half);
            let high = bytes.last_chunk().map_or(0, half);
            low | high << (8 * (n.saturating_sub(4) % 8))
        }
    }
}

/// The bytes of a JSON Pointer token with `~1` read as `/` and `~0` as `~` (left to right,
/// so `~01` is `~1`; a `~` before anything else stays), without building a string.
fn unescape_token(token: &[u8]) -> impl Iterator<Item = u8> + '_ {
    let mut bytes = token.iter().copied().peekable();
    std::iter::from_fn(move || {
        let byte = bytes.next()?;
        if byte != b'~' {
            return Some(byte);
        }
        match bytes.peek() {
            Some(b'0') => {
                bytes.next();
                Some(b'~')
            }
            Some(b'1') => {
                bytes.next();
                Some(b'/')
            }
            _ => Some(b'~'),
        }
    })
}

/// An RFC 6901 array index: `0`, or ASCII digits not starting with `0` (no sign, no leading
/// zero, as `serde_json::Value::pointer` reads them); `None` when it overflows `usize`.
fn array_index(token: &[u8]) -> Option<usize> {
    match token {
        [] => None,
        [b'0'] => Some(0),
        [b'0', ..] => None,
        digits => digits.iter().try_fold(0usize, |n, &b| {
            let digit = b.checked_sub(b'0').filter(|d| *d <= 9)?;
            n.checked_mul(10)?.checked_add(usize::from(digit))
        }),
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

// `get`, `pointer` and `as_str` run on every payload read, so in a release build their bodies
// have no panic path (no indexing, no allocation, no UTF-8 check): the barrier stays, as on
// every export, and costs nothing there, because the compiler drops a catch around code that
// cannot unwind.
unsafe extern "C" fn get(value: *const PiValue, key: PiStr) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `kind`; `key` is a plugin string valid for the call.
        let (value, key) = unsafe { (host_value(value), read_bytes(key)) };
        match (value, key) {
            (Some(v), Ok(k)) => v.field_bytes(k).map_or(std::ptr::null(), HostValue::as_ptr),
            _ => std::ptr::null(),
        }
    })
}

unsafe extern "C" fn pointer(value: *const PiValue, path: PiStr) -> *const PiValue {
    barrier(std::ptr::null(), || {
        // SAFETY: as in `get`.
        let (value, path) = unsafe { (host_value(value), read_bytes(path)) };
        match (value, path) {
            (Some(v), Ok(p)) => v
                .pointer_bytes(p)
                .map_or(std::ptr::null(), HostValue::as_ptr),
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

/// Hands a new value to the plugin as owned.
fn new_owned(node: Node) -> *mut PiValue {
    barrier(std::ptr::null_mut(), || {
        HostValue::of(node).into_owned_ptr()
    })
}

unsafe extern "C" fn new_object() -> *mut PiValue {
    new_owned(Node::Object(Vec::new()))
}

unsafe extern "C" fn new_array() -> *mut PiValue {
    new_owned(Node::Array(Vec::new()))
}

unsafe extern "C" fn new_string(text: PiStr) -> *mut PiValue {
    barrier(std::ptr::null_mut(), || {
        // SAFETY: `text` is a plugin string valid for the call.
        match unsafe { read_str(text) } {
            Ok(text) => HostValue::string(text).into_owned_ptr(),
            Err(_) => std::ptr::null_mut(),
        }
    })
}

unsafe extern "C" fn new_int(value: i64) -> *mut PiValue {
    new_owned(Node::Number(value.into()))
}

unsafe extern "C" fn new_float(value: f64) -> *mut PiValue {
    new_owned(serde_json::Number::from_f64(value).map_or(Node::Null, Node::Number))
}

unsafe extern "C" fn new_bool(value: bool) -> *mut PiValue {
    new_owned(Node::Bool(value))
}

unsafe extern "C" fn new_null() -> *mut PiValue {
    new_owned(Node::Null)
}

unsafe extern "C" fn copy(value: *const PiValue) -> *mut PiValue {
    barrier(std::ptr::null_mut(), || {
        // SAFETY: as in `kind`.
        unsafe { host_value(value) }.map_or(std::ptr::null_mut(), |v| v.clone().into_owned_ptr())
    })
}

/// Moves the owned value `item` into the owned value `target` with `change`, which answers
/// a status (dropping `item` when it refuses it). `item` is taken over whenever it is owned
/// and not `target`: on an error it is freed. Neither pointer is read unless it is in the
/// owned set, so a borrowed, freed or wild pointer is refused without touching it.
fn adopt(
    target: *mut PiValue,
    item: *mut PiValue,
    change: impl FnOnce(&mut Node, HostValue) -> PiStatus,
) -> PiStatus {
    barrier(PI_ERR_PANIC, || {
        let mut owned = owned_values();
        if item.is_null() || item == target || !owned.remove(&(item as usize)) {
            return PI_ERR_INVALID_ARG;
        }
        // SAFETY: `item` was in the owned set, so `into_owned_ptr` made it and nobody freed
        // it; taking it out of the set makes this the only owner.
        let item = unsafe { Box::from_raw(item.cast::<HostValue>()) };
        if target.is_null() || !owned.contains(&(target as usize)) {
            drop(owned);
            drop(item);
            return PI_ERR_INVALID_ARG;
        }
        // SAFETY: `target` is in the owned set, so it is a live HostValue that only the
        // plugin holds, and the plugin is inside this call; the lock on the owned set keeps
        // a concurrent `free`, `push` or `set` of it waiting until the change is made.
        let target = unsafe { &mut *target.cast::<HostValue>() };
        let status = change(&mut target.node, *item);
        if status == PI_OK {
            target.json = OnceLock::new();
        }
        status
    })
}

unsafe extern "C" fn push(array: *mut PiValue, item: *mut PiValue) -> PiStatus {
    adopt(array, item, |node, item| match node {
        Node::Array(items) => {
            items.push(item);
            PI_OK
        }
        _ => PI_ERR_WRONG_TYPE,
    })
}

unsafe extern "C" fn set(object: *mut PiValue, key: PiStr, item: *mut PiValue) -> PiStatus {
    adopt(object, item, |node, item| {
        // SAFETY: `key` is a plugin string valid for the call.
        let key = match unsafe { read_str(key) } {
            Ok(key) => key,
            Err(status) => return status,
        };
        let Node::Object(fields) = node else {
            return PI_ERR_WRONG_TYPE;
        };
        match fields.iter_mut().find(|(k, _)| k.as_str() == key) {
            Some((_, value)) => *value = item,
            None => fields.push((CText::new(key), item)),
        }
        PI_OK
    })
}

unsafe extern "C" fn json_quote(text: PiStr, buf: *mut std::os::raw::c_char, cap: usize) -> usize {
    barrier(0, || {
        // SAFETY: `text` is a plugin string valid for the call.
        let Ok(text) = (unsafe { read_str(text) }) else {
            return 0;
        };
        if buf.is_null() && cap != 0 {
            return 0;
        }
        let Ok(quoted) = serde_json::to_string(text) else {
            return 0;
        };
        if quoted.len() < cap {
            // SAFETY: the plugin gives `cap` writable bytes at `buf` (ABI contract), and the
            // literal and its NUL take `quoted.len() + 1 <= cap` of them; the regions are
            // distinct (ours is a fresh String).
            unsafe {
                std::ptr::copy_nonoverlapping(quoted.as_ptr(), buf.cast::<u8>(), quoted.len());
                buf.add(quoted.len()).write(0);
            }
        }
        quoted.len()
    })
}

/// The compiled expressions `replace_text` was given, by pattern text. Plugins pass the same
/// few patterns on every call, so each is compiled once; the cache is emptied when it holds
/// [`PATTERN_CACHE_SIZE`] so that generated patterns cannot grow it without bound.
fn compiled(pattern: &str) -> Result<regex::Regex, regex::Error> {
    static CACHE: Mutex<Option<rustc_hash::FxHashMap<Box<str>, regex::Regex>>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let cache = cache.get_or_insert_with(Default::default);
    if let Some(regex) = cache.get(pattern) {
        return Ok(regex.clone());
    }
    let regex = regex::Regex::new(pattern)?;
    if cache.len() >= PATTERN_CACHE_SIZE {
        cache.clear();
    }
    cache.insert(pattern.into(), regex.clone());
    Ok(regex)
}

/// How many compiled patterns `replace_text` keeps.
const PATTERN_CACHE_SIZE: usize = 64;

/// `text` with every match of `regex` replaced, counting the matches into `count`.
fn replace_in(text: &CText, regex: &regex::Regex, replacement: &str, count: &mut usize) -> Node {
    let matches = regex.find_iter(text.as_str()).count();
    if matches == 0 {
        return Node::String(text.clone());
    }
    *count += matches;
    Node::String(CText::new(&regex.replace_all(text.as_str(), replacement)))
}

/// `node` with the text replaced as `replace_text` describes: a string, or the `text` string
/// of each object in an array (the text blocks of a content array); anything else copied.
fn replace_node(node: &Node, regex: &regex::Regex, replacement: &str, count: &mut usize) -> Node {
    let text_field = |(key, value): &(CText, HostValue), count: &mut usize| match &value.node {
        Node::String(text) if key.is(b"text") => (
            key.clone(),
            HostValue::of(replace_in(text, regex, replacement, count)),
        ),
        _ => (key.clone(), value.clone()),
    };
    match node {
        Node::String(text) => replace_in(text, regex, replacement, count),
        Node::Array(blocks) => Node::Array(
            blocks
                .iter()
                .map(|block| match &block.node {
                    Node::Object(fields) => HostValue::of(Node::Object(
                        fields
                            .iter()
                            .map(|field| text_field(field, count))
                            .collect(),
                    )),
                    _ => block.clone(),
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

unsafe extern "C" fn replace_text(
    value: *const PiValue,
    pattern: PiStr,
    replacement: PiStr,
    replaced: *mut usize,
) -> *mut PiValue {
    barrier(std::ptr::null_mut(), || {
        let mut count = 0;
        // SAFETY: as in `kind`; `pattern` and `replacement` are plugin strings valid for the
        // call.
        let made = match unsafe { (host_value(value), read_str(pattern), read_str(replacement)) } {
            (Some(value), Ok(pattern), Ok(replacement)) => match compiled(pattern) {
                Ok(regex) => {
                    let node = replace_node(&value.node, &regex, replacement, &mut count);
                    HostValue::of(node).into_owned_ptr()
                }
                Err(error) => {
                    // The syntax error's last line says what is wrong ("error: ..."); the
                    // lines above it repeat the pattern with a caret.
                    let reason = error.to_string();
                    let reason = reason.lines().last().unwrap_or_default();
                    crate::observe::diagnostics::warn(&format!(
                        "replace_text: invalid pattern \"{}\": {}",
                        crate::guards::display::escape(pattern),
                        crate::guards::display::escape(reason.trim_start_matches("error: "))
                    ));
                    std::ptr::null_mut()
                }
            },
            _ => std::ptr::null_mut(),
        };
        if !replaced.is_null() {
            // SAFETY: a non-NULL `replaced` points to a writable size_t (ABI contract).
            unsafe { replaced.write(count) };
        }
        made
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
    new_object,
    new_array,
    new_string,
    new_int,
    new_float,
    new_bool,
    new_null,
    copy,
    push,
    set,
    json_quote,
    replace_text,
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

    /// A plugin string over `bytes` (any bytes, as a C plugin may pass).
    fn pi(bytes: &[u8]) -> PiStr {
        PiStr {
            ptr: bytes.as_ptr().cast(),
            len: bytes.len(),
        }
    }

    /// The JSON at `ptr` (`None` for NULL).
    fn json_at(ptr: *const PiValue) -> Option<serde_json::Value> {
        // SAFETY: the callers pass NULL or pointers into a value they keep alive.
        unsafe { host_value(ptr) }.map(HostValue::to_json_value)
    }

    fn sample() -> serde_json::Value {
        json!({
            "a/b": 1, "m~n": 2, "~1": 3, "": 4, "é": "accent",
            "x": {"y": [10, 20, {"z": "deep"}]},
            "a_key_longer_than_eight": {"another_long_key_name": true, "k": "short"},
        })
    }

    #[test]
    fn pointer_unescapes_tokens_and_reads_array_indexes() {
        let v = HostValue::from_json(sample());
        let at = |path: &str| v.pointer(path).map(HostValue::to_json_value);
        assert_eq!(at(""), Some(sample()));
        assert_eq!(at("/a~1b"), Some(json!(1)));
        assert_eq!(at("/m~0n"), Some(json!(2)));
        assert_eq!(at("/~01"), Some(json!(3)), "~01 is ~1, not /");
        assert_eq!(at("/m~n"), Some(json!(2)), "a ~ before another byte stays");
        assert_eq!(at("/"), Some(json!(4)), "/ names the empty key");
        assert_eq!(at("/é"), Some(json!("accent")));
        assert_eq!(at("/x/y/0"), Some(json!(10)));
        assert_eq!(at("/x/y/1"), Some(json!(20)));
        assert_eq!(at("/x/y/2/z"), Some(json!("deep")));
        assert_eq!(
            at("/a_key_longer_than_eight/another_long_key_name"),
            Some(json!(true))
        );
        assert_eq!(at("/a_key_longer_than_eight/k"), Some(json!("short")));
        for missing in [
            "x",
            "/a/b",
            "/x/",
            "/x/y/3",
            "/x/y/01",
            "/x/y/+1",
            "/x/y/-",
            "/x/y/-0",
            "/x/y/1a",
            "/x/y/99999999999999999999999",
            "/x/y/0/z",
            "/nope",
            "/x/y/2/z/more",
        ] {
            assert_eq!(at(missing), None, "{missing}");
        }
    }

    #[test]
    fn pointer_agrees_with_serde_json_on_every_short_path() {
        // Every path of up to three tokens from these (escapes, indexes, keys that cross the
        // 8-byte scan's chunk borders); serde_json's `Value::pointer` reads RFC 6901 the same
        // way, so both must find the same value or both nothing.
        let json = sample();
        let v = HostValue::from_json(json.clone());
        let tokens = [
            "",
            "a",
            "b",
            "a~1b",
            "m~0n",
            "m~n",
            "~01",
            "~1",
            "~0",
            "~",
            "é",
            "x",
            "y",
            "z",
            "0",
            "1",
            "2",
            "3",
            "01",
            "+1",
            "-",
            "k",
            "a_key_longer_than_eight",
            "another_long_key_name",
        ];
        let mut paths = vec![String::new()];
        let mut last_level = vec![String::new()];
        for _ in 0..3 {
            let level: Vec<String> = last_level
                .iter()
                .flat_map(|p| tokens.iter().map(move |t| format!("{p}/{t}")))
                .collect();
            paths.extend(level.iter().cloned());
            last_level = level;
        }
        let mut found = 0;
        for path in &paths {
            let ours = v.pointer(path).map(HostValue::to_json_value);
            assert_eq!(ours, json.pointer(path).cloned(), "{path}");
            found += usize::from(ours.is_some());
        }
        assert!(
            found >= 15,
            "the paths reach into the sample ({found} found)"
        );
    }

    #[test]
    fn token_scan_matches_a_byte_by_byte_scan() {
        let alphabet = b"a/~0\xff";
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..50_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let len = (state % 26) as usize;
            let path: Vec<u8> = (0..len)
                .map(|i| alphabet[((state >> (i % 48)) % alphabet.len() as u64) as usize])
                .collect();
            let slash = path.iter().position(|&b| b == b'/');
            let token = &path[..slash.unwrap_or(path.len())];
            assert_eq!(
                first_token(&path),
                (slash, token.contains(&b'~')),
                "{path:?}"
            );
        }
    }

    #[test]
    fn same_bytes_compares_every_byte_at_every_length() {
        for n in 0..=40 {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
            assert!(same_bytes(&a, &a.clone()), "length {n}");
            for flip in 0..n {
                let mut b = a.clone();
                b[flip] ^= 0x01;
                assert!(!same_bytes(&a, &b), "length {n}, byte {flip}");
            }
        }
    }

    #[test]
    fn lookups_take_any_bytes_and_invalid_utf8_matches_nothing() {
        let v = HostValue::from_json(sample());
        let p = v.as_ptr();
        // SAFETY: `p` and every pointer derived from it are alive while `v` is; every PiStr
        // points to bytes alive for the call.
        unsafe {
            assert_eq!(json_at(get(p, pi("é".as_bytes()))), Some(json!("accent")));
            assert_eq!(json_at(get(p, pi(b"\xc3"))), None, "truncated UTF-8");
            assert_eq!(json_at(get(p, pi(b"\xff"))), None);
            assert_eq!(
                json_at(get(p, pi(b"x\0"))),
                None,
                "a NUL is part of the key"
            );
            assert_eq!(json_at(get(p, pi(b""))), Some(json!(4)));
            let null_empty = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            let null_long = PiStr {
                ptr: std::ptr::null(),
                len: 3,
            };
            assert_eq!(json_at(get(p, null_empty)), Some(json!(4)));
            assert!(get(p, null_long).is_null());
            assert_eq!(json_at(pointer(p, null_empty)), Some(sample()));
            assert!(pointer(p, null_long).is_null());
            assert_eq!(json_at(pointer(p, pi(b"/x/y/1"))), Some(json!(20)));
            assert_eq!(json_at(pointer(p, pi(b"/\xc3\xa9"))), Some(json!("accent")));
            assert_eq!(json_at(pointer(p, pi(b"/\xc3"))), None);
            assert_eq!(json_at(pointer(p, pi(b"/x\xff/y"))), None);
            assert_eq!(json_at(pointer(p, pi(b"/~\xff"))), None);
            let y = pointer(p, pi(b"/x/y"));
            assert!(get(y, pi(b"0")).is_null(), "get does not index arrays");
            assert_eq!(json_at(pointer(y, pi(b"/2/z"))), Some(json!("deep")));
        }
    }

    /// The JSON of an owned or borrowed value (panics on NULL).
    fn json_of(ptr: *const PiValue) -> serde_json::Value {
        json_at(ptr).expect("a value")
    }

    #[test]
    fn builders_make_owned_values_that_push_and_set_take_over() {
        // SAFETY: every pointer used is NULL or one these functions handed out and that was
        // not given away or freed before its use (except where a refusal is the point: those
        // pointers are only compared, never read, by the host).
        unsafe {
            let content = new_array();
            let block = new_object();
            assert_eq!(set(block, pi(b"type"), new_string(pi(b"text"))), PI_OK);
            assert_eq!(set(block, pi(b"text"), new_string(pi(b"a \"b\"\n"))), PI_OK);
            assert_eq!(set(block, pi(b"type"), new_string(pi(b"note"))), PI_OK);
            assert_eq!(push(content, block), PI_OK);
            assert_eq!(push(content, new_int(-7)), PI_OK);
            assert_eq!(push(content, new_float(1.5)), PI_OK);
            assert_eq!(push(content, new_float(f64::NAN)), PI_OK);
            assert_eq!(push(content, new_bool(true)), PI_OK);
            assert_eq!(push(content, new_null()), PI_OK);
            assert_eq!(
                json_of(content),
                json!([{"type": "note", "text": "a \"b\"\n"}, -7, 1.5, null, true, null]),
                "a replaced field keeps its place"
            );
            // `block` now belongs to the array: it is no longer owned on its own.
            assert!(!owned_values().contains(&(block as usize)));
            let mut text = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            assert_eq!(to_json(at(content, 1), &mut text), PI_OK);
            assert_eq!(
                std::slice::from_raw_parts(text.ptr.cast::<u8>(), text.len),
                b"-7"
            );
            free(content);
            assert!(!owned_values().contains(&(content as usize)));
        }
    }

    #[test]
    fn a_change_refreshes_the_json_text() {
        // SAFETY: owned values made here, used before they are freed.
        unsafe {
            let object = new_object();
            let mut text = PiStr {
                ptr: std::ptr::null(),
                len: 0,
            };
            assert_eq!(to_json(object, &mut text), PI_OK);
            assert_eq!(
                std::slice::from_raw_parts(text.ptr.cast::<u8>(), text.len),
                b"{}"
            );
            assert_eq!(set(object, pi(b"k"), new_int(1)), PI_OK);
            assert_eq!(to_json(object, &mut text), PI_OK);
            assert_eq!(
                std::slice::from_raw_parts(text.ptr.cast::<u8>(), text.len),
                br#"{"k":1}"#
            );
            free(object);
        }
    }

    #[test]
    fn copy_makes_a_borrowed_payload_changeable_and_leaves_it_alone() {
        let payload = HostValue::from_json(json!({"content": [
            {"type": "text", "text": "key AKIA"},
            {"type": "image", "data": "iVBO", "mimeType": "image/png"}
        ]}));
        // SAFETY: `payload` lives through the block; owned values are freed once.
        unsafe {
            let borrowed = get(payload.as_ptr(), pi(b"content"));
            let first = copy(at(borrowed, 0));
            assert_eq!(
                set(first, pi(b"text"), new_string(pi(b"key [REDACTED]"))),
                PI_OK
            );
            let content = new_array();
            assert_eq!(push(content, first), PI_OK);
            assert_eq!(push(content, copy(at(borrowed, 1))), PI_OK);
            assert_eq!(
                json_of(content),
                json!([
                    {"type": "text", "text": "key [REDACTED]"},
                    {"type": "image", "data": "iVBO", "mimeType": "image/png"}
                ])
            );
            assert_eq!(
                json_of(borrowed)[0]["text"],
                "key AKIA",
                "the payload is unchanged"
            );
            assert!(copy(std::ptr::null()).is_null());
            free(content);
        }
    }

    #[test]
    fn borrowed_freed_and_wild_values_are_refused_and_owned_items_still_freed() {
        let payload = HostValue::from_json(json!({"a": [], "o": {}}));
        // SAFETY: the host only compares the refused pointers with its owned set; it never
        // reads them. Owned values are freed once.
        unsafe {
            let borrowed_array = get(payload.as_ptr(), pi(b"a")).cast_mut();
            let borrowed_object = get(payload.as_ptr(), pi(b"o")).cast_mut();
            // A borrowed target: refused, and the owned item is freed (no leak).
            let item = new_int(1);
            assert_eq!(push(borrowed_array, item), PI_ERR_INVALID_ARG);
            assert!(!owned_values().contains(&(item as usize)), "item freed");
            let item = new_int(1);
            assert_eq!(set(borrowed_object, pi(b"k"), item), PI_ERR_INVALID_ARG);
            assert!(!owned_values().contains(&(item as usize)), "item freed");
            assert_eq!(json_of(payload.as_ptr()), json!({"a": [], "o": {}}));
            // A wild pointer as target or item.
            let wild = 0x10 as *mut PiValue;
            assert_eq!(push(wild, new_null()), PI_ERR_INVALID_ARG);
            let array = new_array();
            assert_eq!(push(array, wild), PI_ERR_INVALID_ARG);
            // A borrowed item is refused and left alone; NULL items too.
            assert_eq!(push(array, borrowed_object), PI_ERR_INVALID_ARG);
            assert_eq!(push(array, std::ptr::null_mut()), PI_ERR_INVALID_ARG);
            assert_eq!(push(std::ptr::null_mut(), new_null()), PI_ERR_INVALID_ARG);
            // Into itself: refused, and the array is not freed.
            assert_eq!(push(array, array), PI_ERR_INVALID_ARG);
            assert!(owned_values().contains(&(array as usize)));
            // An item given away already is no longer owned.
            let item = new_bool(false);
            assert_eq!(push(array, item), PI_OK);
            assert_eq!(push(array, item), PI_ERR_INVALID_ARG);
            // The wrong kind of target.
            let item = new_null();
            assert_eq!(set(array, pi(b"k"), item), PI_ERR_WRONG_TYPE);
            assert!(!owned_values().contains(&(item as usize)), "item freed");
            let object = new_object();
            assert_eq!(push(object, new_null()), PI_ERR_WRONG_TYPE);
            assert_eq!(set(object, pi(b"\xff"), new_null()), PI_ERR_UTF8);
            assert_eq!(json_of(object), json!({}));
            // A freed target (the item is made first, so it cannot reuse the address).
            let item = new_null();
            free(object);
            assert_eq!(push(object, item), PI_ERR_INVALID_ARG);
            assert!(!owned_values().contains(&(item as usize)), "item freed");
            assert_eq!(json_of(array), json!([false]));
            assert!(new_string(pi(b"\xc3")).is_null(), "not UTF-8");
            let null_long = PiStr {
                ptr: std::ptr::null(),
                len: 2,
            };
            assert!(new_string(null_long).is_null());
            free(array);
        }
    }

    #[test]
    fn json_quote_escapes_and_sizes_like_snprintf() {
        let quote = |text: &[u8], cap: usize| -> (usize, Vec<u8>) {
            let mut buf = vec![0xaa_u8; cap];
            // SAFETY: `buf` has `cap` writable bytes; `text` is alive for the call.
            let n = unsafe { json_quote(pi(text), buf.as_mut_ptr().cast(), cap) };
            (n, buf)
        };
        let text = "say \"hi\"\n\t\u{1b}é\\".as_bytes();
        let want = r#""say \"hi\"\n\t\u001bé\\""#.as_bytes();
        let (n, buf) = quote(text, 64);
        assert_eq!(n, want.len());
        assert_eq!(&buf[..n], want);
        assert_eq!(buf[n], 0, "NUL-terminated");
        // Too small by one (no room for the NUL): the length, nothing written.
        let (n, buf) = quote(text, want.len());
        assert_eq!(n, want.len());
        assert!(buf.iter().all(|&b| b == 0xaa));
        // cap 0 with NULL: the size only.
        // SAFETY: nothing is written with cap 0.
        let n = unsafe { json_quote(pi(b"x"), std::ptr::null_mut(), 0) };
        assert_eq!(n, 3);
        // SAFETY: a NULL buffer with a cap is refused before any write.
        let n = unsafe { json_quote(pi(b"x"), std::ptr::null_mut(), 8) };
        assert_eq!(n, 0);
        assert_eq!(quote(b"\xff", 8).0, 0, "not UTF-8");
        assert_eq!(quote(b"", 8).1[..3], *b"\"\"\0");
    }

    /// `replace_text` on `input`: the result's JSON and the count (`None` for NULL).
    fn replaced(
        input: serde_json::Value,
        pattern: &[u8],
        with: &[u8],
    ) -> (Option<serde_json::Value>, usize) {
        let v = HostValue::from_json(input);
        let mut n = usize::MAX;
        // SAFETY: `v` lives across the call; the strings are valid slices; `n` is writable.
        let out = unsafe { replace_text(v.as_ptr(), pi(pattern), pi(with), &mut n) };
        let got = json_at(out);
        // SAFETY: `out` is NULL or an owned value made by the call, freed once.
        unsafe { free(out) };
        (got, n)
    }

    #[test]
    fn replace_text_rewrites_text_blocks_and_keeps_the_others() {
        let content = json!([
            {"type": "text", "text": "id AKIAABCDEFGHIJKLMNOP and AKIA0123456789ABCDEF."},
            {"type": "image", "data": "AKIAABCDEFGHIJKLMNOP", "mimeType": "image/png"},
            {"type": "text", "text": "clean"},
            {"text": "AKIAABCDEFGHIJKLMNOPQ", "n": 1},
            "not a block",
        ]);
        let (got, n) = replaced(content, b"AKIA[0-9A-Z]{16}", b"[REDACTED]");
        assert_eq!(n, 3);
        assert_eq!(
            got,
            Some(json!([
                {"type": "text", "text": "id [REDACTED] and [REDACTED]."},
                {"type": "image", "data": "AKIAABCDEFGHIJKLMNOP", "mimeType": "image/png"},
                {"type": "text", "text": "clean"},
                {"text": "[REDACTED]Q", "n": 1},
                "not a block",
            ]))
        );
        // A string; capture groups in the replacement; `$$` is a dollar.
        let (got, n) = replaced(json!("a=1, b=22"), br"(\w)=(\d+)", b"$2$$${1}");
        assert_eq!((got, n), (Some(json!("1$a, 22$b")), 2));
        // Other values are copied; nothing matched is 0.
        assert_eq!(
            replaced(json!({"text": "x"}), b"x", b"y"),
            (Some(json!({"text": "x"})), 0)
        );
        assert_eq!(replaced(json!("abc"), b"z", b"y"), (Some(json!("abc")), 0));
    }

    #[test]
    fn replace_text_refuses_bad_input_with_null_and_zero() {
        assert_eq!(replaced(json!("abc"), b"[unclosed", b"x"), (None, 0));
        assert_eq!(replaced(json!("abc"), b"\xff", b"x"), (None, 0));
        assert_eq!(replaced(json!("abc"), b"a", b"\xff"), (None, 0));
        // SAFETY: NULL value and NULL count are part of the contract.
        let out =
            unsafe { replace_text(std::ptr::null(), pi(b"a"), pi(b"b"), std::ptr::null_mut()) };
        assert!(out.is_null());
    }
}
