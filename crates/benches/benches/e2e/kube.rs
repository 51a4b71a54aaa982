//! kube-runtime 5.0's contender, written as a kube-rs user writes it with the stable API:
//! `Controller::new(api, watcher::Config::default()).run(...)`.
//!
//! Default options: `watcher::Config::default()` (paginated list, then watch), the
//! controller's default config (unbounded concurrency). Best options: streaming lists.
//! In `owners` the reconciler reads children from a reflector's store, and that reflector's
//! stream triggers the controller (`owns_stream`, behind kube-runtime's
//! `unstable-runtime-stream-control`): kube-runtime's stable `owns` keeps its store to itself,
//! and a second reflector beside it races it (a reconcile triggered by `owns` can read the
//! child before the other reflector has it, and nothing triggers it again: the first version
//! of this bench saw 2 of 10 parents never converge that way).

use std::convert::Infallible;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_runtime::controller::{Action, Controller};
use kube_runtime::reflector::{self, ObjectRef, Store};
use kube_runtime::{WatchStreamExt, watcher};

use super::contender::{Tally, index, stamp, version};

struct Ctx {
    tally: Arc<Tally>,
    children: Option<Store<ConfigMap>>,
}

/// Runs the controller of scenario `bench` (no-op) or `owners` (parents owning children).
pub async fn run(client: kube_client::Client, best: bool, owners: bool, tally: Arc<Tally>) {
    let ns = if owners { "owners" } else { "bench" };
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    let mut config = watcher::Config::default();
    if best {
        config = config.streaming_lists();
    }
    if owners {
        let children = config.clone().labels("role=child");
        let (reader, writer) = reflector::store();
        let feed = reflector::reflector(writer, watcher(api.clone(), children)).applied_objects();
        let ctx = Arc::new(Ctx {
            tally,
            children: Some(reader),
        });
        Controller::new(api.clone(), config.labels("role=parent"))
            .owns_stream(feed)
            .run(reconcile_parent, error_policy, ctx)
            .for_each(|_| async {})
            .await;
    } else {
        let ctx = Arc::new(Ctx {
            tally,
            children: None,
        });
        Controller::new(api, config)
            .run(reconcile_object, error_policy, ctx)
            .for_each(|_| async {})
            .await;
    }
}

async fn reconcile_object(cm: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Infallible> {
    let name = cm.metadata.name.as_deref().unwrap_or_default();
    ctx.tally.record(index(name), version(&cm), stamp(&cm));
    Ok(Action::await_change())
}

async fn reconcile_parent(parent: Arc<ConfigMap>, ctx: Arc<Ctx>) -> Result<Action, Infallible> {
    let name = parent.metadata.name.as_deref().unwrap_or_default();
    let mut latest = 0;
    if let Some(children) = &ctx.children {
        for c in 0..2 {
            let key = ObjectRef::new(&format!("{name}-c{c}")).within("owners");
            if let Some(child) = children.get(&key) {
                latest = latest.max(stamp(&child));
            }
        }
    }
    ctx.tally.record(index(name), latest.max(1), latest);
    Ok(Action::await_change())
}

fn error_policy(_: Arc<ConfigMap>, _: &Infallible, _: Arc<Ctx>) -> Action {
    Action::await_change()
}
