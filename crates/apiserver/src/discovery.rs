//! Discovery: `/version`, `/api`, `/apis`, `/apis/GROUP`, the resource lists of each group
//! version, and the aggregated discovery form (`apidiscovery.k8s.io/v2`) kubectl 1.27+ and
//! client-go ask for first.
//!
//! Everything is computed from [`crate::storage::Storage::served_resources`] per request, so a
//! CRD's resource is discoverable as soon as the CRD is created.

use serde_json::{Value, json};

use crate::kinds;
use crate::resource::ResourceInfo;

/// The Kubernetes version this server presents itself as.
pub const GIT_VERSION: &str = "v1.33.0";

/// Whether `group` holds only the review resources (`crate::http::reviews`), whose only
/// verb is create.
pub(crate) fn is_review_group(group: &str) -> bool {
    matches!(group, "authorization.k8s.io" | "authentication.k8s.io")
}

/// One subresource as discovery publishes it.
struct Subresource {
    name: &'static str,
    /// The response kind's group, version and kind.
    group: String,
    version: String,
    kind: String,
    verbs: &'static [&'static str],
}

/// The subresources of `r` discovery publishes, sorted by name as upstream sorts them: the
/// served `status` and `scale`, and the built-in kind's other ones (`pods/log`, ...).
fn subresources(r: &ResourceInfo) -> Vec<Subresource> {
    let mut subs = Vec::new();
    let own = |name| Subresource {
        name,
        group: r.group.clone(),
        version: r.version.clone(),
        kind: r.kind.clone(),
        verbs: kinds::GET_PATCH_UPDATE,
    };
    if r.status_subresource {
        subs.push(own("status"));
    }
    if r.scale.is_some() {
        subs.push(Subresource {
            name: "scale",
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            verbs: kinds::GET_PATCH_UPDATE,
        });
    }
    if !r.custom
        && let Some(row) = kinds::find(&r.group, &r.version, &r.plural)
    {
        subs.extend(row.extra.iter().map(|s| Subresource {
            name: s.name,
            group: s.group.into(),
            version: s.version.into(),
            kind: s.kind.into(),
            verbs: s.verbs,
        }));
    }
    subs.sort_by_key(|s| s.name);
    subs
}

/// The `/version` answer as kube-apiserver writes it: `version.Info`'s fields in order, always
/// indented by two spaces (it is written raw, not negotiated).
pub fn version_body() -> Vec<u8> {
    serde_json::to_vec_pretty(&VersionInfo::current()).unwrap_or_default()
}

/// apimachinery's `version.Info`.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct VersionInfo {
    major: &'static str,
    minor: &'static str,
    emulation_major: &'static str,
    emulation_minor: &'static str,
    min_compatibility_major: &'static str,
    min_compatibility_minor: &'static str,
    git_version: &'static str,
    git_commit: &'static str,
    git_tree_state: &'static str,
    build_date: &'static str,
    go_version: &'static str,
    compiler: &'static str,
    platform: String,
}

impl VersionInfo {
    fn current() -> Self {
        VersionInfo {
            major: "1",
            minor: "33",
            emulation_major: "1",
            emulation_minor: "33",
            min_compatibility_major: "1",
            min_compatibility_minor: "32",
            git_version: GIT_VERSION,
            git_commit: "0000000000000000000000000000000000000000",
            git_tree_state: "clean",
            build_date: "2026-01-01T00:00:00Z",
            go_version: "go1.24.0",
            compiler: "gc",
            platform: format!("{}/{}", std::env::consts::OS, go_arch()),
        }
    }
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The `/api` document (`APIVersions`).
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": server_address }],
    })
}

/// The sort key of a Kubernetes version string: GA before beta before alpha, higher numbers
/// first, anything else last (alphabetically).
pub(crate) fn version_priority(v: &str) -> (u8, i64, i64, String) {
    let parse = || -> Option<(u8, i64, i64)> {
        let rest = v.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let major: i64 = digits.parse().ok()?;
        let rest = &rest[digits.len()..];
        if rest.is_empty() {
            return Some((0, -major, 0));
        }
        let (level, minor) = if let Some(m) = rest.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = rest.strip_prefix("alpha") {
            (2, m)
        } else {
            return None;
        };
        Some((level, -major, -minor.parse::<i64>().ok()?))
    };
    match parse() {
        Some((level, major, minor)) => (level, major, minor, String::new()),
        None => (3, 0, 0, v.to_string()),
    }
}

