//! Fault injection for client tests: close every watch, compact the watch history (forcing 410
//! Gone on resume), withhold streaming lists' initial-events-end bookmarks until a write, hold
//! every watch event back until released, and fail the next N requests with a chosen status. Stopping and restarting
//! the listener lives on [`crate::Server`] (`stop_listener`, `restart_listener`).

use std::sync::Arc;

use parking_lot::Mutex;

use crate::error::ApiError;
use crate::storage::Storage;

/// A handle to inject faults into a running server. Cheap to clone.
#[derive(Clone)]
pub struct Faults {
    storage: Storage,
    failing: Arc<Mutex<Failing>>,
}

#[derive(Default)]
struct Failing {
    remaining: u32,
    code: u16,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let failing = self.failing.lock();
        f.debug_struct("Faults")
            .field("fail_remaining", &failing.remaining)
            .field("fail_code", &failing.code)
            .finish()
    }
}

impl Faults {
    /// A handle injecting faults into `storage` and into the requests of the HTTP layer given
    /// it (see [`crate::http::AppState`]).
    pub fn new(storage: Storage) -> Self {
        Faults {
            storage,
            failing: Arc::default(),
        }
    }

    /// Ends every running watch; clients see their stream end and must re-watch.
    pub fn close_watches(&self) {
        self.storage.close_watches();
    }

    /// Forgets the watch history: resuming a watch (or continuing a list) from any older
    /// resourceVersion gets 410 Gone.
    pub fn compact(&self) {
        self.storage.compact();
    }

    /// While `on`, streaming lists (watches with `sendInitialEvents=true`) started meanwhile
    /// get their `k8s.io/initial-events-end` bookmark only after the next write to their
    /// resource, as a real kube-apiserver (1.28 with etcd 3.4) withholds it for a quiet resource
    /// until a write moves its watch cache. Turning it off sends every withheld bookmark.
    pub fn withhold_initial_events_end(&self, on: bool) {
        self.storage.withhold_initial_events_end(on);
    }

    /// While `on`, writes commit and are answered but their watch events are held back from
    /// every running watch, as when an informer lags behind the API server; turning it off
    /// delivers the held events in order. What a client test needs to show a read racing its
    /// own informer, deterministically.
    pub fn hold_watch_events(&self, on: bool) {
        self.storage.hold_watch_events(on);
    }

    /// The next `n` requests (health and `/version` requests excepted) fail with `status_code`,
    /// answered as a `Status` with the reason the real server uses for that code.
    pub fn fail_next(&self, n: u32, status_code: u16) {
        *self.failing.lock() = Failing {
            remaining: n,
            code: status_code,
        };
    }

    /// Takes one injected failure, if any is pending.
    pub(crate) fn take_failure(&self) -> Option<ApiError> {
        let mut failing = self.failing.lock();
        if failing.remaining == 0 {
            return None;
        }
        failing.remaining -= 1;
        Some(injected_error(failing.code))
    }
}

/// The `Status` the real server answers for `code`.
fn injected_error(code: u16) -> ApiError {
    let reason = match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    };
    ApiError::new(code, reason, format!("injected fault: {reason} ({code})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn injected_error_names_the_reason() {
        let e = injected_error(503);
        assert_eq!((e.code, e.reason.as_str()), (503, "ServiceUnavailable"));
        assert_eq!(injected_error(418).reason, "Unknown");
    }
}
