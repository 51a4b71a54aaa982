//! A complete operator on controller-runtime-rs: the `Memo` custom resource and its
//! reconciler (`crt new` writes this crate under your crate name, API group and kind), and its
//! deployment manifests ([`manifests`]).
//!
//! A `Memo` asks for its text to be published and served: a ConfigMap of its own (named after
//! it, owned by it, so the garbage collector deletes it with the Memo), a Deployment of its own
//! serving that text over HTTP, and an entry in the namespace's shared `memo-index` ConfigMap,
//! which no owner reference can clean up: a finalizer removes the entry before the Memo goes.
//! Its status is ready only while all are in place and the Deployment is available.

// Clippy reads the repeated `type_ = ...` of `printcolumn(...)` as duplicated attributes.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;
use std::sync::Arc;

use controller_runtime::controller::ControllerOptions;
use controller_runtime::controllerutil::{self, OperationResult};
use controller_runtime::finalizer::{self, Event};
use controller_runtime::k8s_openapi::api::apps::v1::Deployment;
use controller_runtime::k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, Volume, VolumeMount,
};
use controller_runtime::k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, ObjectMeta,
};
use controller_runtime::leaderelection::LeaderElectionConfig;
use controller_runtime::prelude::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod manifests;

/// The finalizer that removes a Memo's entry from the index before the Memo is deleted.
pub const FINALIZER: &str = "memos.example.com/index";
/// The namespace's shared ConfigMap listing every Memo's text.
pub const INDEX: &str = "memo-index";
/// The label naming the Memo a server pod serves.
pub const SERVES_LABEL: &str = "example.com/memo";
/// The image of the server pods.
pub const SERVER_IMAGE: &str = "nginx:1.27";

/// What a user asks for: publish `text`.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Memo",
    namespaced,
    status = "MemoStatus",
    printcolumn(name = "Text", type_ = "string", json_path = ".spec.text"),
    printcolumn(name = "Ready", type_ = "boolean", json_path = ".status.ready")
)]
pub struct MemoSpec {
    /// The text to publish.
    pub text: String,
    /// Annotations of the pods serving the text (for a service mesh or a metrics scraper; a
    /// test scripts the simulated cluster's pods with them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_annotations: BTreeMap<String, String>,
}

/// What the operator reports back.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MemoStatus {
    /// The `metadata.generation` this status describes.
    pub observed_generation: Option<i64>,
    /// Whether the text is published in both places and its server is available.
    pub ready: bool,
}

/// What the reconciler shares between calls.
pub struct Context {
    /// The manager's client: reads from the cache, writes to the API server.
    pub client: Client,
}

