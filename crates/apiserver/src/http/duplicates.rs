//! Duplicate fields in a JSON request body (`{"data": {...}, "data": {...}}`): the real
//! server's decoder keeps the last one and, under `fieldValidation`, reports each as
//! `duplicate field "<path>"` (`Strict`: a 400; `Warn`: a `Warning` header), as it reports
//! unknown fields. `serde_json` keeps the last one silently; this parse does the same and
//! lists where it happened, with paths as upstream prints them (`metadata.labels.app`,
//! `spec.containers[0].name`).

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::storage::Findings;

/// Parses `body` as JSON: the value (the last of each duplicate field, as `serde_json`) and
/// the paths of the duplicate fields, in the order they were met.
pub(crate) fn parse(body: &[u8]) -> serde_json::Result<(Value, Vec<String>)> {
    let mut found = Found::default();
    let value = parse_into(body, &mut found)?;
    Ok((value, found.dups.into_iter().map(|(_, p)| p).collect()))
}

/// The strict-decoding findings of an object body with repeated fields: each repetition and
/// where every field path first occurs, in document order (a second, slower parse, done only
/// for a body [`parse`] found repetitions in).
pub(crate) fn findings(body: &[u8]) -> Findings {
    let mut found = Found {
        positions: Some(HashMap::new()),
        ..Found::default()
    };
    let _ = parse_into(body, &mut found);
    Findings {
        patch: Vec::new(),
        duplicates: found.dups,
        positions: found.positions.unwrap_or_default(),
    }
}

/// The errors of a JSON patch document's operations as upstream's strict decoder of
/// `[]{op, path, from, value}` words them: `json patch unknown field "[0].foo"`,
/// `json patch duplicate field "[1].path"`, in document order. Empty for a body that is not
/// a JSON array (the patch itself answers that).
pub(crate) fn json_patch_errors(body: &[u8]) -> Vec<String> {
    let mut found = Found {
        positions: Some(HashMap::new()),
        ..Found::default()
    };
    let Ok(Value::Array(ops)) = parse_into(body, &mut found) else {
        return Vec::new();
    };
    let positions = found.positions.unwrap_or_default();
    let mut errs: Vec<(usize, String)> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let Some(op) = op.as_object() else { continue };
        for key in op.keys() {
            if !matches!(key.as_str(), "op" | "path" | "from" | "value") {
                let path = format!("[{i}].{key}");
                let at = positions.get(&path).copied().unwrap_or(usize::MAX);
                errs.push((at, format!("json patch unknown field {path:?}")));
            }
        }
    }
    // Only the operations' own fields are checked: a repetition inside a `value` is the
    // patched object's.
    for (at, path) in found.dups {
        let op_field = path
            .strip_prefix('[')
            .and_then(|rest| rest.split_once("]."))
            .is_some_and(|(n, field)| n.parse::<usize>().is_ok() && !field.contains(['.', '[']));
        if op_field {
            errs.push((at, format!("json patch duplicate field {path:?}")));
        }
    }
    errs.sort_by_key(|(at, _)| *at);
    errs.into_iter().map(|(_, e)| e).collect()
}

/// The repeated mapping keys of an apply body (YAML, or JSON, which is YAML too), as the YAML
/// decoder upstream's strict apply check uses reports them: `line 9: key "foo" already set in
/// map`, one per repetition, by line, 1-based from the body's start.
///
/// A scan, not a parser: block mappings are told apart by indentation (with `- ` items each
/// opening a mapping), block scalars (`|`, `>`) are skipped, and a JSON body (one starting
/// with `{`) is tokenized; flow mappings inside block YAML are not looked into.
pub(crate) fn yaml_repeated_keys(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(body);
    let found = if text.trim_start().starts_with('{') {
        json_repeated_keys(&text)
    } else {
        block_repeated_keys(&text)
    };
    found
        .into_iter()
        .map(|(line, key)| format!("line {line}: key {key:?} already set in map"))
        .collect()
}

