//! Our contender: a Manager and a Builder controller, as the README writes them.
//!
//! Default options: `ManagerOptions::default()` (metrics on a free port instead of 8080, which
//! the shared machine may have taken), one worker. Best options: compact storage, managedFields
//! stripped before caching, four workers. `CRT_E2E_OURS_SHARED=1` makes ours cache typed shared
//! objects instead of the default compact ones; `CRT_E2E_READ_MEMO=N` bounds the compact
//! stores' read memo at N objects (0: none; `Nf`: kept from the first read).

use std::sync::Arc;

use controller_runtime::ObjectKey;
use controller_runtime::builder::{ControllerBuilder, Input};
use controller_runtime::cache::{CacheOptions, ReadMemo, namespaces, strip_managed_fields};
use controller_runtime::client::Client;
use controller_runtime::controller::ControllerOptions;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::predicate::LabelSelectorPredicate;
use controller_runtime::reconcile::{Action, ReconcileContext, ReconcileError};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

use super::contender::{Tally, index, stamp, version};

struct Ctx {
    client: Client,
    tally: Arc<Tally>,
}

/// Runs the controller of scenario `bench` (no-op) or `owners` (parents owning children).
pub async fn run(client: kube_client::Client, best: bool, owners: bool, tally: Arc<Tally>) {
    let ns = if owners { "owners" } else { "bench" };
    let mut cache = CacheOptions::default().with_default_namespaces(namespaces([ns]));
    // The typed shared storage (the default before compact storage kept metadata), to compare.
    if std::env::var("CRT_E2E_OURS_SHARED").is_ok_and(|v| v == "1") {
        cache = cache.with_default_compact(false);
    }
    // The compact stores' read memo: `0` none, `N` at most N objects (4 KiB of JSON each),
    // `Nf` the same kept from the first read.
    if let Ok(v) = std::env::var("CRT_E2E_READ_MEMO") {
        let first = v.ends_with('f');
        if let Ok(n) = v.trim_end_matches('f').parse::<usize>() {
            let memo = ReadMemo::new(n, n * 4096);
            cache = cache.with_default_read_memo(if first { memo.from_first_read() } else { memo });
        }
    }
    if best {
        cache = cache
            .with_default_compact(true)
            .with_default_transform(strip_managed_fields());
    }
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Addr(([127, 0, 0, 1], 0).into()))
        .with_cache(cache);
    let mgr = Manager::new(client, options).expect("manager");
    let mut controller = ControllerOptions::default();
    if best {
        controller = controller.with_max_concurrent_reconciles(4);
    }
    let ctx = Arc::new(Ctx {
        client: mgr.client().clone(),
        tally,
    });
    let builder = ControllerBuilder::new(&mgr).with_options(controller);
    if owners {
        let parents = LabelSelectorPredicate::parse("role=parent").expect("selector");
        builder
            .for_(Input::<ConfigMap>::new().with_predicate(parents))
            .owns(Input::<ConfigMap>::new())
            .complete(ctx, reconcile_parent)
            .await
            .expect("controller");
    } else {
        builder
            .for_(Input::<ConfigMap>::new())
            .complete(ctx, reconcile_object)
            .await
            .expect("controller");
    }
    mgr.start(CancellationToken::new())
        .await
        .expect("manager run");
}

/// Scenarios 1 and 2: a no-op, recording the version it saw.
async fn reconcile_object(
    cm: Arc<ConfigMap>,
    ctx: ReconcileContext<Ctx>,
) -> Result<Action, ReconcileError> {
    let name = cm.metadata.name.as_deref().unwrap_or_default();
    ctx.tally.record(index(name), version(&cm), stamp(&cm));
    Ok(Action::done())
}

/// Scenarios 3 and 4: reads the parent's first two children from the cache.
async fn reconcile_parent(
    parent: Arc<ConfigMap>,
    ctx: ReconcileContext<Ctx>,
) -> Result<Action, ReconcileError> {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    let children = ctx.client.objects::<ConfigMap>();
    let mut latest = 0;
    for c in 0..2 {
        let key = ObjectKey::new("owners", format!("{name}-c{c}"));
        if let Ok(child) = children.get(&key).await {
            latest = latest.max(stamp(&child));
        }
    }
    ctx.tally.record(index(name), latest.max(1), latest);
    Ok(Action::done())
}
