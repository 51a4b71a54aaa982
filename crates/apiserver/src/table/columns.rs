//! The cells of built-in resources' table columns, the AGE rendering and the JSONPath subset
//! used by CRD printer columns.
//!
//! Which columns a kind prints is its strategy's (`kinds::Strategy::columns`,
//! `columns_after_age`, `columns_wide`, handed to [`super::columns_for`] as a
//! [`super::Printer`]); the kinds build their cells from the readers here
//! (`get`, `int`, `string`, `count`, ...) and the printers several kinds share (`selector`,
//! `containers`, `endpoints`, `hpa_targets`, ...).

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// A column's cell: the value printed for one object.
pub(crate) type CellFn = fn(&Value) -> Value;

/// Table columns: `(name, cell)` pairs.
pub(crate) type Columns = fn() -> Vec<(&'static str, CellFn)>;

/// A table of a kind's own: its columns with their priorities.
pub(crate) type Table = fn() -> Vec<(&'static str, CellFn, i64)>;

pub(crate) fn get<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    obj.pointer(pointer)
}

pub(crate) fn int(obj: &Value, pointer: &str) -> i64 {
    get(obj, pointer).and_then(Value::as_i64).unwrap_or(0)
}

pub(crate) fn string(obj: &Value, pointer: &str) -> Value {
    json!(get(obj, pointer).and_then(Value::as_str).unwrap_or(""))
}

pub(crate) fn count(obj: &Value, pointer: &str) -> usize {
    match get(obj, pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

pub(crate) fn ratio(a: i64, b: i64) -> Value {
    json!(format!("{a}/{b}"))
}

pub(crate) fn or_none(v: Value) -> Value {
    if v == json!("") { json!("<none>") } else { v }
}

/// An IntOrString as Go's `IntOrString.String()` prints it, or `N/A` when unset
/// (`printPodDisruptionBudget`).
pub(crate) fn int_or_string_or_na(o: &Value, pointer: &str) -> Value {
    match get(o, pointer) {
        Some(Value::Number(n)) => json!(n.to_string()),
        Some(Value::String(s)) => json!(s),
        _ => json!("N/A"),
    }
}

/// The first three `ip:port` pairs of an Endpoints object and a count of the rest, as
/// `kubectl get endpoints` shows them (upstream's `formatEndpoints`): a subset without ports
/// lists its addresses alone; no subsets at all is `<none>`.
pub(crate) fn endpoints(o: &Value) -> Value {
    const MAX: usize = 3;
    let Some(subsets) = get(o, "/subsets")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
    else {
        return json!("<none>");
    };
    let mut list: Vec<String> = Vec::new();
    let mut count = 0;
    let mut more = false;
    let empty = Vec::new();
    for subset in subsets {
        let addresses = subset["addresses"].as_array().unwrap_or(&empty);
        let ips = addresses.iter().map(|a| a["ip"].as_str().unwrap_or(""));
        match subset["ports"].as_array().filter(|p| !p.is_empty()) {
            None => {
                count += addresses.len();
                for ip in ips {
                    if list.len() == MAX {
                        more = true;
                        break;
                    }
                    list.push(ip.to_string());
                }
            }
            Some(ports) => {
                for port in ports {
                    count += addresses.len();
                    let number = port["port"].as_i64().unwrap_or(0);
                    for ip in ips.clone() {
                        if list.len() == MAX {
                            more = true;
                            break;
                        }
                        // Go's net.JoinHostPort brackets IPv6 addresses.
                        list.push(if ip.contains(':') {
                            format!("[{ip}]:{number}")
                        } else {
                            format!("{ip}:{number}")
                        });
                    }
                }
            }
        }
    }
    let joined = list.join(",");
    if more {
        json!(format!("{joined} + {} more...", count - MAX))
    } else {
        json!(joined)
    }
}

/// An HPA's metrics against their targets, as `kubectl get hpa` shows them
/// (`cpu: 45%/80%, memory: <unknown>/500Mi`), two at most and a count of the rest.
pub(crate) fn hpa_targets(o: &Value) -> Value {
    let specs = get(o, "/spec/metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if specs.is_empty() {
        return json!("<none>");
    }
    let statuses = get(o, "/status/currentMetrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let unknown = || "<unknown>".to_string();
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status = statuses.get(i);
            let ty = spec["type"].as_str().unwrap_or("");
            let source = match ty {
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                "Pods" => "pods",
                "Object" => "object",
                "External" => "external",
                _ => return "<unknown type>".to_string(),
            };
            let target = &spec[source]["target"];
            let current = status.map(|s| &s[source]["current"]);
            match ty {
                "Resource" | "ContainerResource" => {
                    let name = spec[source]["name"].as_str().unwrap_or("");
                    if !target["averageValue"].is_null() {
                        let now = current
                            .filter(|c| !c["averageValue"].is_null())
                            .map_or_else(unknown, |c| text(&c["averageValue"]));
                        format!("{name}: {now}/{}", text(&target["averageValue"]))
                    } else {
                        let now = current
                            .and_then(|c| c["averageUtilization"].as_i64())
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let want = target["averageUtilization"]
                            .as_i64()
                            .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}: {now}/{want}")
                    }
                }
                "Pods" => {
                    let now = current.map_or_else(unknown, |c| text(&c["averageValue"]));
                    format!("{now}/{}", text(&target["averageValue"]))
                }
                _ => {
                    if !target["averageValue"].is_null() {
                        let now = current
                            .filter(|c| !c["averageValue"].is_null())
                            .map_or_else(unknown, |c| text(&c["averageValue"]));
                        format!("{now}/{} (avg)", text(&target["averageValue"]))
                    } else {
                        let now = current.map_or_else(unknown, |c| text(&c["value"]));
                        format!("{now}/{}", text(&target["value"]))
                    }
                }
            }
        })
        .collect();
    let shown = list.len().min(2);
    let joined = list[..shown].join(", ");
    if list.len() > 2 {
        json!(format!("{joined} + {} more...", list.len() - 2))
    } else {
        json!(joined)
    }
}

pub(crate) fn containers(o: &Value, pointer: &str, field: &str) -> Value {
    let names: Vec<&str> = get(o, pointer)
        .and_then(Value::as_array)
        .map(|cs| cs.iter().filter_map(|c| c[field].as_str()).collect())
        .unwrap_or_default();
    or_none(json!(names.join(",")))
}

pub(crate) fn selector(o: &Value) -> Value {
    let labels: Vec<String> = get(o, "/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    or_none(json!(labels.join(",")))
}

pub(crate) fn first_str<'a>(o: &'a Value, pointers: &[&str]) -> Option<&'a str> {
    pointers
        .iter()
        .find_map(|p| get(o, p).and_then(Value::as_str).filter(|s| !s.is_empty()))
}

