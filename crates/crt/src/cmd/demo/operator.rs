//! The operator: for each `Greeting`, keep `spec.replicas` ConfigMaps carrying `spec.message`,
//! report what it sees in the status, record what it changed as Events, and clean up through a
//! finalizer.
//!
//! This is the part an operator's author writes. Everything else (watching, caching, queueing,
//! retrying) is the runtime's, wired by the Builder in [`super::run`].

use std::collections::BTreeMap;
use std::sync::Arc;

use controller_runtime::ObjectKey;
use controller_runtime::cache::ListOptions;
use controller_runtime::client::{self, Client};
use controller_runtime::finalizer::{self, Event};
use controller_runtime::reconcile::{self, Action, ReconcileContext, ReconcileError, Reconciler};
use controller_runtime::recorder::{EventRecord, Recorder, Reporter};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube_client::api::{DeleteParams, Patch, PatchParams};
use kube_client::core::{Resource, ResourceExt};
use serde_json::json;

use super::crd::{Condition, Greeting, GreetingStatus};
use super::flow::{Notes, Stats};

/// The finalizer the operator puts on every Greeting it has worked on.
pub const FINALIZER: &str = "demo.crt.dev/cleanup";
/// The label naming a child's Greeting; the operator lists children by it.
pub const GREETING_LABEL: &str = "demo.crt.dev/greeting";
/// The label every child carries; the cache holds only ConfigMaps that have it.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by=crt-demo";

/// What every reconcile shares.
struct Ctx {
    client: Client,
    notes: Arc<Notes>,
    stats: Arc<Stats>,
    /// Writes `events.k8s.io/v1` Events about Greetings (`kubectl describe greeting` shows them).
    recorder: Recorder,
}

/// The operator's reconciler: reads the Greeting from the cache (a request for one that is gone
/// is done at once) and runs [`reconcile()`] on it. It records what it does in `notes`.
pub fn reconciler(
    client: &Client,
    notes: Arc<Notes>,
    stats: Arc<Stats>,
) -> impl Reconciler + use<> {
    let ctx = Arc::new(Ctx {
        client: client.clone(),
        notes,
        stats,
        recorder: Recorder::new(
            client.kube_client().clone(),
            Reporter::new("greeting-controller"),
        ),
    });
    reconcile::for_object(client, (), ctx, reconcile)
}

/// One reconcile of one Greeting, under the finalizer: the finalizer helper adds
/// [`FINALIZER`] before any work, and once the Greeting is being deleted it calls the cleanup
/// and then removes the finalizer, which lets the API server delete the object.
async fn reconcile(
    greeting: Arc<Greeting>,
    ctx: ReconcileContext<Ctx>,
) -> Result<Action, ReconcileError> {
    let meta = greeting.meta();
    if meta.deletion_timestamp.is_none() && !greeting.finalizers().iter().any(|f| f == FINALIZER) {
        ctx.notes.add(format!("add finalizer {FINALIZER}"));
    }
    let greetings = ctx.client.objects::<Greeting>();
    let action = finalizer::finalizer(&greetings, FINALIZER, greeting, |event| async {
        match event {
            Event::Apply(g) => apply(&g, &ctx).await,
            Event::Cleanup(g) => cleanup(&g, &ctx).await,
        }
    })
    .await?;
    Ok(action)
}

/// The children's names: `<greeting>-0` .. `<greeting>-<replicas-1>`.
fn child_name(greeting: &str, index: i32) -> String {
    format!("{greeting}-{index}")
}

