//! A generator: a controller that creates ConfigMaps and owns them.
//!
//! A *generator* is a ConfigMap labelled `example.crt.dev/generator=true` whose `data.count`
//! says how many ConfigMaps to generate. The controller keeps `<generator>-0` ..
//! `<generator>-<count-1>`, each with the generator as its controller owner. Because it `owns`
//! ConfigMaps, a change to a generated one (here: a delete) enqueues its generator, which
//! makes it again. Deleting the generator deletes the generated ones: the API server's garbage
//! collector follows the owner references.
//!
//! ```sh
//! cargo run -p controller-runtime --example generator      # on an embedded API server
//! KUBECONFIG=~/.kube/config cargo run -p controller-runtime --example generator
//! ```

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::ObjectKey;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::ListOptions;
use controller_runtime::client::{self, Client};
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::predicate::LabelSelectorPredicate;
use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube_client::api::{Api, DeleteParams, ListParams, PostParams};
use kube_core::{Resource, ResourceExt};
use tokio_util::sync::CancellationToken;

const GENERATOR: &str = "example.crt.dev/generator";
const GENERATED_BY: &str = "example.crt.dev/generated-by";

/// The reconciler: make the generated ConfigMaps match the generator's `data.count`.
async fn reconcile(
    generator: Arc<ConfigMap>,
    client: ReconcileContext<Client>,
) -> Result<Action, ReconcileError> {
    let (ns, name) = (
        generator.namespace().unwrap_or_default(),
        generator.name_any(),
    );
    let count: usize = generator
        .data
        .as_ref()
        .and_then(|d| d.get("count"))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let configmaps = client.objects::<ConfigMap>();

    // What exists, read from the cache (cheap: no API call).
    let options = ListOptions::default()
        .in_namespace(&ns)
        .labels(&format!("{GENERATED_BY}={name}"))
        .map_err(ReconcileError::new)?;
    let existing: Vec<String> = configmaps
        .list(&options)
        .await
        .map_err(ReconcileError::new)?
        .iter()
        .map(|cm| cm.name_any())
        .collect();
    let wanted: Vec<String> = (0..count).map(|i| format!("{name}-{i}")).collect();

    for child in wanted.iter().filter(|w| !existing.contains(w)) {
        match configmaps.create(&generated(&generator, child)).await {
            Ok(_) => println!("reconcile {ns}/{name}: created {child}"),
            // Created a moment ago, not in the cache yet: fine.
            Err(client::Error::AlreadyExists(_)) => {}
            Err(e) => return Err(ReconcileError::new(e)),
        }
    }
    for child in existing.iter().filter(|e| !wanted.contains(e)) {
        let key = ObjectKey::new(&ns, child);
        match configmaps.delete(&key, &DeleteParams::default()).await {
            Ok(()) => println!("reconcile {ns}/{name}: deleted {child}"),
            Err(client::Error::NotFound(_)) => {}
            Err(e) => return Err(ReconcileError::new(e)),
        }
    }
    Ok(Action::done())
}

/// A generated ConfigMap: labelled with its generator, and controlled by it.
fn generated(generator: &ConfigMap, name: &str) -> ConfigMap {
    let owner = OwnerReference {
        api_version: ConfigMap::api_version(&()).into_owned(),
        kind: ConfigMap::kind(&()).into_owned(),
        name: generator.name_any(),
        uid: generator.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: generator.namespace(),
            labels: Some(BTreeMap::from([(
                GENERATED_BY.into(),
                generator.name_any(),
            )])),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("generated".into(), "true".into())])),
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (kube, server) = common::cluster().await?;

    // 1. A manager (no metrics server, no leader election: one process, a short run).
    let mgr = Manager::new(
        kube.clone(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )?;

    // 2. The controller: `for_` generators (a label predicate picks them out of all
    //    ConfigMaps), `owns` the ConfigMaps it generates. The typed reconciler gets the
    //    generator itself, read from the cache.
    ControllerBuilder::new(&mgr)
        .for_(
            Input::<ConfigMap>::new()
                .with_predicate(LabelSelectorPredicate::parse(&format!("{GENERATOR}=true"))?),
        )
        .owns(Input::<ConfigMap>::new())
        .named("generator")
        .complete(Arc::new(mgr.client().clone()), reconcile)
        .await?;
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    // 3. Play: a generator of 3, then delete one generated ConfigMap and see it come back.
    let api: Api<ConfigMap> = Api::namespaced(kube, "default");
    let generator = ConfigMap {
        metadata: ObjectMeta {
            name: Some("greetings".into()),
            labels: Some(BTreeMap::from([(GENERATOR.into(), "true".into())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("count".into(), "3".into())])),
        ..Default::default()
    };
    api.create(&PostParams::default(), &generator).await?;
    let generated = ListParams::default().labels(&format!("{GENERATED_BY}=greetings"));
    let count = |n: usize| {
        let (api, generated) = (api.clone(), generated.clone());
        move || {
            let (api, generated) = (api.clone(), generated.clone());
            async move { api.list(&generated).await.is_ok_and(|l| l.items.len() == n) }
        }
    };
    common::wait_until("3 generated ConfigMaps", Duration::from_secs(20), count(3)).await?;
    println!("user: 3 ConfigMaps generated; deleting greetings-1");

    let old = api.get("greetings-1").await?.uid();
    api.delete("greetings-1", &DeleteParams::default()).await?;
    common::wait_until(
        "greetings-1 generated again",
        Duration::from_secs(20),
        || async {
            api.get_opt("greetings-1")
                .await
                .is_ok_and(|cm| cm.is_some_and(|cm| cm.uid() != old))
        },
    )
    .await?;
    println!("user: greetings-1 is back; deleting the generator");

    api.delete("greetings", &DeleteParams::default()).await?;
    common::wait_until(
        "generated ConfigMaps collected",
        Duration::from_secs(20),
        count(0),
    )
    .await?;
    println!("user: the garbage collector removed the generated ConfigMaps with their owner");

    // 4. Stop the manager (it waits for running reconciles), then the server.
    stop.cancel();
    running.await??;
    if let Some(server) = server {
        server.stop().await;
    }
    Ok(())
}
