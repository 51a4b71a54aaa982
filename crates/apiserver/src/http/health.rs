//! The health endpoints `/healthz`, `/livez` and `/readyz`, answered as kube-apiserver 1.33
//! answers them (`k8s.io/apiserver/pkg/server/healthz`).
//!
//! Each endpoint has a list of named checks: the generic server's (`ping`, `log`, `etcd`), the
//! post-start hooks kube-apiserver and its embedded apiextensions and aggregator servers
//! register (`poststarthook/<name>`), and for `/readyz` the readiness-only checks
//! (`etcd-readiness`, `informer-sync`, `shutdown`). This server runs all of what those hooks
//! stand for before it listens, so every check passes.
//!
//! - `GET /livez` answers `ok`; with `?verbose` one line per check, `[+]<name> ok`, then
//!   `livez check passed`.
//! - `?exclude=<name>` (repeatable) turns a check's line into `[+]<name> excluded: ok`; an
//!   excluded name no check has is reported as `warn: some health checks cannot be excluded:
//!   no matches for "<name>"`.
//! - `GET /livez/<name>` answers `ok` for a check of that endpoint; any other path under it is
//!   404.

use super::request::percent_decode;
use crate::error::ApiError;

/// The post-start hooks a kube-apiserver 1.33 reports, in its order (`autoregister-completion`
/// is a plain check registered among them).
const HOOKS: &[&str] = &[
    "poststarthook/start-apiserver-admission-initializer",
    "poststarthook/generic-apiserver-start-informers",
    "poststarthook/priority-and-fairness-config-consumer",
    "poststarthook/priority-and-fairness-filter",
    "poststarthook/storage-object-count-tracker-hook",
    "poststarthook/start-apiextensions-informers",
    "poststarthook/start-apiextensions-controllers",
    "poststarthook/crd-informer-synced",
    "poststarthook/start-system-namespaces-controller",
    "poststarthook/start-cluster-authentication-info-controller",
    "poststarthook/start-kube-apiserver-identity-lease-controller",
    "poststarthook/start-kube-apiserver-identity-lease-garbage-collector",
    "poststarthook/start-legacy-token-tracking-controller",
    "poststarthook/start-service-ip-repair-controllers",
    "poststarthook/rbac/bootstrap-roles",
    "poststarthook/scheduling/bootstrap-system-priority-classes",
    "poststarthook/priority-and-fairness-config-producer",
    "poststarthook/bootstrap-controller",
    "poststarthook/start-kubernetes-service-cidr-controller",
    "poststarthook/aggregator-reload-proxy-client-cert",
    "poststarthook/start-kube-aggregator-informers",
    "poststarthook/apiservice-status-local-available-controller",
    "poststarthook/apiservice-status-remote-available-controller",
    "poststarthook/apiservice-registration-controller",
    "poststarthook/apiservice-discovery-controller",
    "poststarthook/kube-apiserver-autoregistration",
    "autoregister-completion",
    "poststarthook/apiservice-openapi-controller",
    "poststarthook/apiservice-openapiv3-controller",
];

/// The checks of an endpoint (`healthz`, `livez` or `readyz`), in the order it reports them.
pub(crate) fn checks(endpoint: &str) -> Vec<&'static str> {
    let mut out = vec!["ping", "log", "etcd"];
    let readyz = endpoint == "readyz";
    if readyz {
        out.extend(["etcd-readiness", "informer-sync"]);
    }
    out.extend(HOOKS);
    if readyz {
        out.push("shutdown");
    }
    out
}

