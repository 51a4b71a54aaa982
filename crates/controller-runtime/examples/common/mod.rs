//! What every example needs first: a cluster. The one `$KUBECONFIG` names, or else an embedded
//! API server started in this process (no cluster, no download), so each example runs as is.
//!
//! Not an example itself: each example includes it with `mod common;`.

#![allow(dead_code)]

use std::time::{Duration, Instant};

/// A kube-client, and the embedded server behind it when there is one (keep it alive; stop it
/// at the end).
pub async fn cluster()
-> Result<(kube_client::Client, Option<crt_apiserver::Server>), Box<dyn std::error::Error>> {
    if std::env::var_os("KUBECONFIG").is_some() {
        println!("using the cluster $KUBECONFIG names");
        return Ok((kube_client::Client::try_default().await?, None));
    }
    let server = crt_apiserver::Server::start(Default::default()).await?;
    println!("started an embedded API server at {}", server.url());
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig())?;
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok((kube_client::Client::try_from(config)?, Some(server)))
}

/// Polls `check` every 50 ms until it holds; an error after `timeout` names `what`.
pub async fn wait_until<F, Fut>(
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<(), Box<dyn std::error::Error>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    while !check().await {
        if Instant::now() > deadline {
            return Err(format!("timed out after {timeout:?} waiting for: {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
