//! Health and readiness checks, served as Kubernetes components serve `/healthz`:
//!
//! - `GET /healthz` (or `/readyz`): `200 ok` when every check passes; otherwise `500` and one
//!   line per check, `[+]name ok` or `[-]name failed: reason withheld`, then
//!   `healthz check failed` (`readyz check failed`).
//! - `?verbose`: the per-check lines even on success (then `healthz check passed`), and the
//!   failing checks' reasons instead of `reason withheld`.
//! - `?exclude=name` (repeatable): skip a check (`[+]name excluded: ok`).
//! - `GET /healthz/<name>`: that check alone, `200 ok` or `500 internal server error: reason`;
//!   `404` for an unknown name.
//!
//! With no check registered, a `ping` check that always passes answers (as controller-runtime).

use std::sync::Arc;

use http::{Response, StatusCode, Uri};
use http_body_util::Full;
use parking_lot::Mutex;

use super::http::{Handler, text};

/// A health or readiness check: `Ok(())` when healthy, else why not. It runs on every probe
/// request, inside the HTTP server: keep it quick and non-blocking (read a flag, not the API
/// server).
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use controller_runtime::manager::Check;
///
/// let warm = Arc::new(AtomicBool::new(false));
/// let check: Check = Arc::new({
///     let warm = warm.clone();
///     move || if warm.load(Ordering::Relaxed) { Ok(()) } else { Err("warming up".into()) }
/// });
/// assert!(check().is_err());
/// warm.store(true, Ordering::Relaxed);
/// assert!(check().is_ok());
/// ```
pub type Check = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// A named list of checks (healthz or readyz). Cheap to clone; clones share the list.
#[derive(Clone, Default)]
pub(crate) struct Checks {
    checks: Arc<Mutex<Vec<(String, Check)>>>,
}

impl Checks {
    /// Adds `check` as `name`, replacing a check of that name.
    pub(crate) fn add(&self, name: String, check: Check) {
        let mut checks = self.checks.lock();
        match checks.iter_mut().find(|(n, _)| *n == name) {
            Some(existing) => existing.1 = check,
            None => checks.push((name, check)),
        }
    }

    /// The checks, or `ping` when there are none.
    fn snapshot(&self) -> Vec<(String, Check)> {
        let checks = self.checks.lock().clone();
        if checks.is_empty() {
            vec![("ping".into(), Arc::new(|| Ok(())) as Check)]
        } else {
            checks
        }
    }

    /// Answers `/<kind>`, `/<kind>/` and `/<kind>/<name>`; `None` for other paths.
    fn respond(&self, kind: &str, uri: &Uri) -> Option<Response<Full<bytes::Bytes>>> {
        let rest = uri.path().strip_prefix('/')?.strip_prefix(kind)?;
        let checks = self.snapshot();
        match rest.strip_prefix('/') {
            None if !rest.is_empty() => None,
            None | Some("") => Some(aggregate(kind, &checks, uri.query().unwrap_or(""))),
            Some(name) => {
                let (_, check) = checks.iter().find(|(n, _)| n == name)?;
                Some(match check() {
                    Ok(()) => text(StatusCode::OK, "ok"),
                    Err(reason) => text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        format!("internal server error: {reason}\n"),
                    ),
                })
            }
        }
    }
}

/// The aggregate answer of `checks` for a query string.
fn aggregate(kind: &str, checks: &[(String, Check)], query: &str) -> Response<Full<bytes::Bytes>> {
    let mut verbose = false;
    let mut excluded: Vec<String> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "verbose" => verbose = true,
            "exclude" => excluded.push(value.to_string()),
            _ => {}
        }
    }
    let mut failed = false;
    let mut out = String::new();
    for (name, check) in checks {
        if let Some(i) = excluded.iter().position(|e| e == name) {
            excluded.swap_remove(i);
            out.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match check() {
            Ok(()) => out.push_str(&format!("[+]{name} ok\n")),
            Err(reason) => {
                failed = true;
                tracing::debug!(check = %name, %reason, "{kind} check failed");
                let reason = if verbose {
                    reason.as_str()
                } else {
                    "reason withheld"
                };
                out.push_str(&format!("[-]{name} failed: {reason}\n"));
            }
        }
    }
    if !excluded.is_empty() {
        let names: Vec<String> = excluded.iter().map(|n| format!("{n:?}")).collect();
        out.push_str(&format!(
            "warn: some health checks cannot be excluded: no matches for {}\n",
            names.join(",")
        ));
    }
    if failed {
        out.push_str(&format!("{kind} check failed\n"));
        return text(StatusCode::INTERNAL_SERVER_ERROR, out);
    }
    if !verbose {
        return text(StatusCode::OK, "ok");
    }
    out.push_str(&format!("{kind} check passed\n"));
    text(StatusCode::OK, out)
}

/// The probe server's handler: `/healthz...` from `healthz`, `/readyz...` from `readyz`.
pub(crate) fn probe_handler(healthz: Checks, readyz: Checks) -> Handler {
    Arc::new(move |uri: &Uri| {
        healthz
            .respond("healthz", uri)
            .or_else(|| readyz.respond("readyz", uri))
            .unwrap_or_else(|| text(StatusCode::NOT_FOUND, "404 page not found\n"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn get(handler: &Handler, uri: &str) -> (u16, String) {
        let response = handler(&uri.parse().unwrap());
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn aggregate_verbose_exclude_and_sub_paths() {
        let healthz = Checks::default();
        let readyz = Checks::default();
        let handler = probe_handler(healthz.clone(), readyz.clone());

        // No checks: ping.
        assert_eq!(get(&handler, "/healthz").await, (200, "ok".into()));
        assert_eq!(
            get(&handler, "/healthz?verbose").await,
            (200, "[+]ping ok\nhealthz check passed\n".into())
        );

        readyz.add("a".into(), Arc::new(|| Ok(())));
        readyz.add("b".into(), Arc::new(|| Err("not yet".into())));
        assert_eq!(
            get(&handler, "/readyz").await,
            (
                500,
                "[+]a ok\n[-]b failed: reason withheld\nreadyz check failed\n".into()
            )
        );
        assert_eq!(
            get(&handler, "/readyz?verbose=1").await,
            (
                500,
                "[+]a ok\n[-]b failed: not yet\nreadyz check failed\n".into()
            )
        );
        assert_eq!(
            get(&handler, "/readyz?exclude=b&exclude=zz").await,
            (200, "ok".into())
        );
        assert_eq!(
            get(&handler, "/readyz?exclude=b&exclude=zz&verbose")
                .await
                .1,
            "[+]a ok\n[+]b excluded: ok\n\
             warn: some health checks cannot be excluded: no matches for \"zz\"\n\
             readyz check passed\n"
        );
        assert_eq!(get(&handler, "/readyz/a").await, (200, "ok".into()));
        assert_eq!(
            get(&handler, "/readyz/b").await,
            (500, "internal server error: not yet\n".into())
        );
        assert_eq!(get(&handler, "/readyz/c").await.0, 404);
        assert_eq!(get(&handler, "/readyzz").await.0, 404);
        assert_eq!(get(&handler, "/metrics").await.0, 404);

        // Same name: replaced.
        readyz.add("b".into(), Arc::new(|| Ok(())));
        assert_eq!(get(&handler, "/readyz/").await, (200, "ok".into()));
    }
}
