//! Debugging your controller: see what a Kind source delivers, without writing a reconciler.
//!
//! A cache, a Kind source for ConfigMaps, a handler that logs every create, update and delete
//! with the object's name and puts a key on a queue, and a loop that prints the queue's items as
//! they are taken. It runs against the cluster `$KUBECONFIG` names, or, when that is unset, an
//! embedded API server it starts and changes a few ConfigMaps on, so there is something to see.
//!
//! ```sh
//! cargo run -p controller-runtime --example debug_source
//! KUBECONFIG=~/.kube/config cargo run -p controller-runtime --example debug_source
//! ```

use std::sync::Arc;
use std::time::Duration;

use controller_runtime::Request;
use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::handler::Funcs;
use controller_runtime::source::{self, Kind, Watch};
use controller_runtime::workqueue::{Queue, QueueConfig, Workqueue};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_core::ResourceExt;
use tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter("info").init();

    // 1. A client: the cluster named by $KUBECONFIG, or an embedded API server.
    let embedded = match std::env::var_os("KUBECONFIG") {
        Some(_) => None,
        None => Some(crt_apiserver::Server::start(Default::default()).await?),
    };
    let client = match &embedded {
        Some(server) => {
            let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig())?;
            kube_client::Client::try_from(
                kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                    .await?,
            )?
        }
        None => kube_client::Client::try_default().await?,
    };

    // 2. A cache, started; informers are created when sources ask for them.
    let ctx = CancellationToken::new();
    let cache = Cache::new(client.clone(), CacheOptions::default());
    cache.start(ctx.clone());

    // 3. A queue and a handler that logs each event and enqueues the object's key.
    let queue: Arc<dyn Queue<Request>> = Workqueue::new(QueueConfig::default().name("debug"));
    let key = |o: &ConfigMap| Request::new(o.namespace().unwrap_or_default(), o.name_any());
    let handler = Funcs::<ConfigMap>::new()
        .on_create(move |e, q| {
            tracing::info!(object = %e.object.name_any(), initial = e.is_in_initial_list, "Create");
            q.add(key(&e.object));
        })
        .on_update(move |e, q| {
            tracing::info!(object = %e.new.name_any(), "Update");
            q.add(key(&e.new));
        })
        .on_delete(move |e, q| {
            tracing::info!(object = %e.object.name_any(), state_unknown = e.delete_state_unknown, "Delete");
            q.add(key(&e.object));
        });

    // 4. The Kind source, started with the handler and the queue, then waited on.
    let watch = source::watch(Kind::<ConfigMap>::new(cache.clone()), handler, vec![]);
    watch.start(ctx.clone(), queue.clone()).await?;
    watch.wait_for_sync(ctx.clone()).await?;
    tracing::info!("source synced");

    // 5. Print what the queue hands out.
    let printer = tokio::spawn({
        let queue = queue.clone();
        async move {
            while let Some(item) = queue.get().await {
                tracing::info!(%item, "queue item taken");
                queue.done(&item);
            }
        }
    });

    match embedded {
        // On the embedded server, make some changes to watch, then stop.
        Some(server) => {
            let api: Api<ConfigMap> = Api::namespaced(client, "default");
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some("demo".into());
            api.create(&PostParams::default(), &cm).await?;
            api.patch(
                "demo",
                &PatchParams::default(),
                &Patch::Merge(serde_json::json!({"data": {"k": "v"}})),
            )
            .await?;
            api.delete("demo", &DeleteParams::default()).await?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            server.stop().await;
        }
        // On a real cluster, run until Ctrl-C.
        None => tokio::signal::ctrl_c().await?,
    }
    ctx.cancel();
    queue.shut_down();
    printer.await?;
    Ok(())
}
