//! A metadata-only watch: react to Secrets without caching their data.
//!
//! A controller that only needs names, labels, annotations or owners of objects should not
//! cache whole objects: Secrets hold keys you would rather not keep in memory, and big
//! ConfigMaps cost memory for nothing. Watching `PartialObjectMeta<Secret>` instead of `Secret`
//! makes the informer ask the API server for metadata only (`PartialObjectMetadata` lists and
//! watches): the data never reaches this process.
//!
//! Here a controller flags Secrets that lack an `owner` label, reading only their metadata.
//! `Input::<Secret>::metadata()` is the Builder's way to say it; everywhere else,
//! `PartialObjectMeta<Secret>` goes where `Secret` would.
//!
//! ```sh
//! cargo run -p controller-runtime --example metadata_only
//! ```

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::ListOptions;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::reconcile::{Action, ReconcileError};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube_client::api::{Api, PostParams};
use kube_core::{PartialObjectMeta, ResourceExt};
use tokio_util::sync::CancellationToken;

/// The names flagged so far.
type Flagged = Arc<Mutex<Vec<String>>>;

/// The reconciler sees the Secret's metadata only: there is no `data` field to read.
async fn reconcile(
    secret: Arc<PartialObjectMeta<Secret>>,
    flagged: Flagged,
) -> Result<Action, ReconcileError> {
    let name = secret.name_any();
    match secret.labels().get("owner") {
        Some(owner) => println!("reconcile {name}: owned by {owner}"),
        None => {
            println!("reconcile {name}: no owner label, flagged");
            if let Ok(mut flagged) = flagged.lock() {
                flagged.push(name);
            }
        }
    }
    Ok(Action::done())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )?;

    // 1. `for_` Secrets, metadata only; the typed reconciler gets `PartialObjectMeta<Secret>`.
    let flagged = Flagged::default();
    ControllerBuilder::new(&mgr)
        .for_(Input::<Secret>::metadata())
        .complete(Arc::new(flagged.clone()), |secret, flagged| {
            reconcile(secret, (*flagged).clone())
        })
        .await?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    // 2. Two Secrets with a megabyte of data each, one labelled.
    let api: Api<Secret> = Api::namespaced(kube, "default");
    for (name, owner) in [("db-password", Some("team-a")), ("stray-token", None)] {
        let mut secret = Secret::default();
        secret.metadata.name = Some(name.into());
        secret.metadata.labels = owner.map(|o| BTreeMap::from([("owner".into(), o.into())]));
        let data = ByteString(vec![b'x'; 1 << 20]);
        secret.data = Some(BTreeMap::from([("blob".into(), data)]));
        api.create(&PostParams::default(), &secret).await?;
    }
    common::wait_until("stray-token flagged", Duration::from_secs(20), || async {
        flagged
            .lock()
            .is_ok_and(|f| f.contains(&"stray-token".into()))
    })
    .await?;

    // 3. The cache holds metadata only: list it through the client, as a reconciler would.
    let cached = mgr
        .client()
        .objects::<PartialObjectMeta<Secret>>()
        .list(&ListOptions::default().in_namespace("default"))
        .await?;
    let size: usize = cached
        .iter()
        .map(|s| serde_json::to_vec(&**s).map_or(0, |v| v.len()))
        .sum();
    println!(
        "cache: {} Secrets, {size} bytes of metadata in all; their 2 MiB of data stayed on the server",
        cached.len()
    );

    stop.cancel();
    running.await??;
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