/// The Greeting's children as the cache sees them, by name.
async fn children(
    g: &Greeting,
    ctx: &Ctx,
) -> Result<BTreeMap<String, Arc<ConfigMap>>, ReconcileError> {
    let options = ListOptions::default()
        .in_namespace(g.namespace().unwrap_or_default())
        .labels(&format!("{GREETING_LABEL}={}", g.name_any()))
        .map_err(ReconcileError::new)?;
    let uid = g.uid();
    let list = ctx
        .client
        .objects::<ConfigMap>()
        .list(&options)
        .await
        .map_err(ReconcileError::new)?;
    Ok(list
        .into_iter()
        // Only ours: a Greeting deleted and created again under the same name has a new uid,
        // and the old one's children are the garbage collector's.
        .filter(|cm| {
            cm.owner_references()
                .iter()
                .any(|o| Some(&o.uid) == uid.as_ref())
        })
        .map(|cm| (cm.name_any(), cm))
        .collect())
}

/// Makes the children match the spec, then reports what the cache showed in the status.
async fn apply(g: &Greeting, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let (ns, name) = (g.namespace().unwrap_or_default(), g.name_any());
    let wanted = g.spec.replicas.max(0);
    let existing = children(g, ctx).await?;
    let configmaps = ctx.client.objects::<ConfigMap>();

    let mut ready = 0;
    // What this reconcile changed, for the notes and the Event.
    let mut actions = Vec::new();
    for index in 0..wanted {
        let child = child_name(&name, index);
        match existing.get(&child) {
            None => {
                match configmaps.create(&new_child(g, &child)).await {
                    Ok(_) => {
                        Stats::bump(&ctx.stats.created);
                        actions.push(("create", child.clone()));
                    }
                    // The cache has not seen our create of a moment ago yet: its event will
                    // bring us back.
                    Err(client::Error::AlreadyExists(_)) => {}
                    Err(e) => return Err(ReconcileError::new(e)),
                }
            }
            Some(cm) if message_of(cm) != Some(g.spec.message.as_str()) => {
                let patch = Patch::Merge(json!({ "data": { "message": g.spec.message } }));
                configmaps
                    .patch(
                        &ObjectKey::new(&ns, &child),
                        &patch,
                        &PatchParams::default(),
                    )
                    .await
                    .map_err(ReconcileError::new)?;
                Stats::bump(&ctx.stats.updated);
                actions.push(("update", child.clone()));
            }
            Some(_) => ready += 1,
        }
    }
    for (child, _) in existing
        .iter()
        .filter(|(n, _)| !wanted_name(&name, n, wanted))
    {
        delete_child(&configmaps, &ns, child, ctx).await?;
        actions.push(("delete", child.clone()));
    }
    record(g, ctx, &actions).await;

    // The status says what was observed before this reconcile's changes; the changes come back
    // as events on the children, and the reconcile they cause reports them.
    let observed = existing
        .keys()
        .filter(|n| wanted_name(&name, n, wanted))
        .count() as i32;
    let status = status_for(g, observed, ready, wanted);
    // Skip the write when the status already says so. The cached Greeting shows this
    // process's last status write: the cache's reads wait for the client's own writes
    // (`ReadYourWrites`, on by default), so a stale cache cannot hide a newer status.
    if g.status.as_ref() != Some(&status) {
        let greetings = ctx.client.objects::<Greeting>();
        greetings
            .patch_status(
                &ObjectKey::new(&ns, &name),
                &Patch::Merge(json!({ "status": status })),
                &PatchParams::default(),
            )
            .await
            .map_err(ReconcileError::new)?;
        Stats::bump(&ctx.stats.updated);
        let state = status.conditions[0].status.clone();
        ctx.notes
            .add(format!("status {ready}/{wanted} ready, Ready={state}"));
    }
    Ok(Action::done())
}

/// Notes what a reconcile changed, and tells it in an Event about the Greeting. A failed Event
/// is logged, not an error: the work itself was done.
async fn record(g: &Greeting, ctx: &Ctx, actions: &[(&str, String)]) {
    if actions.is_empty() {
        return;
    }
    for (verb, child) in actions {
        ctx.notes.add(format!("{verb} {child}"));
    }
    let told: Vec<String> = actions.iter().map(|(v, c)| format!("{v}d {c}")).collect();
    let event = EventRecord::normal("ConfigMapsSynced", "Reconcile").note(told.join(", "));
    match ctx.recorder.publish_for(&event, g).await {
        Ok(()) => Stats::bump(&ctx.stats.recorded),
        Err(e) => tracing::warn!(error = %e, "recording an Event failed"),
    }
}

