//! Indented JSON answers, as kube-apiserver writes them for `?pretty=true`, for
//! `application/json;pretty=1`, and for command-line tools and browsers that do not say
//! (`curl`, `Wget` and `Mozilla/5.0` user agents) unless `pretty=false` says otherwise.
//!
//! The answer is re-indented from the compact JSON the handlers wrote (Go's `json.Indent` with
//! two spaces), so field order is kept; watch streams are left compact.

use http::{HeaderMap, Response, header};

use super::Body;

/// Whether the request asks for indented JSON: its `pretty` query parameter when set, else
/// `pretty=1` in `Accept`'s first range, else a user agent of a command-line tool or browser.
pub fn wanted(query: Option<&str>, headers: &HeaderMap) -> bool {
    let param = query
        .into_iter()
        .flat_map(|q| q.split('&'))
        .find_map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (k == "pretty" && !v.is_empty()).then_some(v)
        });
    if let Some(v) = param {
        return matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    let header = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let first = header(header::ACCEPT).split(',').next().unwrap_or("");
    if first.split(';').skip(1).any(|p| p.trim() == "pretty=1") {
        return true;
    }
    let agent = header(header::USER_AGENT);
    ["curl", "Wget", "Mozilla/5.0"]
        .iter()
        .any(|p| agent.starts_with(p))
}

/// A whole JSON answer indented; any other answer is left as it is.
pub async fn answer(resp: Response<Body>) -> Response<Body> {
    super::response::reencode_json(resp, |json| Some((indent(json), "application/json"))).await
}

/// Compact JSON text indented by two spaces per level, `": "` after keys, empty objects and
/// arrays kept as `{}` and `[]` (Go's `json.Indent(dst, src, "", "  ")`).
pub fn indent(json: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(json.len() + json.len() / 2);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    // An opening bracket was written and its first element not yet.
    let mut opened = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    for &c in json {
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if opened && c != b'}' && c != b']' {
            opened = false;
            newline(&mut out, depth);
        }
        match c {
            b'"' => {
                in_string = true;
                out.push(c);
            }
            b'{' | b'[' => {
                out.push(c);
                depth += 1;
                opened = true;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if opened {
                    opened = false;
                } else {
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indents_as_go_does() {
        let out =
            indent(br#"{"kind":"List","items":[],"metadata":{},"x":[1,{"a":"b,:{"}],"s":"q\"}"}"#);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n  \"kind\": \"List\",\n  \"items\": [],\n  \"metadata\": {},\n  \"x\": [\n    1,\n    {\n      \"a\": \"b,:{\"\n    }\n  ],\n  \"s\": \"q\\\"}\"\n}"
        );
    }

    #[test]
    fn wanted_by_parameter_accept_or_tool() {
        let mut h = HeaderMap::new();
        assert!(!wanted(None, &h));
        assert!(wanted(Some("pretty=true"), &h));
        assert!(wanted(Some("limit=1&pretty=1"), &h));
        h.insert(header::USER_AGENT, "curl/8.5.0".parse().unwrap());
        assert!(wanted(None, &h));
        assert!(!wanted(Some("pretty=false"), &h));
        assert!(wanted(Some("pretty="), &h));
        h.insert(header::USER_AGENT, "kubectl/v1.33.0".parse().unwrap());
        assert!(!wanted(None, &h));
        h.insert(header::ACCEPT, "application/json;pretty=1".parse().unwrap());
        assert!(wanted(None, &h));
    }
}
