//! Many clusters, one manager: a hub and three member clusters, all embedded API servers.
//!
//! A `Fleet` provider starts the members in this process. One controller, declared once,
//! runs in each member: it copies every member ConfigMap labelled `fleet=yes` into the hub
//! (`default/<member>.<name>`), a cross-cluster write with the request's own cluster at hand.
//! Members join and leave while the manager runs: `member-3` joins late and is reconciled at
//! once, `member-2` leaves and nothing of it is reconciled afterwards.
//!
//! ```sh
//! cargo run -p controller-runtime --example multicluster
//! ```

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::envtest::Environment;
use controller_runtime::manager::{BindAddress, Manager as LocalManager, ManagerOptions};
use controller_runtime::multicluster::providers::Fleet;
use controller_runtime::multicluster::{ClusterRequest, ControllerBuilder, Manager};
use controller_runtime::reconcile::Action;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, Patch, PatchParams, PostParams};
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let hub = Environment::new().start().await?;
    let fleet = Fleet::new();
    fleet.add_members(2).await?;
    let options = ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled);
    let mgr = Manager::new(
        LocalManager::new(hub.client(), options)?,
        Some(Arc::new(fleet.clone())),
    )?;

    let hub_client = hub.client();
    ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .complete(move |req: ClusterRequest, cluster, _ctx| {
            let hub = Api::<ConfigMap>::namespaced(hub_client.clone(), "default");
            async move {
                // Read in the member's cache, write to the hub.
                let Ok(cm) = cluster.client().objects::<ConfigMap>().get(&req.key).await else {
                    return Ok(Action::done());
                };
                if cm.metadata.labels.as_ref().and_then(|l| l.get("fleet")) != Some(&"yes".into()) {
                    return Ok(Action::done());
                }
                let name = format!("{}.{}", req.cluster, req.key.name);
                let copy = serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": { "name": name }, "data": cm.data,
                });
                let params = PatchParams::apply("fleet-copier").force();
                hub.patch(&name, &params, &Patch::Apply(copy)).await?;
                println!("copied {req} to the hub");
                Ok(Action::done())
            }
        })
        .await?;

    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });
    let hub_cms = Api::<ConfigMap>::namespaced(hub.client(), "default");
    let copied = |name: &'static str| {
        let hub_cms = hub_cms.clone();
        move || {
            let hub_cms = hub_cms.clone();
            async move { hub_cms.get_opt(name).await.ok().flatten().is_some() }
        }
    };

    create(&fleet.client("member-1").unwrap(), "settings").await?;
    common::wait_until(
        "member-1's copy",
        Duration::from_secs(30),
        copied("member-1.settings"),
    )
    .await?;

    // A member joins at run time...
    let member_3 = fleet.add_member("member-3").await?;
    create(&member_3, "settings").await?;
    common::wait_until(
        "member-3's copy",
        Duration::from_secs(30),
        copied("member-3.settings"),
    )
    .await?;
    println!("engaged: {:?}", mgr.clusters());

    // ...and one leaves: disengaged (its watches, queue lane and cache gone), then stopped.
    fleet.remove_member("member-2").await?;
    println!("after member-2 left: {:?}", mgr.clusters());

    stop.cancel();
    running.await??;
    fleet.stop().await?;
    hub.stop().await?;
    Ok(())
}

/// Creates a ConfigMap `name` labelled `fleet=yes` in `default`.
async fn create(client: &kube_client::Client, name: &str) -> Result<(), kube_client::Error> {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.metadata.labels = Some(BTreeMap::from([("fleet".into(), "yes".into())]));
    cm.data = Some(BTreeMap::from([("color".into(), "blue".into())]));
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await?;
    Ok(())
}