/// The finalizer's cleanup: delete every child. (Their owner references would let the garbage
/// collector do it too; the finalizer shows the explicit way, which also works for what an
/// owner reference cannot reach.)
async fn cleanup(g: &Greeting, ctx: &Ctx) -> Result<Action, ReconcileError> {
    let configmaps = ctx.client.objects::<ConfigMap>();
    let ns = g.namespace().unwrap_or_default();
    for child in children(g, ctx).await?.keys() {
        delete_child(&configmaps, &ns, child, ctx).await?;
        ctx.notes.add(format!("delete {child}"));
    }
    ctx.notes
        .add(format!("cleanup done, remove finalizer {FINALIZER}"));
    Ok(Action::done())
}

async fn delete_child(
    configmaps: &client::Objects<ConfigMap>,
    ns: &str,
    child: &str,
    ctx: &Ctx,
) -> Result<(), ReconcileError> {
    match configmaps
        .delete(&ObjectKey::new(ns, child), &DeleteParams::default())
        .await
    {
        Ok(()) => Stats::bump(&ctx.stats.deleted),
        Err(client::Error::NotFound(_)) => {}
        Err(e) => return Err(ReconcileError::new(e)),
    }
    Ok(())
}

/// Whether `child` is one of the `wanted` children of `greeting`.
fn wanted_name(greeting: &str, child: &str, wanted: i32) -> bool {
    child
        .strip_prefix(greeting)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|index| index.parse::<i32>().ok())
        .is_some_and(|index| (0..wanted).contains(&index))
}

fn message_of(cm: &ConfigMap) -> Option<&str> {
    cm.data.as_ref()?.get("message").map(String::as_str)
}

/// A child ConfigMap: labelled for the cache and the list, controlled by its Greeting (so a
/// change to it enqueues the Greeting, and the garbage collector removes it with its owner).
fn new_child(g: &Greeting, name: &str) -> ConfigMap {
    let (key, value) = MANAGED_BY.split_once('=').unwrap_or_default();
    let labels = BTreeMap::from([
        (key.to_string(), value.to_string()),
        (GREETING_LABEL.to_string(), g.name_any()),
    ]);
    let owner = OwnerReference {
        api_version: Greeting::api_version(&()).into_owned(),
        kind: Greeting::kind(&()).into_owned(),
        name: g.name_any(),
        uid: g.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: g.namespace(),
            labels: Some(labels),
            owner_references: Some(vec![owner]),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "message".to_string(),
            g.spec.message.clone(),
        )])),
        ..Default::default()
    }
}

/// The status for what was observed; the Ready condition keeps its transition time while its
/// status does not change.
fn status_for(g: &Greeting, observed: i32, ready: i32, wanted: i32) -> GreetingStatus {
    let is_ready = observed == wanted && ready == wanted;
    let (state, reason, message) = if is_ready {
        (
            "True",
            "AllReplicasReady",
            format!("{ready} of {wanted} ConfigMaps carry the message"),
        )
    } else {
        (
            "False",
            "Progressing",
            format!("{ready} of {wanted} ConfigMaps carry the message"),
        )
    };
    let previous = g
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    let last_transition_time = match previous {
        Some(c) if c.status == state => c.last_transition_time.clone(),
        _ => now(),
    };
    GreetingStatus {
        observed_generation: g.meta().generation,
        replicas: observed,
        ready_replicas: ready,
        conditions: vec![Condition {
            type_: "Ready".into(),
            status: state.into(),
            reason: reason.into(),
            message,
            observed_generation: g.meta().generation,
            last_transition_time,
        }],
    }
}

/// Now, in the RFC 3339 form Kubernetes writes times in.
fn now() -> String {
    serde_json::to_value(Time(k8s_openapi::jiff::Timestamp::now()))
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
