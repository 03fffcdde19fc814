//! Tool argument validation as pi 1.6.0 does it: pi-ai's `validateToolArguments`, which runs
//! `@earendil-works/pi-schema`'s `compile(schema, {coerce: true}).parse(args)`.
//!
//! The arguments are coerced first, in pi-schema's three passes (`dist/coerce.js`):
//! 1. optional nulls: a `null` in an optional property whose schema rejects `null` is dropped;
//! 2. TypeBox's conversion rules, keyed on the first of `const`, `enum`, `anyOf`/`oneOf`,
//!    `allOf`, `type`: `"42"` becomes 42 for a number, `"3.5"` 3 for an integer, `"true"` true,
//!    a scalar a string, `null` `"null"` for a string, a single value a one-item array, and a
//!    union takes the first branch whose conversion the union accepts;
//! 3. Ajv-style primitive coercion by `type` (also type arrays), `null` to `""`/0/false.
//!
//! The coerced value is then checked, and when it fails every problem is listed in
//! pi-schema's words and order (`dist/explain.js`): `missing`, `expected string, got integer`,
//! `expected one of ["a","b"]`, `unknown field`, ... at a JSON Pointer that pi-ai prints dotted
//! (`edits.0.oldText`, `root` for the value itself). On success the coerced value is what the
//! tool and the `tool_call`/`tool_result` handlers get.
//!
//! Covered: `type` (names and arrays; `integer` is a whole number), `enum`, `const`,
//! `properties`, `required`, `additionalProperties` (false: `unknown field`; a schema: checked
//! and coerced), `patternProperties`, `propertyNames`, `min`/`maxProperties`, `items`,
//! `prefixItems` (and draft-7 `items` arrays), `min`/`maxItems`, `uniqueItems`, `contains`,
//! `minLength`/`maxLength` (code points), `pattern` (with the `regex` crate), number bounds and
//! `multipleOf`, `allOf`/`anyOf`/`oneOf` (pi-schema's choice of the branch to blame), `not`,
//! `if`/`then`/`else`, boolean schemas and local `$ref`s (`#`, `#/$defs/...`, unresolved ones
//! reject with `unresolved reference ...`). Not covered: `format` (pi-ai passes pi-schema's
//! format checks; a `format` is accepted here), `$ref`s to other documents or `$id`s/anchors,
//! `$dynamicRef`, `unevaluated*`, `dependentRequired`/`dependentSchemas`, and draft-7-only
//! behaviour (`$ref` siblings ignored).

use serde_json::{Map, Value};

/// One problem pi-schema reports: where (a JSON Pointer, `""` for the value itself) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The JSON Pointer of the value (`/edits/0/oldText`).
    pub path: String,
    /// pi-schema's message (`missing`, `expected string, got integer`).
    pub message: String,
}

/// pi-ai's `validateToolArguments`: `args` coerced and checked against `schema`; the coerced
/// arguments, or pi's `Validation failed for tool "<name>": ...` message listing every problem
/// and the arguments received.
pub fn validate_tool_arguments(tool: &str, schema: &Value, args: &Value) -> Result<Value, String> {
    parse(schema, args).map_err(|problems| validation_message(tool, &problems, args))
}

/// pi-ai's message for a call whose arguments failed: one `  - path: message` line a problem.
pub fn validation_message(tool: &str, problems: &[Problem], args: &Value) -> String {
    let list: Vec<String> = problems
        .iter()
        .map(|p| format!("  - {}: {}", dotted_path(&p.path), p.message))
        .collect();
    let received = serde_json::to_string_pretty(args).unwrap_or_default();
    format!(
        "Validation failed for tool \"{tool}\":\n{}\n\nReceived arguments:\n{received}",
        list.join("\n")
    )
}

/// pi-ai's `formatValidationPath`: `/edits/0/oldText` as `edits.0.oldText`, `""` as `root`.
pub fn dotted_path(pointer: &str) -> String {
    if pointer.is_empty() {
        return "root".to_owned();
    }
    pointer[1..]
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect::<Vec<_>>()
        .join(".")
}

/// pi-schema's `parse` with `coerce: true`: the coerced value when it is valid, else every
/// problem.
pub fn parse(schema: &Value, value: &Value) -> Result<Value, Vec<Problem>> {
    let v = Validator::new(schema);
    let coerced = v.coerce(value);
    let problems = v.errors(&coerced);
    if problems.is_empty() {
        Ok(coerced)
    } else {
        Err(problems)
    }
}

/// Whether `value` passes `schema` as it is (no coercion).
pub fn is_valid(schema: &Value, value: &Value) -> bool {
    Validator::new(schema).valid(schema, value)
}

/// A number bound: its keyword, whether a value fails it, and the operator of the message.
type BoundCheck = (&'static str, fn(f64, f64) -> bool, &'static str);