/// `used/hard` of each resource of a quota's `spec.hard`, sorted, as `name: used/hard`: the
/// `limits.*` ones (`limit`) or the others (upstream's `printResourceQuota`).
pub(crate) fn quota_usage(o: &Value, limit: bool) -> Value {
    let Some(hard) = get(o, "/spec/hard").and_then(Value::as_object) else {
        return json!("");
    };
    let mut names: Vec<&String> = hard.keys().collect();
    names.sort();
    let quantity = |section: &str, name: &str| {
        o.pointer(&format!("/status/{section}"))
            .and_then(|m| m.get(name))
            .and_then(Value::as_str)
            .unwrap_or("0")
            .to_string()
    };
    let parts: Vec<String> = names
        .into_iter()
        .filter(|n| n.starts_with("limits.") == limit)
        .map(|n| format!("{n}: {}/{}", quantity("used", n), quantity("hard", n)))
        .collect();
    json!(parts.join(", "))
}

/// The controller owning an object as `kind.group/name` (lower-cased kind and group, as
/// upstream's `formatResourceName`), `<none>` without one.
pub(crate) fn controller_of(o: &Value) -> Value {
    let owner = get(o, "/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|rs| rs.iter().find(|r| r["controller"] == json!(true)));
    let Some(r) = owner else {
        return json!("<none>");
    };
    let api_version = r["apiVersion"].as_str().unwrap_or("");
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let kind = r["kind"].as_str().unwrap_or("");
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    json!(format!(
        "{}/{}",
        group_kind.to_lowercase(),
        r["name"].as_str().unwrap_or("")
    ))
}

/// A CSR's condition as `kubectl get csr` shows it: Denied, Approved or Pending, then
/// `,Failed` and `,Issued` (upstream's `extractCSRStatus`).
pub(crate) fn csr_condition(o: &Value) -> Value {
    let types: Vec<&str> = get(o, "/status/conditions")
        .and_then(Value::as_array)
        .map(|cs| cs.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default();
    let mut status = if types.contains(&"Denied") {
        "Denied"
    } else if types.contains(&"Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if types.contains(&"Failed") {
        status.push_str(",Failed");
    }
    if get(o, "/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        status.push_str(",Issued");
    }
    json!(status)
}

/// Access modes abbreviated and ordered as upstream's `GetAccessModesAsString`.
pub(crate) fn access_modes(o: &Value, pointer: &str) -> Value {
    let modes: Vec<&str> = get(o, pointer)
        .and_then(Value::as_array)
        .map(|m| m.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let short: Vec<&str> = [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(long, _)| modes.contains(long))
    .map(|(_, s)| *s)
    .collect();
    json!(short.join(","))
}

/// The storage class of a PV or PVC: the beta annotation first, then `spec.storageClassName`.
pub(crate) fn storage_class(o: &Value) -> Value {
    json!(
        first_str(
            o,
            &[
                "/metadata/annotations/volume.beta.kubernetes.io~1storage-class",
                "/spec/storageClassName"
            ]
        )
        .unwrap_or("")
    )
}

/// A phase, or `Terminating` once the object is being deleted.
pub(crate) fn phase_or_terminating(o: &Value) -> Value {
    if o.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        json!("Terminating")
    } else {
        string(o, "/status/phase")
    }
}

pub(crate) fn or_unset(o: &Value, pointer: &str) -> Value {
    json!(get(o, pointer).and_then(Value::as_str).unwrap_or("<unset>"))
}

/// Up to three items and a count of the rest (upstream's `listWithMoreString`), `<unset>`
/// when empty.
pub(crate) fn list_with_more(items: &[String]) -> Value {
    const MAX: usize = 3;
    let shown = items[..items.len().min(MAX)].join(",");
    if items.len() > MAX {
        json!(format!("{shown} + {} more...", items.len() - MAX))
    } else if shown.is_empty() {
        json!("<unset>")
    } else {
        json!(shown)
    }
}

/// An Ingress's hosts: up to three, `*` when no rule names one (upstream's `formatHosts`).
pub(crate) fn ingress_hosts(o: &Value) -> Value {
    const MAX: usize = 3;
    let rules = get(o, "/spec/rules").and_then(Value::as_array);
    let rules = rules.map(Vec::as_slice).unwrap_or_default();
    let mut list: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if list.len() == MAX {
            more = true;
        }
        if !more && let Some(h) = rule["host"].as_str().filter(|h| !h.is_empty()) {
            list.push(h);
        }
    }
    if list.is_empty() {
        return json!("*");
    }
    let ret = list.join(",");
    if more {
        json!(format!("{ret} + {} more...", rules.len() - MAX))
    } else {
        json!(ret)
    }
}

/// The load-balancer IPs (else hostnames) of an Ingress, sorted and deduplicated.
pub(crate) fn ingress_address(o: &Value) -> Value {
    let mut set = std::collections::BTreeSet::new();
    for i in get(o, "/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(a) = first_str(i, &["/ip", "/hostname"]) {
            set.insert(a.to_string());
        }
    }
    json!(set.into_iter().collect::<Vec<_>>().join(","))
}

