//! `crt watch RESOURCE`: the seeds' "debugging your controller" on any resource. A cache, a
//! Kind source for the resource, a handler printing every create, update and delete, and a
//! queue whose items are printed as they are taken.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use controller_runtime::Request;
use controller_runtime::cache::{ByObject, Cache, CacheOptions};
use controller_runtime::handler::Funcs;
use controller_runtime::source::{self, Kind, Watch};
use controller_runtime::workqueue::{Queue, QueueConfig, Workqueue};
use kube_client::core::{ApiResource, DynamicObject, GroupVersionKind};
use tokio_util::sync::CancellationToken;

/// Arguments of `crt watch`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The resource: plural, singular, short name or kind (`configmaps`, `cm`, `ConfigMap`),
    /// optionally qualified by group (`deployments.apps`).
    pub resource: String,
    /// Watch only this namespace.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// The cluster to watch; without it, an embedded API server is started.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
}

/// Watches until Ctrl-C.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let (client, embedded) = match &args.kubeconfig {
        Some(path) => (client_from_file(path).await?, None),
        None => {
            let server = crt_apiserver::Server::start(Default::default())
                .await
                .context("starting the embedded API server")?;
            let path =
                std::env::temp_dir().join(format!("crt-watch-{}.kubeconfig", std::process::id()));
            server.write_kubeconfig(&path)?;
            println!(
                "embedded API server at {}; kubeconfig: {}",
                server.url(),
                path.display()
            );
            (client_from_file(&path).await?, Some(server))
        }
    };
    let (resource, namespaced) = resolve(&client, &args.resource).await?;
    let namespace = args.namespace.filter(|_| namespaced);

    let ctx = CancellationToken::new();
    let gvk = GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind);
    let options = CacheOptions::default().by_object::<DynamicObject>(
        &resource,
        ByObject::default()
            // One namespace, or (an empty set) every namespace.
            .with_namespaces(controller_runtime::cache::namespaces(namespace.clone())),
    );
    let cache = Cache::new(client, options);
    cache.start(ctx.clone());

    let queue: Arc<dyn Queue<Request>> = Workqueue::new(QueueConfig::default().name("watch"));
    let handler = Funcs::<DynamicObject>::new()
        .on_create(|e, q| {
            let initial = if e.is_in_initial_list {
                " (initial list)"
            } else {
                ""
            };
            println!("event: Create {}{initial}", key(&e.object));
            q.add(key(&e.object));
        })
        .on_update(|e, q| {
            println!("event: Update {}", key(&e.new));
            q.add(key(&e.new));
        })
        .on_delete(|e, q| {
            let unknown = if e.delete_state_unknown {
                " (final state unknown)"
            } else {
                ""
            };
            println!("event: Delete {}{unknown}", key(&e.object));
            q.add(key(&e.object));
        });
    let watch = source::watch(
        Kind::<DynamicObject>::new_with(cache.clone(), resource.clone()),
        handler,
        vec![],
    );
    watch.start(ctx.clone(), queue.clone()).await?;
    watch.wait_for_sync(ctx.clone()).await?;
    let scope = namespace
        .map(|ns| format!(" in namespace {ns}"))
        .unwrap_or_default();
    println!(
        "watching {} ({}/{}){scope}; synced",
        resource.plural, gvk.group, gvk.version
    );

    let printer = tokio::spawn({
        let queue = queue.clone();
        async move {
            while let Some(item) = queue.get().await {
                println!("queue: {item}");
                queue.done(&item);
            }
        }
    });
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    ctx.cancel();
    queue.shut_down();
    printer.await?;
    if let Some(server) = embedded {
        server.stop().await;
    }
    Ok(())
}

fn key(obj: &DynamicObject) -> Request {
    Request {
        namespace: obj.metadata.namespace.clone(),
        name: obj.metadata.name.clone().unwrap_or_default(),
    }
}

async fn client_from_file(path: &std::path::Path) -> anyhow::Result<kube_client::Client> {
    let kubeconfig = kube_client::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let config =
        kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube_client::Client::try_from(config)?)
}

/// Finds a resource by plural, singular, short name or kind (case-insensitive), optionally
/// `name.group`, in the server's discovery (preferred versions). Answers whether it is
/// namespaced.
async fn resolve(
    client: &kube_client::Client,
    wanted: &str,
) -> anyhow::Result<(ApiResource, bool)> {
    let wanted = wanted.to_lowercase();
    let (name, group) = match wanted.split_once('.') {
        Some((name, group)) => (name.to_string(), Some(group.to_string())),
        None => (wanted.clone(), None),
    };
    let mut versions = vec![(String::new(), "v1".to_string())];
    for g in client.list_api_groups().await.context("discovery")?.groups {
        if let Some(v) = g.preferred_version.or_else(|| g.versions.first().cloned()) {
            versions.push((g.name, v.version));
        }
    }
    for (g, version) in versions {
        if group.as_ref().is_some_and(|wanted| *wanted != g) {
            continue;
        }
        let list = if g.is_empty() {
            client.list_core_api_resources(&version).await
        } else {
            client
                .list_api_group_resources(&format!("{g}/{version}"))
                .await
        };
        let Ok(list) = list else { continue };
        for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
            let short = r.short_names.iter().flatten().any(|s| *s == name);
            if r.name == name || r.singular_name == name || r.kind.to_lowercase() == name || short {
                let gvk = GroupVersionKind::gvk(&g, &version, &r.kind);
                return Ok((
                    ApiResource::from_gvk_with_plural(&gvk, &r.name),
                    r.namespaced,
                ));
            }
        }
    }
    bail!("the server does not serve a resource named {wanted:?}")
}