/// The groups served (core excluded) with their versions, preferred first, in the order
/// resources are served.
fn groups(resources: &[ResourceInfo]) -> Vec<(String, Vec<String>)> {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for r in resources.iter().filter(|r| !r.group.is_empty()) {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) if !versions.contains(&r.version) => {
                versions.push(r.version.clone())
            }
            Some(_) => {}
            None => groups.push((r.group.clone(), vec![r.version.clone()])),
        }
    }
    for (_, versions) in &mut groups {
        versions.sort_by_key(|v| version_priority(v));
    }
    // Built-in groups in the real server's order, then the others as they came.
    groups.sort_by_key(|(g, _)| {
        kinds::rows()
            .position(|r| r.group == *g)
            .unwrap_or(usize::MAX)
    });
    groups
}

fn group_json(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({ "groupVersion": format!("{group}/{v}"), "version": v });
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": gv(&versions[0]),
    })
}

/// The `/apis` document (`APIGroupList`).
pub fn group_list(resources: &[ResourceInfo]) -> Value {
    let groups: Vec<Value> = groups(resources)
        .iter()
        .map(|(g, v)| group_json(g, v))
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

/// The `/apis/GROUP` document (`APIGroup`), if the group is served.
pub fn group(resources: &[ResourceInfo], name: &str) -> Option<Value> {
    let groups = groups(resources);
    let (g, versions) = groups.iter().find(|(g, _)| g == name)?;
    let mut doc = group_json(g, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// The `/api/v1` or `/apis/GROUP/VERSION` document (`APIResourceList`), if served.
pub fn resource_list(resources: &[ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceInfo> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for r in served {
        let mut main = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs(),
        });
        if !r.short_names.is_empty() {
            main["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            main["categories"] = json!(r.categories);
        }
        if let Some(hash) = &r.storage_version_hash {
            main["storageVersionHash"] = json!(hash);
        }
        list.push(main);
        for sub in subresources(r) {
            let mut doc = json!({
                "name": format!("{}/{}", r.plural, sub.name), "singularName": "",
                "namespaced": r.namespaced, "kind": sub.kind, "verbs": sub.verbs,
            });
            if sub.group != r.group || sub.version != r.version {
                doc["group"] = json!(sub.group);
                doc["version"] = json!(sub.version);
            }
            list.push(doc);
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({ "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": list }),
    )
}

/// The aggregated discovery version the `Accept` header asks for (`v2` or `v2beta1`), if any.
pub fn wants_aggregated(accept: Option<&str>) -> Option<&'static str> {
    for part in accept.unwrap_or("").split(',') {
        let params: Vec<&str> = part.split(';').map(str::trim).collect();
        if params.contains(&"g=apidiscovery.k8s.io") && params.contains(&"as=APIGroupDiscoveryList")
        {
            if params.contains(&"v=v2") {
                return Some("v2");
            }
            if params.contains(&"v=v2beta1") {
                return Some("v2beta1");
            }
        }
    }
    None
}

/// The `Content-Type` of an aggregated discovery answer.
pub fn aggregated_content_type(version: &str) -> String {
    format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
}

/// The aggregated discovery document (`APIGroupDiscoveryList`) of the core group (`/api`,
/// `core == true`) or of every other group (`/apis`).
pub fn aggregated(resources: &[ResourceInfo], core: bool, version: &str) -> Value {
    let group_names: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_string()])]
    } else {
        groups(resources)
    };
    let items: Vec<Value> = group_names
        .iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|v| {
                    let res: Vec<Value> = resources
                        .iter()
                        .filter(|r| &r.group == group && &r.version == v)
                        .map(aggregated_resource)
                        .collect();
                    json!({ "version": v, "resources": res, "freshness": "Current" })
                })
                .collect();
            json!({ "metadata": { "name": group, "creationTimestamp": null }, "versions": versions })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let kind = json!({ "group": r.group, "version": r.version, "kind": r.kind });
    let subresources: Vec<Value> = subresources(r)
        .into_iter()
        .map(|s| {
            json!({
                "subresource": s.name,
                "responseKind": { "group": s.group, "version": s.version, "kind": s.kind },
                "verbs": s.verbs,
            })
        })
        .collect();
    let mut doc = json!({
        "resource": r.plural,
        "responseKind": kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs(),
    });
    if !r.short_names.is_empty() {
        doc["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        doc["categories"] = json!(r.categories);
    }
    if !subresources.is_empty() {
        doc["subresources"] = json!(subresources);
    }
    doc
}

#[cfg(test)]
mod tests;