/// The AGE of a timestamp, rendered as kubectl renders durations (`42s`, `5m3s`, `7h`, `3d`).
pub fn age(timestamp: Option<&Value>, now: DateTime<Utc>) -> String {
    let Some(ts) = timestamp.and_then(Value::as_str) else {
        return "<unknown>".into();
    };
    let Ok(t) = DateTime::parse_from_rfc3339(ts) else {
        return "<invalid>".into();
    };
    human_duration((now - t.with_timezone(&Utc)).num_seconds())
}

/// A duration in seconds as kubectl renders it (`42s`, `5m3s`, `7h`, `3d`; upstream's
/// `duration.HumanDuration`).
pub fn human_duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (m, h, d) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        if secs % 60 == 0 {
            format!("{m}m")
        } else {
            format!("{m}m{}s", secs % 60)
        }
    } else if h < 3 {
        format!("{m}m")
    } else if h < 8 {
        if m % 60 == 0 {
            format!("{h}h")
        } else {
            format!("{h}h{}m", m % 60)
        }
    } else if h < 48 {
        format!("{h}h")
    } else if d < 8 {
        if h % 24 == 0 {
            format!("{d}d")
        } else {
            format!("{d}d{}h", h % 24)
        }
    } else if d < 365 * 2 {
        format!("{d}d")
    } else {
        format!("{}y", d / 365)
    }
}

/// A field name of a JSONPath with its escapes (`\.` for a dot inside the name) undone.
pub(crate) fn unescape_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut chars = key.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            c => out.push(c),
        }
    }
    out
}

/// Evaluates a simple JSONPath (`.a.b`, `.a\.b` for a key with a dot, `.a['b.c']`, `.a[0].b`,
/// `.a[?(@.k=="v")].b`, optionally wrapped in `{}`) against `obj`; `None` when nothing
/// matches.
pub fn eval_json_path(obj: &Value, path: &str) -> Option<Value> {
    let path = path.trim().trim_start_matches('{').trim_end_matches('}');
    let path = path.strip_prefix('$').unwrap_or(path);
    let mut cur = obj;
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            // The name ends at the first unescaped `.` or `[`.
            let mut end = r.len();
            let mut escaped = false;
            for (i, c) in r.char_indices() {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '.' | '[' => {
                        end = i;
                        break;
                    }
                    _ => {}
                }
            }
            let key = &r[..end];
            if !key.is_empty() {
                cur = cur.get(unescape_key(key).as_str())?;
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['").or_else(|| rest.strip_prefix("[\"")) {
            // A quoted name: `['a.b/c']`, whose escapes are undone as in a dotted name.
            let quote = if rest.starts_with("['") { "']" } else { "\"]" };
            let end = r.find(quote)?;
            cur = cur.get(unescape_key(&r[..end]).as_str())?;
            rest = &r[end + 2..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|item| match item.get(key.trim()) {
                        Some(Value::String(s)) => s == want,
                        Some(other) => {
                            *other == serde_json::from_str::<Value>(want).unwrap_or(Value::Null)
                        }
                        None => false,
                    })?;
            } else {
                let idx: usize = inner.trim().parse().ok()?;
                cur = cur.as_array()?.get(idx)?;
            }
        } else {
            return None;
        }
    }
    Some(cur.clone())
}