/// Why a step of a reconcile failed; `?` turns it into the [`ReconcileError`] the controller
/// retries with backoff, its cause kept in the chain.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A create-or-update / create-or-patch failed.
    #[error("writing {0}")]
    Write(&'static str, #[source] controllerutil::Error),
    /// A client call failed.
    #[error("{0}")]
    Client(&'static str, #[source] controller_runtime::client::Error),
}

/// Registers the Memo controller with `mgr`. It honours the operations annotations
/// (`kubectl annotate memo NAME reconcile.crt.dev/paused=true` leaves a Memo alone,
/// `reconcile.crt.dev/requested-at=TOKEN` reconciles it now; see
/// [`controller_runtime::operations`]).
pub async fn add_controller(mgr: &Manager) -> Result<(), controller_runtime::builder::Error> {
    let ctx = Arc::new(Context {
        client: mgr.client().clone(),
    });
    ControllerBuilder::new(mgr)
        .for_(Input::<Memo>::new())
        .owns(Input::<ConfigMap>::new())
        .owns(Input::<Deployment>::new())
        .with_options(ControllerOptions::default().with_operations_annotations(true))
        .complete(ctx, reconcile)
        .await
}

/// The operator's leader election: a Lease named after it in `namespace`, the one it runs in
/// (so its RBAC for Leases is a Role there, not a ClusterRole), given up when it stops
/// gracefully so that another replica takes over at once.
pub fn leader_election(namespace: &str) -> LeaderElectionConfig {
    LeaderElectionConfig::default()
        .with_lease_name(manifests::NAME)
        .with_lease_namespace(namespace)
        .with_release_on_cancel(true)
}

/// Drives one Memo towards its spec under the finalizer: the library's finalizer helper adds
/// [`FINALIZER`] before any work, and once the Memo is being deleted it removes the index
/// entry and then the finalizer. Each step writes only when something differs from what it
/// wants.
pub async fn reconcile(
    memo: Arc<Memo>,
    ctx: ReconcileContext<Context>,
) -> Result<Action, ReconcileError> {
    let memos = ctx.client.objects::<Memo>();
    finalizer::finalizer(&memos, FINALIZER, memo, |event| async {
        match event {
            Event::Apply(memo) => apply(&ctx.client, &memo).await,
            Event::Cleanup(memo) => {
                let (ns, name) = (memo.namespace().unwrap_or_default(), memo.name_any());
                set_index_entry(&ctx.client, &ns, &name, None).await?;
                Ok(Action::done())
            }
        }
    })
    .await
    .map_err(ReconcileError::from)
}

/// Publishes a live Memo: its ConfigMap, its server, its index entry, then its status (the
/// Deployment's changes reconcile the Memo again: it is owned).
async fn apply(client: &Client, memo: &Memo) -> Result<Action, ReconcileError> {
    let (ns, name) = (memo.namespace().unwrap_or_default(), memo.name_any());
    let mut own = ConfigMap {
        metadata: meta(&ns, &name),
        ..Default::default()
    };
    let text = memo.spec.text.clone();
    controllerutil::create_or_update(&client.objects(), &mut own, |cm| {
        cm.data = Some([("text".to_string(), text)].into());
        controllerutil::set_controller_reference(memo, cm)?;
        Ok(())
    })
    .await
    .map_err(|e| Error::Write("the Memo's ConfigMap", e))?;
    let server = serve(client, memo).await?;
    set_index_entry(client, &ns, &name, Some(&memo.spec.text)).await?;

    let status = MemoStatus {
        observed_generation: memo.metadata.generation,
        ready: available(&server),
    };
    if memo.status.as_ref() != Some(&status) {
        let mut memo = memo.clone();
        memo.status = Some(status);
        client
            .objects::<Memo>()
            .update_status(&memo)
            .await
            .map_err(|e| Error::Client("writing the status", e))?;
    }
    Ok(Action::done())
}

/// Creates or updates the Memo's server: one nginx pod serving its ConfigMap's text as
/// `index.html`, with the Memo's pod annotations. Only the fields it owns are written, so the
/// API server's defaults stay and an unchanged Deployment is not written again.
async fn serve(client: &Client, memo: &Memo) -> Result<Deployment, Error> {
    let (ns, name) = (memo.namespace().unwrap_or_default(), memo.name_any());
    let labels = BTreeMap::from([(SERVES_LABEL.to_string(), name.clone())]);
    let annotations = memo.spec.pod_annotations.clone();
    let mut server = Deployment {
        metadata: meta(&ns, &name),
        ..Default::default()
    };
    controllerutil::create_or_update(&client.objects(), &mut server, |d| {
        let spec = &mut d.spec;
        spec.replicas = Some(1);
        spec.selector = LabelSelector {
            match_labels: Some(labels.clone()),
            ..Default::default()
        };
        let template = spec.template.metadata.get_or_insert_with(Default::default);
        template.labels = Some(labels.clone());
        template.annotations = (!annotations.is_empty()).then(|| annotations.clone());
        let pod = spec.template.spec.get_or_insert_with(Default::default);
        if pod.containers.is_empty() {
            pod.containers.push(Container {
                name: "server".into(),
                volume_mounts: Some(vec![VolumeMount {
                    name: "text".into(),
                    mount_path: "/usr/share/nginx/html".into(),
                    read_only: Some(true),
                    ..Default::default()
                }]),
                ..Default::default()
            });
        }
        pod.containers[0].image = Some(SERVER_IMAGE.into());
        if pod.volumes.as_ref().is_some_and(|v| !v.is_empty()) {
            controllerutil::set_controller_reference(memo, d)?;
            return Ok(());
        }
        pod.volumes = Some(vec![Volume {
            name: "text".into(),
            config_map: Some(ConfigMapVolumeSource {
                name: name.clone(),
                items: Some(vec![
                    controller_runtime::k8s_openapi::api::core::v1::KeyToPath {
                        key: "text".into(),
                        path: "index.html".into(),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        }]);
        controllerutil::set_controller_reference(memo, d)?;
        Ok(())
    })
    .await
    .map_err(|e| Error::Write("the Memo's server", e))?;
    Ok(server)
}

/// Whether the Deployment has rolled out its current spec and is `Available`.
fn available(d: &Deployment) -> bool {
    let Some(status) = &d.status else {
        return false;
    };
    status.observed_generation >= d.metadata.generation
        && (status.conditions.iter().flatten())
            .any(|c| c.type_.as_deref() == Some("Available") && c.status.as_deref() == Some("True"))
}

/// Sets (or with `None` removes) the Memo's entry in the namespace's index ConfigMap.
async fn set_index_entry(
    client: &Client,
    ns: &str,
    name: &str,
    text: Option<&str>,
) -> Result<OperationResult, Error> {
    let mut index = ConfigMap {
        metadata: meta(ns, INDEX),
        ..Default::default()
    };
    controllerutil::create_or_patch(&client.objects(), &mut index, |cm| {
        let data = cm.data.get_or_insert_with(Default::default);
        match text {
            Some(text) => data.insert(name.to_string(), text.to_string()),
            None => data.remove(name),
        };
        Ok(())
    })
    .await
    .map_err(|e| Error::Write("the index", e))
}

fn meta(ns: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: Some(ns.into()),
        name: Some(name.into()),
        ..Default::default()
    }
}