struct Validator<'s> {
    root: &'s Value,
    /// The (`$ref` target or array item schema, value) pairs being converted (pass 2), to stop
    /// a recursive schema converting the same value without end.
    entered: std::cell::RefCell<Vec<(*const Value, Value)>>,
}

fn is_schema_object(v: &Value) -> bool {
    v.is_object()
}

fn as_f64(v: &Value) -> Option<f64> {
    v.as_f64()
}

/// A finite JS number as a JSON number: whole numbers as integers (as `JSON.stringify` prints
/// them), others as floats.
fn number(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::from(n as i64)
    } else {
        serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number)
    }
}

/// `String(n)` for a finite JS number.
fn js_string(n: f64) -> String {
    if n == 0.0 {
        return "0".to_owned();
    }
    if n.fract() == 0.0 && n.abs() < 1e21 {
        return format!("{}", n as i128);
    }
    if n.abs() >= 1e21 || n.abs() < 1e-6 {
        let s = format!("{n:e}");
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
    }
    format!("{n}")
}

fn js_value_string(v: &Value) -> String {
    match v {
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.to_string(),
            (_, Some(u)) => u.to_string(),
            _ => js_string(n.as_f64().unwrap_or_default()),
        },
        other => other.to_string(),
    }
}

fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{FEFF}'
}

/// JavaScript's `+string` (`Number(string)`): `NaN` as `None`.
fn js_to_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            return Some(digits.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            }));
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    if !unsigned
        .chars()
        .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'))
        || !unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
    {
        return None;
    }
    t.parse::<f64>().ok()
}

/// TypeBox's bigint-like strings (`12n`, `12.5`, `12`), as a number within the safe range.
fn big_int_of_string(s: &str) -> Option<f64> {
    let body = s.strip_suffix('n').unwrap_or(s);
    let digits = body.strip_prefix('-').unwrap_or(body);
    let whole = digits.split('.').next().unwrap_or_default();
    let valid_whole = whole == "0"
        || (whole.starts_with(|c: char| c.is_ascii_digit() && c != '0')
            && whole.chars().all(|c| c.is_ascii_digit()));
    if !valid_whole {
        return None;
    }
    let fraction_ok = match digits.split_once('.') {
        None => true,
        Some((_, f)) => !s.ends_with('n') && !f.is_empty() && f.chars().all(|c| c.is_ascii_digit()),
    };
    if !fraction_ok {
        return None;
    }
    let n: f64 = whole.parse().ok()?;
    let n = if body.starts_with('-') { -n } else { n };
    (n.abs() <= 9_007_199_254_740_991.0).then_some(n)
}

fn try_string(v: &Value) -> Option<Value> {
    match v {
        Value::Bool(b) => Some(Value::String(b.to_string())),
        Value::Number(_) => Some(Value::String(js_value_string(v))),
        Value::Null => Some(Value::String("null".to_owned())),
        Value::String(_) => Some(v.clone()),
        _ => None,
    }
}

fn try_number(v: &Value) -> Option<f64> {
    match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::Number(n) => n.as_f64(),
        Value::Null => Some(0.0),
        Value::String(s) => {
            if let Some(n) = js_to_number(s).filter(|n| n.is_finite()) {
                return Some(n);
            }
            match s.to_lowercase().as_str() {
                "false" => Some(0.0),
                "true" => Some(1.0),
                _ => big_int_of_string(s),
            }
        }
        _ => None,
    }
}

fn try_boolean(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => match n.as_f64() {
            Some(0.0) => Some(false),
            Some(1.0) => Some(true),
            _ => None,
        },
        Value::Null => Some(false),
        Value::String(s) => {
            let lower = s.to_lowercase();
            if lower == "false" || s == "0" {
                Some(false)
            } else if lower == "true" || s == "1" {
                Some(true)
            } else {
                None
            }
        }
        _ => None,
    }
}

fn try_null(v: &Value) -> Option<Value> {
    let nulls = match v {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Null => true,
        Value::String(s) => {
            let lower = s.to_lowercase();
            lower == "undefined" || lower == "null" || s.is_empty() || s == "0"
        }
        _ => false,
    };
    nulls.then_some(Value::Null)
}

/// pi-schema's `convertLiteral`: a `const`/enum value taken from a value that converts to it.
fn convert_literal(literal: &Value, v: &Value) -> Value {
    if strict_eq(literal, v) {
        return v.clone();
    }
    let converted = match literal {
        Value::String(_) => try_string(v),
        Value::Number(_) => try_number(v).map(number),
        Value::Bool(_) => try_boolean(v).map(Value::Bool),
        _ => None,
    };
    match converted {
        Some(c) if strict_eq(&c, literal) => c,
        _ => v.clone(),
    }
}