/// `(line, key)` of each repeated key of a JSON text.
fn json_repeated_keys(text: &str) -> Vec<(usize, String)> {
    enum Frame {
        Object {
            keys: std::collections::HashSet<String>,
            expect_key: bool,
        },
        Array,
    }
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'{' => stack.push(Frame::Object {
                keys: Default::default(),
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = true;
                }
            }
            b':' => {
                if let Some(Frame::Object { expect_key, .. }) = stack.last_mut() {
                    *expect_key = false;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    } else if bytes[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                let raw = &text[start..(i + 1).min(text.len())];
                if let Some(Frame::Object {
                    keys,
                    expect_key: true,
                }) = stack.last_mut()
                {
                    let key = serde_json::from_str::<String>(raw).unwrap_or_default();
                    if !keys.insert(key.clone()) {
                        out.push((line, key));
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `(line, key)` of each repeated key of block YAML.
fn block_repeated_keys(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    // The open mappings: the column of their keys and the keys seen.
    let mut stack: Vec<(usize, std::collections::HashSet<String>)> = Vec::new();
    // Lines indented deeper than this belong to a block scalar.
    let mut scalar_above: Option<usize> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end();
        let indent = line.len() - line.trim_start().len();
        let content = line.trim_start();
        if let Some(limit) = scalar_above {
            if content.is_empty() || indent > limit {
                continue;
            }
            scalar_above = None;
        }
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if content.starts_with("---") || content.starts_with("...") {
            stack.clear();
            continue;
        }
        let mut col = indent;
        let mut rest = content;
        // Each `- ` opens an item; its mapping's keys start where its content does.
        let mut item = false;
        while rest == "-" || rest.starts_with("- ") {
            while stack.last().is_some_and(|(c, _)| *c > col) {
                stack.pop();
            }
            let after = rest[1..].trim_start();
            col += rest.len() - after.len();
            rest = after;
            item = true;
        }
        let Some((key, value)) = split_key(rest) else {
            continue;
        };
        while stack.last().is_some_and(|(c, _)| *c > col) {
            stack.pop();
        }
        match stack.last_mut() {
            Some((c, keys)) if *c == col && !item => {
                if !keys.insert(key.clone()) {
                    out.push((n + 1, key));
                }
            }
            _ => {
                if stack.last().is_some_and(|(c, _)| *c == col) {
                    stack.pop();
                }
                stack.push((col, std::iter::once(key).collect()));
            }
        }
        let value = value.trim_start();
        if value.starts_with('|') || value.starts_with('>') {
            scalar_above = Some(col);
        }
    }
    out
}

/// A block mapping entry's key and the rest of its line, if the text is one.
fn split_key(text: &str) -> Option<(String, &str)> {
    if let Some(quote) = text.chars().next().filter(|c| *c == '"' || *c == '\'') {
        let end = text[1..].find(quote)? + 1;
        let key = &text[1..end];
        let rest = text[end + 1..].trim_start();
        let value = rest.strip_prefix(':')?;
        if !(value.is_empty() || value.starts_with(' ')) {
            return None;
        }
        let key = if quote == '"' {
            serde_json::from_str::<String>(&text[..=end]).unwrap_or_else(|_| key.to_string())
        } else {
            key.replace("''", "'")
        };
        return Some((key, value));
    }
    if text.starts_with(['{', '[', '#', '&', '*', '!', '|', '>', '%', '@', '`']) {
        return None;
    }
    let mut from = 0;
    while let Some(at) = text[from..].find(':') {
        let at = from + at;
        let after = &text[at + 1..];
        if after.is_empty() || after.starts_with(' ') {
            let key = text[..at].trim_end();
            if key.contains(" #") {
                return None;
            }
            return Some((key.to_string(), after));
        }
        from = at + 1;
    }
    None
}

fn parse_into(body: &[u8], found: &mut Found) -> serde_json::Result<Value> {
    let mut path = String::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = Seed {
        path: &mut path,
        found,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// What a parse collects: the repeated fields (with their position among all fields met),
/// and, when asked for, the first position of every field path.
#[derive(Default)]
struct Found {
    /// Fields met so far.
    count: usize,
    dups: Vec<(usize, String)>,
    positions: Option<HashMap<String, usize>>,
}

/// One value being parsed, at `path`.
struct Seed<'a> {
    path: &'a mut String,
    found: &'a mut Found,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        self.deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        let base = self.path.len();
        loop {
            use std::fmt::Write;
            let _ = write!(self.path, "[{}]", items.len());
            let next = seq.next_element_seed(Seed {
                path: &mut *self.path,
                found: &mut *self.found,
            })?;
            self.path.truncate(base);
            match next {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut obj = Map::new();
        let base = self.path.len();
        while let Some(key) = map.next_key::<String>()? {
            if base > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            let at = self.found.count;
            self.found.count += 1;
            if let Some(positions) = &mut self.found.positions {
                positions.entry(self.path.clone()).or_insert(at);
            }
            let v = map.next_value_seed(Seed {
                path: &mut *self.path,
                found: &mut *self.found,
            })?;
            if obj.insert(key, v).is_some() {
                self.found.dups.push((at, self.path.clone()));
            }
            self.path.truncate(base);
        }
        Ok(Value::Object(obj))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{findings, json_patch_errors, parse};

    #[test]
    fn finds_duplicates_with_their_paths_and_keeps_the_last() {
        let body = br#"{"kind": "ConfigMap", "data": {"a": "1", "a": "2"},
            "spec": {"containers": [{"name": "x", "name": "y"}]}, "kind": "ConfigMap"}"#;
        let (v, dups) = parse(body).unwrap();
        assert_eq!(v["data"]["a"], "2");
        assert_eq!(v["spec"]["containers"][0]["name"], "y");
        assert_eq!(dups, ["data.a", "spec.containers[0].name", "kind"]);
    }

    #[test]
    fn the_same_value_as_serde_json_without_duplicates() {
        let body = br#"{"a": [1, -2, 3.5, true, null, "s", {"b": {}}], "c": 18446744073709551615}"#;
        let (v, dups) = parse(body).unwrap();
        assert!(dups.is_empty());
        assert_eq!(
            v,
            serde_json::from_slice::<serde_json::Value>(body).unwrap()
        );
        assert_eq!(v["a"][6], json!({"b": {}}));
        assert!(
            parse(b"{\"a\": 1} x").is_err(),
            "trailing characters are an error"
        );
    }

    #[test]
    fn findings_place_each_field_in_document_order() {
        let body =
            br#"{"spec": {"unknown": 1, "replicas": 2, "replicas": 3}, "metadata": {"name": "a"}}"#;
        let f = findings(body);
        assert_eq!(f.duplicates, [(3, "spec.replicas".to_string())]);
        assert_eq!(f.positions["spec.unknown"], 1);
        assert_eq!(f.positions["spec.replicas"], 2);
        assert_eq!(f.positions["metadata.name"], 5);
    }

    #[test]
    fn json_patch_operations_are_checked_as_upstream_words_them() {
        let body = br#"[
            {"op": "add", "path": "/spec/unknown1", "value": "val1", "foo": "bar"},
            {"op": "add", "path": "/spec/unknown2", "path": "/spec/unknown3", "value": "val2"},
            {"op": "add", "path": "/spec/a", "value": {"b": 1, "b": 2}}
        ]"#;
        assert_eq!(
            json_patch_errors(body),
            [
                r#"json patch unknown field "[0].foo""#,
                r#"json patch duplicate field "[1].path""#
            ]
        );
        assert!(json_patch_errors(br#"{"op": "add"}"#).is_empty());
    }

    #[test]
    fn repeated_yaml_keys_are_reported_by_line() {
        use super::yaml_repeated_keys;
        // The conformance spec's body: the repetition is on line 11.
        let yaml = b"\napiVersion: x.io/v1\nkind: X\nmetadata:\n  name: a\n  finalizers:\n  - test-finalizer\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  cronSpec: \"* * * * */5\"\n  ports:\n  - name: x\n    containerPort: 80\n    protocol: TCP\n    protocol: UDP\n";
        assert_eq!(
            yaml_repeated_keys(yaml),
            [
                r#"line 11: key "foo" already set in map"#,
                r#"line 17: key "protocol" already set in map"#
            ]
        );
        // The same key in sibling items or nested mappings, or inside a block scalar, is no
        // repetition.
        let fine = b"ports:\n- name: a\n  port: 1\n- name: b\n  port: 2\nx:\n  name: c\ndata:\n  a: |\n    a: 1\n    a: 2\n  b: x\n";
        assert!(yaml_repeated_keys(fine).is_empty());
        assert_eq!(
            yaml_repeated_keys(b"- a: 1\n  a: 2\n"),
            [r#"line 2: key "a" already set in map"#]
        );
        // A JSON body (upstream's apply test): lines counted from the body's first.
        let json = b"\n{\n\t\"apiVersion\": \"v\",\n\t\"kind\": \"K\",\n\t\"metadata\": {\n\t\t\"name\": \"n\"\n\t},\n\t\"spec\": {\n\t\t\"knownField1\": \"val1\",\n\t\t\"knownField1\": \"val2\",\n\t\t\"ports\": [{\n\t\t\t\"name\": \"portName\",\n\t\t\t\"containerPort\": 8080,\n\t\t\t\"protocol\": \"TCP\",\n\t\t\t\"hostPort\": 8081,\n\t\t\t\"hostPort\": 8082\n\t\t}]\n\t}\n}";
        assert_eq!(
            yaml_repeated_keys(json),
            [
                r#"line 10: key "knownField1" already set in map"#,
                r#"line 16: key "hostPort" already set in map"#
            ]
        );
    }
}