/// The answer to a health path (`/readyz`, `/readyz/etcd`, ...) with its query: the status
/// code and the plain-text body.
pub(crate) fn answer(path: &str, query: Option<&str>) -> Result<(u16, String), ApiError> {
    let path = path.trim_start_matches('/');
    let (endpoint, check) = match path.split_once('/') {
        Some((endpoint, rest)) => (endpoint, Some(percent_decode(rest))),
        None => (path, None),
    };
    let checks = checks(endpoint);
    if let Some(check) = check {
        // A check's own path; upstream registers exactly these (no trailing slash).
        return if checks.contains(&check.as_str()) {
            Ok((200, "ok".into()))
        } else {
            Err(super::response::not_found())
        };
    }
    let mut verbose = false;
    let mut excluded: Vec<String> = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match percent_decode(key).as_str() {
            "verbose" => verbose = true,
            "exclude" => {
                let name = percent_decode(value);
                if !excluded.contains(&name) {
                    excluded.push(name);
                }
            }
            _ => {}
        }
    }
    if !verbose {
        return Ok((200, "ok".into()));
    }
    let mut body = String::new();
    for name in &checks {
        if let Some(i) = excluded.iter().position(|e| e == name) {
            excluded.remove(i);
            body.push_str(&format!("[+]{name} excluded: ok\n"));
        } else {
            body.push_str(&format!("[+]{name} ok\n"));
        }
    }
    if !excluded.is_empty() {
        // Upstream lists the unmatched names sorted, each quoted.
        excluded.sort();
        let quoted: Vec<String> = excluded.iter().map(|e| format!("{e:?}")).collect();
        body.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            quoted.join(",")
        ));
    }
    body.push_str(&format!("{endpoint} check passed\n"));
    Ok((200, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbose_lists_every_check_then_passes() {
        let (code, body) = answer("/readyz", Some("verbose")).unwrap();
        assert_eq!(code, 200);
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(
            &lines[..6],
            &[
                "[+]ping ok",
                "[+]log ok",
                "[+]etcd ok",
                "[+]etcd-readiness ok",
                "[+]informer-sync ok",
                "[+]poststarthook/start-apiserver-admission-initializer ok"
            ]
        );
        assert!(lines.contains(&"[+]poststarthook/rbac/bootstrap-roles ok"));
        assert!(lines.contains(&"[+]autoregister-completion ok"));
        assert_eq!(
            lines[lines.len() - 2..],
            ["[+]shutdown ok", "readyz check passed"]
        );
        assert_eq!(lines.len(), 36);
        for endpoint in ["livez", "healthz"] {
            let (_, body) = answer(&format!("/{endpoint}"), Some("verbose=1")).unwrap();
            let lines: Vec<&str> = body.lines().collect();
            assert_eq!(lines.len(), 33, "{endpoint}");
            assert_eq!(lines[2], "[+]etcd ok");
            assert_eq!(
                lines[3],
                "[+]poststarthook/start-apiserver-admission-initializer ok"
            );
            assert!(!lines.contains(&"[+]shutdown ok") && !lines.contains(&"[+]informer-sync ok"));
            assert_eq!(lines[32], format!("{endpoint} check passed"));
        }
        assert_eq!(answer("/livez", None).unwrap(), (200, "ok".into()));
        assert_eq!(
            answer("/livez", Some("exclude=etcd")).unwrap(),
            (200, "ok".into())
        );
    }

    #[test]
    fn excluded_checks_and_unknown_names() {
        let query = "verbose&exclude=etcd&exclude=poststarthook%2Frbac%2Fbootstrap-roles&exclude=nope&exclude=also";
        let (_, body) = answer("/livez", Some(query)).unwrap();
        assert!(body.contains("[+]etcd excluded: ok\n"));
        assert!(body.contains("[+]poststarthook/rbac/bootstrap-roles excluded: ok\n"));
        assert!(body.ends_with(
            "warn: some health checks cannot be excluded: no matches for \"also\",\"nope\"\nlivez check passed\n"
        ));
    }

    #[test]
    fn each_check_has_its_own_path() {
        for path in [
            "/healthz/ping",
            "/livez/etcd",
            "/readyz/informer-sync",
            "/readyz/shutdown",
            "/readyz/poststarthook/generic-apiserver-start-informers",
            "/healthz/poststarthook/rbac/bootstrap-roles",
            "/livez/autoregister-completion",
        ] {
            assert_eq!(answer(path, None).unwrap(), (200, "ok".into()), "{path}");
        }
        for path in [
            "/livez/shutdown",
            "/healthz/informer-sync",
            "/readyz/nope",
            "/readyz/ping/",
        ] {
            assert_eq!(answer(path, None).unwrap_err().code, 404, "{path}");
        }
    }
}