/// JavaScript's `===` for JSON values (objects and arrays compared by content, standing for
/// the identity of pi-schema's copy-on-write values).
fn strict_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| strict_eq(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, a)| y.get(k).is_some_and(|b| strict_eq(a, b)))
        }
        _ => a == b,
    }
}

/// pi-schema's `deepEqual` (`enum`, `const`, `uniqueItems`).
fn deep_equal(a: &Value, b: &Value) -> bool {
    strict_eq(a, b)
}

fn is_integer(v: &Value) -> bool {
    as_f64(v).is_some_and(|n| n.is_finite() && n.fract() == 0.0)
}

fn type_check(name: &Value, v: &Value) -> bool {
    match name.as_str() {
        Some("string") => v.is_string(),
        Some("number") => v.is_number(),
        Some("integer") => is_integer(v),
        Some("boolean") => v.is_boolean(),
        Some("null") => v.is_null(),
        Some("array") => v.is_array(),
        Some("object") => v.is_object(),
        _ => false,
    }
}

/// pi-schema's `typeName`.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Array(_) => "array",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
    }
}

fn types_of(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn matches_type(v: &Value, t: &str) -> bool {
    type_check(&Value::String(t.to_owned()), v)
}

/// Ajv-style coercion of a primitive to `t` (pass 3); the value itself when it does not apply.
fn coerce_primitive(v: &Value, t: &str) -> Value {
    match t {
        "number" | "integer" => match v {
            Value::Null => Value::from(0),
            Value::String(s) if !s.trim_matches(is_js_space).is_empty() => match js_to_number(s) {
                Some(n) if n.is_finite() && (t == "number" || n.fract() == 0.0) => number(n),
                _ => v.clone(),
            },
            Value::Bool(b) => Value::from(i64::from(*b)),
            _ => v.clone(),
        },
        "boolean" => match v {
            Value::Null => Value::Bool(false),
            Value::String(s) if s == "true" => Value::Bool(true),
            Value::String(s) if s == "false" => Value::Bool(false),
            Value::Number(n) if n.as_f64() == Some(1.0) => Value::Bool(true),
            Value::Number(n) if n.as_f64() == Some(0.0) => Value::Bool(false),
            _ => v.clone(),
        },
        "string" => match v {
            Value::Null => Value::String(String::new()),
            Value::Number(_) | Value::Bool(_) => try_string(v).unwrap_or_else(|| v.clone()),
            _ => v.clone(),
        },
        "null" => match v {
            Value::String(s) if s.is_empty() => Value::Null,
            Value::Number(n) if n.as_f64() == Some(0.0) => Value::Null,
            Value::Bool(false) => Value::Null,
            _ => v.clone(),
        },
        _ => v.clone(),
    }
}

/// The schema of an array's item at `index` (`items` arrays, `prefixItems`, then `items`).
fn item_schema_at(schema: &Value, index: usize) -> Option<&Value> {
    if let Some(items) = schema["items"].as_array() {
        return items.get(index);
    }
    if let Some(prefix) = schema["prefixItems"].as_array()
        && index < prefix.len()
    {
        return prefix.get(index);
    }
    schema.get("items")
}

/// The compiled regular expression of a `pattern`; `None` when the `regex` crate cannot read
/// it (the keyword is then not checked).
fn pattern(source: &str) -> Option<regex::Regex> {
    regex::Regex::new(source).ok()
}

fn pointer(path: &str, key: &str) -> String {
    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1"))
}

/// pi-schema's `listValues`: JSON, at most 20 values, then how many more.
fn list_values(values: &[Value]) -> String {
    const LISTED: usize = 20;
    let json = |vs: &[Value]| Value::Array(vs.to_vec()).to_string();
    if values.len() <= LISTED {
        return json(values);
    }
    let listed = json(&values[..LISTED]);
    format!(
        "{}, ... and {} more]",
        &listed[..listed.len() - 1],
        values.len() - LISTED
    )
}

fn bound(v: &Value) -> Option<f64> {
    v.as_f64()
}

fn is_multiple(v: f64, d: f64) -> bool {
    let q = v / d;
    if q.is_finite() && q.fract() == 0.0 {
        return true;
    }
    if !q.is_finite() {
        return v % d == 0.0;
    }
    // pi-schema compares the decimal digits exactly; a tolerance on the quotient is close.
    let rounded = q.round();
    (q - rounded).abs() < 1e-9 * rounded.abs().max(1.0)
}

impl<'s> Validator<'s> {
    fn new(root: &'s Value) -> Self {
        Validator {
            root,
            entered: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// A local `$ref`'s target (`#`, `#/$defs/Name`); `None` when it names nothing here.
    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        let fragment = reference.strip_prefix('#')?;
        if fragment.is_empty() {
            return Some(self.root);
        }
        if !fragment.starts_with('/') {
            return None;
        }
        let decoded = fragment.replace("%25", "%").replace("%22", "\"");
        self.root.pointer(&decoded)
    }

    // -----------------------------------------------------------------------------------------
    // Coercion
    // -----------------------------------------------------------------------------------------

    fn coerce(&self, value: &Value) -> Value {
        let without_nulls = self.drop_optional_nulls(value, self.root);
        let converted = self.convert(self.root, &without_nulls);
        self.coerce_types(&converted, self.root)
    }

    /// Pass 1: a `null` in an optional property whose schema rejects it is dropped.
    fn drop_optional_nulls(&self, value: &Value, schema: &Value) -> Value {
        if !is_schema_object(schema) {
            return value.clone();
        }
        if let Value::Array(items) = value {
            return Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema_at(schema, i) {
                        Some(s) => self.drop_optional_nulls(item, s),
                        None => item.clone(),
                    })
                    .collect(),
            );
        }
        let Value::Object(object) = value else {
            return value.clone();
        };
        let empty = Map::new();
        let properties = schema["properties"].as_object().unwrap_or(&empty);
        let patterns = self.patterns(schema);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        if patterns.is_empty() && additional.is_none() && !schema["properties"].is_object() {
            return value.clone();
        }
        let required: Vec<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut out = object.clone();
        for (key, property) in properties {
            let Some(v) = object.get(key) else { continue };
            let is_ref = property.get("$ref").is_some_and(Value::is_string);
            if v.is_null()
                && !required.contains(&key.as_str())
                && !is_ref
                && !self.valid(property, &Value::Null)
            {
                out.shift_remove(key);
                continue;
            }
            out.insert(key.clone(), self.drop_optional_nulls(v, property));
        }
        if !patterns.is_empty() || additional.is_some() {
            let keys: Vec<String> = object.keys().cloned().collect();
            for key in keys {
                let mut matched = properties.contains_key(&key);
                for (re, item) in &patterns {
                    if !re.is_match(&key) {
                        continue;
                    }
                    matched = true;
                    if let Some(current) = out.get(&key).cloned() {
                        out.insert(key.clone(), self.drop_optional_nulls(&current, item));
                    }
                }
                if !matched && let Some(additional) = additional {
                    out.insert(
                        key.clone(),
                        self.drop_optional_nulls(&object[&key], additional),
                    );
                }
            }
        }
        Value::Object(out)
    }

    fn patterns(&self, schema: &'s Value) -> Vec<(regex::Regex, &'s Value)> {
        schema["patternProperties"]
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(p, s)| pattern(p).map(|re| (re, s)))
            .collect()
    }

    /// `node` converted for `value` at a re-entry point: unchanged when that pair is already
    /// being converted.
    fn reenter(&self, node: &'s Value, value: &Value) -> Value {
        let key = node as *const Value;
        if self
            .entered
            .borrow()
            .iter()
            .any(|(n, v)| *n == key && strict_eq(v, value))
        {
            return value.clone();
        }
        self.entered.borrow_mut().push((key, value.clone()));
        let result = self.convert(node, value);
        self.entered.borrow_mut().pop();
        result
    }

    /// Pass 2: TypeBox's conversion rules.
    fn convert(&self, node: &'s Value, value: &Value) -> Value {
        if !is_schema_object(node) {
            return value.clone();
        }
        if let Some(reference) = node["$ref"].as_str() {
            return match self.resolve(reference) {
                Some(target) if target.is_object() => self.reenter(target, value),
                _ => value.clone(),
            };
        }
        if let Some(literal) = node.get("const") {
            return convert_literal(literal, value);
        }
        if let Some(values) = node["enum"].as_array() {
            if values.iter().any(|m| strict_eq(m, value)) {
                return value.clone();
            }
            for member in values {
                let candidate = convert_literal(member, value);
                if !strict_eq(&candidate, value) && self.valid(node, &candidate) {
                    return candidate;
                }
            }
            return value.clone();
        }
        if let Some(branches) = node["anyOf"].as_array() {
            return self.convert_union(node, branches, value);
        }
        if let Some(branches) = node["oneOf"].as_array() {
            return self.convert_union(node, branches, value);
        }
        if let Some(members) = node["allOf"].as_array() {
            let mut next = value.clone();
            for member in members {
                next = self.convert(member, &next);
            }
            return self.convert_members(node, &next);
        }
        match node.get("type") {
            Some(Value::String(t)) => match t.as_str() {
                "string" => try_string(value).unwrap_or_else(|| value.clone()),
                "number" => try_number(value).map_or_else(|| value.clone(), number),
                "integer" => try_number(value).map_or_else(|| value.clone(), |n| number(n.trunc())),
                "boolean" => try_boolean(value).map_or_else(|| value.clone(), Value::Bool),
                "null" => try_null(value).unwrap_or_else(|| value.clone()),
                "array" => self.convert_array(node, value),
                "object" => self.convert_object(node, value),
                _ => value.clone(),
            },
            None => {
                if node.get("properties").is_some() || node.get("patternProperties").is_some() {
                    self.convert_object(node, value)
                } else if node.get("items").is_some() || node.get("prefixItems").is_some() {
                    self.convert_array(node, value)
                } else {
                    value.clone()
                }
            }
            _ => value.clone(),
        }
    }

    fn convert_union(&self, node: &'s Value, branches: &'s [Value], value: &Value) -> Value {
        if branches.iter().any(|b| self.valid(b, value)) {
            return self.convert_members(node, value);
        }
        for branch in branches {
            let candidate = self.convert_members(node, &self.convert(branch, value));
            if self.valid(node, &candidate) {
                return candidate;
            }
        }
        self.convert_members(node, value)
    }

    fn convert_members(&self, node: &'s Value, value: &Value) -> Value {
        let declares = node.get("properties").is_some()
            || node.get("patternProperties").is_some()
            || node.get("additionalProperties").is_some();
        if declares {
            self.convert_object(node, value)
        } else {
            value.clone()
        }
    }

    fn convert_array(&self, node: &'s Value, value: &Value) -> Value {
        let prefix = node["items"]
            .as_array()
            .or_else(|| node["prefixItems"].as_array());
        if let Some(prefix) = prefix {
            let Value::Array(items) = value else {
                return value.clone();
            };
            let rest = if node["items"].is_array() {
                None
            } else {
                node.get("items")
            };
            return Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match prefix.get(i).or(rest) {
                        Some(s) => self.convert(s, item),
                        None => item.clone(),
                    })
                    .collect(),
            );
        }
        if let Value::Array(items) = value {
            return match node.get("items") {
                None => value.clone(),
                Some(s) => Value::Array(items.iter().map(|i| self.convert(s, i)).collect()),
            };
        }
        match node.get("items") {
            Some(item) if item.is_object() => Value::Array(vec![self.reenter(item, value)]),
            _ => Value::Array(vec![value.clone()]),
        }
    }

    fn convert_object(&self, node: &'s Value, value: &Value) -> Value {
        let Value::Object(object) = value else {
            return value.clone();
        };
        let empty = Map::new();
        let properties = node["properties"].as_object().unwrap_or(&empty);
        let patterns = self.patterns(node);
        let additional = node.get("additionalProperties").filter(|a| a.is_object());
        let mut out = object.clone();
        for (key, v) in object {
            let mut next = v.clone();
            let mut matched = false;
            if let Some(property) = properties.get(key) {
                matched = true;
                next = self.convert(property, &next);
            }
            for (re, schema) in &patterns {
                if re.is_match(key) {
                    matched = true;
                    next = self.convert(schema, &next);
                }
            }
            if !matched && let Some(additional) = additional {
                next = self.convert(additional, &next);
            }
            out.insert(key.clone(), next);
        }
        Value::Object(out)
    }

    /// Pass 3: primitive coercion by `type`.
    fn coerce_types(&self, value: &Value, schema: &'s Value) -> Value {
        if !is_schema_object(schema) {
            return value.clone();
        }
        let mut next = value.clone();
        for member in schema["allOf"].as_array().into_iter().flatten() {
            next = self.coerce_types(&next, member);
        }
        if let Some(branches) = schema["anyOf"].as_array() {
            next = self.coerce_union(&next, branches);
        }
        if let Some(branches) = schema["oneOf"].as_array() {
            next = self.coerce_union(&next, branches);
        }
        let types = types_of(schema);
        let matches_member = types.len() > 1 && types.iter().any(|t| matches_type(&next, t));
        if !types.is_empty() && !matches_member {
            for t in &types {
                let candidate = coerce_primitive(&next, t);
                if !strict_eq(&candidate, &next) {
                    next = candidate;
                    break;
                }
            }
        }
        if types.contains(&"object")
            && let Value::Object(object) = &next
        {
            next = self.coerce_properties(object, schema);
        }
        if types.contains(&"array")
            && let Value::Array(items) = &next
        {
            next = Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| match item_schema_at(schema, i) {
                        Some(s) if s.is_object() => self.coerce_types(item, s),
                        _ => item.clone(),
                    })
                    .collect(),
            );
        }
        next
    }

    fn coerce_union(&self, value: &Value, branches: &'s [Value]) -> Value {
        if branches.iter().any(|b| self.valid(b, value)) {
            return value.clone();
        }
        for branch in branches {
            let coerced = self.coerce_types(value, branch);
            if self.valid(branch, &coerced) {
                return coerced;
            }
        }
        value.clone()
    }

    fn coerce_properties(&self, object: &Map<String, Value>, schema: &'s Value) -> Value {
        let empty = Map::new();
        let properties = schema["properties"].as_object().unwrap_or(&empty);
        let patterns = self.patterns(schema);
        let additional = schema.get("additionalProperties").filter(|a| a.is_object());
        let mut out = object.clone();
        for (key, property) in properties {
            if let Some(v) = object.get(key) {
                out.insert(key.clone(), self.coerce_types(v, property));
            }
        }
        for key in object.keys() {
            let mut matched = properties.contains_key(key);
            for (re, item) in &patterns {
                if !re.is_match(key) {
                    continue;
                }
                matched = true;
                let current = out[key].clone();
                out.insert(key.clone(), self.coerce_types(&current, item));
            }
            if !matched && let Some(additional) = additional {
                out.insert(key.clone(), self.coerce_types(&object[key], additional));
            }
        }
        Value::Object(out)
    }

    // -----------------------------------------------------------------------------------------
    // Checking and explaining
    // -----------------------------------------------------------------------------------------

    /// Whether `v` passes `node`.
    fn valid(&self, node: &'s Value, v: &Value) -> bool {
        let mut out = Vec::new();
        self.explain(node, v, "", &mut out);
        out.is_empty()
    }

    /// Every problem of `value` against the root schema, in pi-schema's order.
    fn errors(&self, value: &Value) -> Vec<Problem> {
        let mut out = Vec::new();
        self.explain(self.root, value, "", &mut out);
        out
    }

    fn walk(&self, node: &'s Value, v: &Value, path: &str, out: &mut Vec<Problem>) {
        if !self.valid(node, v) {
            self.explain(node, v, path, out);
        }
    }

    fn explain(&self, node: &'s Value, v: &Value, path: &str, out: &mut Vec<Problem>) {
        let push = |out: &mut Vec<Problem>, at: &str, message: String| {
            out.push(Problem {
                path: at.to_owned(),
                message,
            });
        };
        match node {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                push(out, path, "no value is allowed here".to_owned());
                return;
            }
            Value::Object(_) => {}
            _ => return,
        }
        if let Some(t) = node.get("type") {
            let types: Vec<&Value> = match t {
                Value::Array(ts) => ts.iter().collect(),
                one => vec![one],
            };
            if !types.iter().any(|t| type_check(t, v)) {
                let names: Vec<String> = types
                    .iter()
                    .map(|t| t.as_str().map_or_else(|| t.to_string(), str::to_owned))
                    .collect();
                push(
                    out,
                    path,
                    format!("expected {}, got {}", names.join(" or "), type_name(v)),
                );
                return;
            }
        }
        if let Some(values) = node["enum"].as_array()
            && !values.iter().any(|m| deep_equal(m, v))
        {
            push(
                out,
                path,
                format!("expected one of {}", list_values(values)),
            );
        }
        if let Some(literal) = node.get("const")
            && !deep_equal(literal, v)
        {
            push(out, path, format!("expected {literal}"));
        }
        if let Value::String(s) = v {
            let n = s.chars().count() as f64;
            if let Some(min) = bound(&node["minLength"])
                && n < min
            {
                push(
                    out,
                    path,
                    format!("expected at least {} characters", js_string(min)),
                );
            }
            if let Some(max) = bound(&node["maxLength"])
                && n > max
            {
                push(
                    out,
                    path,
                    format!("expected at most {} characters", js_string(max)),
                );
            }
            if let Some(source) = node["pattern"].as_str()
                && pattern(source).is_some_and(|re| !re.is_match(s))
            {
                push(out, path, format!("expected to match {source}"));
            }
        }
        if let Some(x) = v.as_f64() {
            let checks: [BoundCheck; 4] = [
                ("minimum", |x, b| x < b, ">="),
                ("maximum", |x, b| x > b, "<="),
                ("exclusiveMinimum", |x, b| x <= b, ">"),
                ("exclusiveMaximum", |x, b| x >= b, "<"),
            ];
            for (keyword, fails, op) in checks {
                if let Some(b) = bound(&node[keyword])
                    && fails(x, b)
                {
                    push(out, path, format!("expected {op} {}", js_string(b)));
                }
            }
            if let Some(d) = bound(&node["multipleOf"])
                && !is_multiple(x, d)
            {
                push(
                    out,
                    path,
                    format!("expected a multiple of {}", js_string(d)),
                );
            }
        }
        if let Value::Object(object) = v {
            self.explain_object(node, object, path, out);
        }
        if let Value::Array(items) = v {
            self.explain_array(node, items, path, out);
        }
        for member in node["allOf"].as_array().into_iter().flatten() {
            self.walk(member, v, path, out);
        }
        if let Some(branches) = node["anyOf"].as_array() {
            self.explain_union(branches, v, path, out, false);
        }
        if let Some(branches) = node["oneOf"].as_array() {
            self.explain_union(branches, v, path, out, true);
        }
        if let Some(not) = node.get("not")
            && self.valid(not, v)
        {
            push(out, path, "must not match the schema in not".to_owned());
        }
        if let Some(condition) = node.get("if") {
            let branch = if self.valid(condition, v) {
                node.get("then")
            } else {
                node.get("else")
            };
            if let Some(branch) = branch {
                self.walk(branch, v, path, out);
            }
        }
        if let Some(reference) = node["$ref"].as_str() {
            match self.resolve(reference) {
                Some(target) => self.walk(target, v, path, out),
                None => push(out, path, format!("unresolved reference {reference}")),
            }
        }
    }

    fn explain_object(
        &self,
        node: &'s Value,
        v: &Map<String, Value>,
        path: &str,
        out: &mut Vec<Problem>,
    ) {
        let empty = Map::new();
        let properties = node["properties"].as_object().unwrap_or(&empty);
        for key in node["required"].as_array().into_iter().flatten() {
            if let Some(key) = key.as_str()
                && !v.contains_key(key)
            {
                out.push(Problem {
                    path: pointer(path, key),
                    message: "missing".to_owned(),
                });
            }
        }
        for (key, property) in properties {
            if let Some(value) = v.get(key) {
                self.walk(property, value, &pointer(path, key), out);
            }
        }
        let patterns = self.patterns(node);
        for (key, value) in v {
            let mut matched = properties.contains_key(key);
            for (re, schema) in &patterns {
                if re.is_match(key) {
                    matched = true;
                    self.walk(schema, value, &pointer(path, key), out);
                }
            }
            if !matched && let Some(additional) = node.get("additionalProperties") {
                if additional == &Value::Bool(false) {
                    out.push(Problem {
                        path: pointer(path, key),
                        message: "unknown field".to_owned(),
                    });
                } else {
                    self.walk(additional, value, &pointer(path, key), out);
                }
            }
            if let Some(names) = node.get("propertyNames")
                && !self.valid(names, &Value::String(key.clone()))
            {
                out.push(Problem {
                    path: pointer(path, key),
                    message: "invalid property name".to_owned(),
                });
            }
        }
        let count = v.len() as f64;
        if let Some(min) = bound(&node["minProperties"])
            && count < min
        {
            out.push(Problem {
                path: path.to_owned(),
                message: format!("expected at least {} properties", js_string(min)),
            });
        }
        if let Some(max) = bound(&node["maxProperties"])
            && count > max
        {
            out.push(Problem {
                path: path.to_owned(),
                message: format!("expected at most {} properties", js_string(max)),
            });
        }
    }

    fn explain_array(&self, node: &'s Value, v: &[Value], path: &str, out: &mut Vec<Problem>) {
        let (prefix, rest): (&[Value], Option<&Value>) = match node["items"].as_array() {
            Some(items) => (items, node.get("additionalItems")),
            None => (
                node["prefixItems"].as_array().map_or(&[], Vec::as_slice),
                node.get("items"),
            ),
        };
        for (i, item) in v.iter().enumerate() {
            if let Some(schema) = prefix.get(i).or(rest) {
                self.walk(schema, item, &format!("{path}/{i}"), out);
            }
        }
        let len = v.len() as f64;
        let mut push = |message: String| {
            out.push(Problem {
                path: path.to_owned(),
                message,
            });
        };
        if let Some(min) = bound(&node["minItems"])
            && len < min
        {
            push(format!("expected at least {} items", js_string(min)));
        }
        if let Some(max) = bound(&node["maxItems"])
            && len > max
        {
            push(format!("expected at most {} items", js_string(max)));
        }
        if node["uniqueItems"] == Value::Bool(true)
            && v.iter()
                .enumerate()
                .any(|(i, a)| v[..i].iter().any(|b| deep_equal(a, b)))
        {
            push("expected unique items".to_owned());
        }
        if let Some(contains) = node.get("contains") {
            let min = bound(&node["minContains"]).unwrap_or(1.0);
            let max = bound(&node["maxContains"]).unwrap_or(f64::INFINITY);
            let matching = v.iter().filter(|item| self.valid(contains, item)).count() as f64;
            if matching < min || matching > max {
                let item = |n: f64| if n == 1.0 { "item" } else { "items" };
                push(if max == f64::INFINITY {
                    format!(
                        "expected at least {} matching {}",
                        js_string(min),
                        item(min)
                    )
                } else if min == 0.0 {
                    format!("expected at most {} matching {}", js_string(max), item(max))
                } else {
                    format!(
                        "expected between {} and {} matching items",
                        js_string(min),
                        js_string(max)
                    )
                });
            }
        }
    }

    /// A branch through its `$ref`, for the choice of the branch to blame.
    fn resolved(&self, branch: &'s Value) -> &'s Value {
        match branch["$ref"].as_str().and_then(|r| self.resolve(r)) {
            Some(target) => target,
            None => branch,
        }
    }

    fn explain_union(
        &self,
        branches: &'s [Value],
        v: &Value,
        path: &str,
        out: &mut Vec<Problem>,
        exactly_one: bool,
    ) {
        let matches = branches.iter().filter(|b| self.valid(b, v)).count();
        if matches == 1 || (!exactly_one && matches > 0) {
            return;
        }
        if matches > 1 {
            out.push(Problem {
                path: path.to_owned(),
                message: "matches more than one alternative".to_owned(),
            });
            return;
        }
        // A tagged union reports the branch its tag selects.
        if let Some((key, values)) = self.tag_of(branches)
            && let Value::Object(object) = v
        {
            match object
                .get(&key)
                .and_then(|tag| values.iter().position(|t| strict_eq(t, tag)))
            {
                None => out.push(Problem {
                    path: pointer(path, &key),
                    message: format!("expected one of {}", list_values(&values)),
                }),
                Some(i) => self.walk(&branches[i], v, path, out),
            }
            return;
        }
        // Else the branch declaring most of the object's properties, then the one whose first
        // error is deepest.
        let mut best: Option<(Vec<Problem>, usize)> = None;
        for branch in branches {
            let mut errors = Vec::new();
            self.walk(branch, v, path, &mut errors);
            if errors.is_empty() {
                continue;
            }
            let declared = match v {
                Value::Object(object) => {
                    let node = self.resolved(branch);
                    object
                        .keys()
                        .filter(|k| node["properties"].get(k.as_str()).is_some())
                        .count()
                }
                _ => 0,
            };
            let better = match &best {
                None => true,
                Some((e, d)) => {
                    declared > *d
                        || (declared == *d
                            && errors[0].path.encode_utf16().count()
                                > e[0].path.encode_utf16().count())
                }
            };
            if better {
                best = Some((errors, declared));
            }
        }
        match best {
            Some((errors, _)) => out.extend(errors),
            None => out.push(Problem {
                path: path.to_owned(),
                message: "matches no alternative".to_owned(),
            }),
        }
    }

    /// A property every branch fixes to a distinct primitive `const`: the union's tag.
    fn tag_of(&self, branches: &'s [Value]) -> Option<(String, Vec<Value>)> {
        let resolved: Vec<&Value> = branches.iter().map(|b| self.resolved(b)).collect();
        let first = resolved.first()?.get("properties")?.as_object()?;
        for key in first.keys() {
            let values: Option<Vec<Value>> = resolved
                .iter()
                .map(|s| {
                    s["properties"][key.as_str()]
                        .get("const")
                        .filter(|c| !c.is_object() && !c.is_array())
                        .cloned()
                })
                .collect();
            if let Some(values) = values {
                let distinct = values
                    .iter()
                    .enumerate()
                    .all(|(i, a)| !values[..i].iter().any(|b| strict_eq(a, b)));
                if distinct {
                    return Some((key.clone(), values));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(schema: &Value, value: &Value) -> Vec<String> {
        match parse(schema, value) {
            Ok(v) => panic!("valid: {v}"),
            Err(ps) => ps
                .iter()
                .map(|p| format!("{}: {}", dotted_path(&p.path), p.message))
                .collect(),
        }
    }

    #[test]
    fn coerces_as_pi_schema_does() {
        let schema = json!({"type": "object", "required": ["path"], "properties": {
            "path": {"type": "string"}, "limit": {"type": "number"}, "n": {"type": "integer"},
            "flag": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}}});
        let out = parse(
            &schema,
            &json!({"path": 12, "limit": "1.5", "n": "3.7", "flag": "TRUE", "tags": 5, "x": null}),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"path": "12", "limit": 1.5, "n": 3, "flag": true, "tags": ["5"], "x": null})
        );
        // An optional null is dropped; a required one converted.
        let out = parse(&schema, &json!({"path": null, "limit": null})).unwrap();
        assert_eq!(out, json!({"path": "null"}));
    }

    #[test]
    fn lists_every_problem_in_its_words() {
        let schema = json!({"type": "object", "required": ["path", "edits"], "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "required": ["oldText"],
                "properties": {"oldText": {"type": "string"}}}},
            "mode": {"enum": ["a", "b"]}},
            "additionalProperties": false});
        assert_eq!(
            problems(
                &schema,
                &json!({"edits": ["x", {"oldText": []}], "mode": "c", "z": 1})
            ),
            [
                "path: missing",
                "edits.0: expected object, got string",
                "edits.1.oldText: expected string, got array",
                "mode: expected one of [\"a\",\"b\"]",
                "z: unknown field"
            ]
        );
        assert_eq!(
            problems(&schema, &json!("x")),
            ["root: expected object, got string"]
        );
    }
}
