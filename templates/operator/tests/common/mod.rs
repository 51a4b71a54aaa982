//! What the operator's test files share (`mod common;` in each).

use std::future::Future;
use std::time::Duration;

/// Polls `check` until it returns `Some`; fails the test after 30 s (a hang, not a slow run).
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let poll = async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), poll)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting until {what}"))
}
