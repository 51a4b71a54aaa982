//! Volumes: a default StorageClass, the PersistentVolume controller (`persistent-volume-binder`)
//! and a simulated dynamic provisioner.
//!
//! - At start the cluster has kind's default class, `standard` (provisioner
//!   `rancher.io/local-path`, `WaitForFirstConsumer`, reclaim policy `Delete`, annotated
//!   `storageclass.kubernetes.io/is-default-class: "true"`), unless a class of that name exists.
//!   Manifests written for kind find the same class here.
//! - A claim without `storageClassName` gets the default class (the newest default, as
//!   upstream's retroactive default assignment does; its admission plugin is not run).
//! - A pending claim binds to an Available PersistentVolume of its class that is big enough
//!   and has its access modes (or that names it in `claimRef`); else, if its class has a
//!   provisioner other than `kubernetes.io/no-provisioner`, the simulated provisioner creates
//!   `pvc-<claim uid>` for it (a `hostPath` under `/var/local-path-provisioner`, annotated
//!   `pv.kubernetes.io/provisioned-by`) — for `WaitForFirstConsumer` only once the scheduler
//!   chose a node for a pod using it (`volume.kubernetes.io/selected-node`), and then with
//!   node affinity to that node. Binding writes what upstream's controller writes: the
//!   volume's `claimRef` and phase `Bound`, the claim's `volumeName`, phase `Bound`,
//!   capacity and access modes, and the annotations `pv.kubernetes.io/bind-completed` and
//!   `pv.kubernetes.io/bound-by-controller`.
//! - A bound volume whose claim is gone is `Released`, and deleted when its reclaim policy
//!   is `Delete`; a bound claim whose volume is gone is `Lost`.
//! - Events: `WaitForFirstConsumer`, `ExternalProvisioning`, `Provisioning`,
//!   `ProvisioningSucceeded`, `ProvisioningFailed`, `FailedBinding`, `ClaimLost`.
//!
//! Left out: volume expansion, snapshots, `Recycle`, label selectors on claims, the
//! protection finalizers, attach/detach and mounts.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;
use crate::quantity;

/// The annotation marking the default StorageClass.
pub(crate) const DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
/// The annotation naming the node the scheduler chose for a `WaitForFirstConsumer` claim.
pub(crate) const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner of the default class (kind's).
const PROVISIONER: &str = "rancher.io/local-path";
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
const PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";

/// Creates the default StorageClass and starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    default_class(api);
    let watches = vec![
        Watched::itself(&api.res.pvcs),
        Watched::itself(&api.res.pvs),
        // A claim that goes releases its volume.
        Watched::mapped(&api.res.pvcs, |pvc| {
            match obj::str_at(pvc, "/spec/volumeName") {
                "" => Vec::new(),
                pv => vec![(String::new(), pv.to_string())],
            }
        }),
        Watched::mapped(&api.res.pvs, |pv| {
            match obj::str_at(pv, "/spec/claimRef/name") {
                "" => Vec::new(),
                name => vec![(
                    obj::str_at(pv, "/spec/claimRef/namespace").to_string(),
                    name.to_string(),
                )],
            }
        }),
    ];
    let controller = Volumes {
        api: api.clone(),
        binder: Actor::controller("persistent-volume-binder")
            .reporting_as("persistentvolume-controller"),
        provisioner: Actor::new(
            "local-path-provisioner",
            "system:serviceaccount:local-path-storage:local-path-provisioner-service-account",
            &[
                "system:serviceaccounts",
                "system:serviceaccounts:local-path-storage",
            ],
            "rancher.io/local-path_local-path-provisioner",
        ),
        recorded: HashSet::new(),
    };
    controller::spawn(&api.storage, watches, controller)
}

/// Creates kind's `standard` StorageClass unless a class of that name exists.
fn default_class(api: &Api) {
    if api.get(&api.res.storageclasses, None, "standard").is_some() {
        return;
    }
    let body = json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS: "true"}},
        "provisioner": PROVISIONER,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    });
    let who = Actor::new(
        "kubectl-create",
        "kubernetes-admin",
        &["kubeadm:cluster-admins"],
        "",
    );
    if let Err(e) = api.create(&api.res.storageclasses, None, body, &who) {
        tracing::debug!("creating the default storage class: {e}");
    }
}

/// A claim's class: `spec.storageClassName`, else the beta annotation; `None` when neither
/// is set.
pub(crate) fn class_of(pvc: &Value) -> Option<&str> {
    match pvc
        .pointer("/spec/storageClassName")
        .and_then(Value::as_str)
    {
        Some(c) => Some(c),
        None => obj::annotation(pvc, "volume.beta.kubernetes.io/storage-class"),
    }
}

/// Whether a claim of `class` waits for a pod's node before it is provisioned.
pub(crate) fn waits_for_consumer(api: &Api, pvc: &Value) -> bool {
    class_of(pvc)
        .filter(|c| !c.is_empty())
        .and_then(|c| api.get(&api.res.storageclasses, None, c))
        .is_some_and(|sc| obj::str_at(&sc, "/volumeBindingMode") == "WaitForFirstConsumer")
}

struct Volumes {
    api: Api,
    binder: Actor,
    provisioner: Actor,
    /// The (claim uid, reason) of the Events recorded once.
    recorded: HashSet<(String, String)>,
}

impl Reconcile for Volumes {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        if key.0.is_empty() {
            self.volume(&key.1)
        } else {
            self.claim(key)
        }
    }
}

fn bytes(q: &str) -> i128 {
    quantity::milli(q).unwrap_or(0)
}

impl Volumes {
    fn event(&self, on: &Value, type_: &str, reason: &str, note: &str, who: &Actor) {
        self.api.event(on, type_, reason, reason, note, who);
    }

    /// Records an event of `reason` about `on` once.
    fn event_once(&mut self, on: &Value, type_: &str, reason: &str, note: &str) {
        if self
            .recorded
            .insert((obj::uid(on).to_string(), reason.to_string()))
        {
            self.api
                .event(on, type_, reason, reason, note, &self.binder);
        }
    }

    fn claim(&mut self, key: &Key) -> Option<Duration> {
        let ns = Some(key.0.as_str());
        let pvc = self.api.get(&self.api.res.pvcs, ns, &key.1)?;
        if obj::is_deleting(&pvc) {
            return None;
        }
        let Some(class) = class_of(&pvc) else {
            return self.assign_default_class(&pvc);
        };
        let volume_name = obj::str_at(&pvc, "/spec/volumeName");
        if !volume_name.is_empty() {
            let Some(pv) = self.api.get(&self.api.res.pvs, None, volume_name) else {
                return self.lose(&pvc);
            };
            return self.bind(&pvc, &pv);
        }
        let pvs = self.api.list(&self.api.res.pvs, None, None, None);
        if let Some(pv) = pvs.iter().find(|pv| {
            obj::str_at(pv, "/spec/claimRef/uid") == obj::uid(&pvc)
                || (obj::str_at(pv, "/spec/claimRef/uid").is_empty()
                    && obj::str_at(pv, "/spec/claimRef/name") == obj::name(&pvc)
                    && obj::str_at(pv, "/spec/claimRef/namespace") == key.0)
        }) {
            return self.bind(&pvc, pv);
        }
        let want = bytes(obj::str_at(&pvc, "/spec/resources/requests/storage"));
        let modes = obj::array(&pvc, "/spec/accessModes");
        let mut matching: Vec<&Value> = pvs
            .iter()
            .filter(|pv| {
                obj::str_at(pv, "/spec/claimRef/name").is_empty()
                    && !obj::is_deleting(pv)
                    && obj::str_at(pv, "/spec/storageClassName") == class
                    && bytes(obj::str_at(pv, "/spec/capacity/storage")) >= want
                    && modes
                        .iter()
                        .all(|m| obj::array(pv, "/spec/accessModes").contains(m))
            })
            .collect();
        matching.sort_by_key(|pv| bytes(obj::str_at(pv, "/spec/capacity/storage")));
        if let Some(pv) = matching.first() {
            return self.bind(&pvc, pv);
        }
        if class.is_empty() {
            self.event_once(
                &pvc,
                "Normal",
                "FailedBinding",
                "no persistent volumes available for this claim and no storage class is set",
            );
            return None;
        }
        let Some(sc) = self.api.get(&self.api.res.storageclasses, None, class) else {
            let note = format!("storageclass.storage.k8s.io \"{class}\" not found");
            self.event_once(&pvc, "Warning", "ProvisioningFailed", &note);
            return None;
        };
        let provisioner = obj::str_at(&sc, "/provisioner");
        if provisioner == NO_PROVISIONER || provisioner.is_empty() {
            return None;
        }
        let node = obj::annotation(&pvc, SELECTED_NODE).unwrap_or("");
        if obj::str_at(&sc, "/volumeBindingMode") == "WaitForFirstConsumer" && node.is_empty() {
            self.event_once(
                &pvc,
                "Normal",
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            );
            return None;
        }
        self.provision(&pvc, &sc, node)
    }

    /// A bound claim whose volume is gone is `Lost` (a claim naming a volume that never
    /// existed waits for it).
    fn lose(&mut self, pvc: &Value) -> Option<Duration> {
        if obj::annotation(pvc, BIND_COMPLETED).is_none()
            || obj::str_at(pvc, "/status/phase") == "Lost"
        {
            return None;
        }
        if let Err(e) = self.api.merge_patch(
            &self.api.res.pvcs,
            Some(obj::namespace(pvc)),
            obj::name(pvc),
            Some("status"),
            &json!({"status": {"phase": "Lost"}}),
            &self.binder,
        ) {
            tracing::debug!("marking claim {} lost: {e}", obj::name(pvc));
            return Some(Duration::from_secs(1));
        }
        self.event_once(
            pvc,
            "Warning",
            "ClaimLost",
            "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
        );
        None
    }

    /// Gives a claim without a class the newest default class.
    fn assign_default_class(&self, pvc: &Value) -> Option<Duration> {
        let mut defaults: Vec<Value> = self
            .api
            .list(&self.api.res.storageclasses, None, None, None)
            .into_iter()
            .filter(|sc| obj::annotation(sc, DEFAULT_CLASS) == Some("true"))
            .collect();
        defaults.sort_by_key(|sc| {
            (
                obj::str_at(sc, "/metadata/creationTimestamp").to_string(),
                obj::name(sc).to_string(),
            )
        });
        let class = defaults.last()?;
        let patch = json!({"spec": {"storageClassName": obj::name(class)}});
        if let Err(e) = self.api.merge_patch(
            &self.api.res.pvcs,
            Some(obj::namespace(pvc)),
            obj::name(pvc),
            None,
            &patch,
            &self.binder,
        ) {
            tracing::debug!("giving claim {} the default class: {e}", obj::name(pvc));
            return Some(Duration::from_secs(1));
        }
        None
    }

    /// Creates a volume for the claim, as the class's external provisioner would.
    fn provision(&self, pvc: &Value, sc: &Value, node: &str) -> Option<Duration> {
        let (ns, name, uid) = (obj::namespace(pvc), obj::name(pvc), obj::uid(pvc));
        let provisioner = obj::str_at(sc, "/provisioner");
        if obj::annotation(pvc, "volume.kubernetes.io/storage-provisioner") != Some(provisioner) {
            let patch = json!({"metadata": {"annotations": {
                "volume.beta.kubernetes.io/storage-provisioner": provisioner,
                "volume.kubernetes.io/storage-provisioner": provisioner,
            }}});
            match self.api.merge_patch(
                &self.api.res.pvcs,
                Some(ns),
                name,
                None,
                &patch,
                &self.binder,
            ) {
                Ok(updated) => self.event(
                    &updated,
                    "Normal",
                    "ExternalProvisioning",
                    &format!(
                        "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
                    ),
                    &self.binder,
                ),
                Err(e) => {
                    tracing::debug!("annotating claim {name}: {e}");
                    return Some(Duration::from_secs(1));
                }
            }
        }
        let pv_name = format!("pvc-{uid}");
        if self.api.get(&self.api.res.pvs, None, &pv_name).is_some() {
            return None;
        }
        self.event(
            pvc,
            "Normal",
            "Provisioning",
            &format!("External provisioner is provisioning volume for claim \"{ns}/{name}\""),
            &self.provisioner,
        );
        let mut spec = json!({
            "capacity": {"storage": obj::str_at(pvc, "/spec/resources/requests/storage")},
            "accessModes": obj::array(pvc, "/spec/accessModes"),
            "persistentVolumeReclaimPolicy": match obj::str_at(sc, "/reclaimPolicy") {
                "" => "Delete",
                p => p,
            },
            "storageClassName": obj::name(sc),
            "volumeMode": match obj::str_at(pvc, "/spec/volumeMode") {
                "" => "Filesystem",
                m => m,
            },
            "claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": ns, "name": name, "uid": uid,
                "resourceVersion": obj::str_at(pvc, "/metadata/resourceVersion"),
            },
            "hostPath": {
                "path": format!("/var/local-path-provisioner/{pv_name}_{ns}_{name}"),
                "type": "DirectoryOrCreate",
            },
        });
        if !node.is_empty() {
            spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{
                "matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                    "values": [node]}],
            }]}});
        }
        if let Some(opts) = sc.get("mountOptions") {
            spec["mountOptions"] = opts.clone();
        }
        let body = json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {PROVISIONED_BY: provisioner}},
            "spec": spec,
        });
        match self
            .api
            .create(&self.api.res.pvs, None, body, &self.provisioner)
        {
            Ok(_) => {
                self.event(
                    pvc,
                    "Normal",
                    "ProvisioningSucceeded",
                    &format!("Successfully provisioned volume {pv_name}"),
                    &self.provisioner,
                );
                None
            }
            Err(e) => {
                self.event(
                    pvc,
                    "Warning",
                    "ProvisioningFailed",
                    &format!(
                        "failed to provision volume with StorageClass \"{}\": {}",
                        obj::name(sc),
                        e.message
                    ),
                    &self.provisioner,
                );
                Some(Duration::from_secs(10))
            }
        }
    }

    /// Binds a claim and a volume (each side only if not yet done).
    fn bind(&self, pvc: &Value, pv: &Value) -> Option<Duration> {
        let claimed = obj::str_at(pv, "/spec/claimRef/uid");
        if !claimed.is_empty() && claimed != obj::uid(pvc) {
            // The volume is someone else's: the claim waits (upstream reports it lost).
            return None;
        }
        let ns = obj::namespace(pvc);
        let now = self.api.clock.stamp();
        let mut pv_patch = json!({});
        if claimed.is_empty() {
            pv_patch["metadata"] = json!({"annotations": {BOUND_BY_CONTROLLER: "yes"}});
            pv_patch["spec"] = json!({"claimRef": {
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": ns, "name": obj::name(pvc), "uid": obj::uid(pvc),
                "resourceVersion": obj::str_at(pvc, "/metadata/resourceVersion"),
            }});
        }
        if obj::changes(pv, &pv_patch)
            && let Err(e) = self.api.merge_patch(
                &self.api.res.pvs,
                None,
                obj::name(pv),
                None,
                &pv_patch,
                &self.binder,
            )
        {
            tracing::debug!("binding volume {}: {e}", obj::name(pv));
            return Some(Duration::from_secs(1));
        }
        if obj::str_at(pv, "/status/phase") != "Bound"
            && let Err(e) = self.api.merge_patch(
                &self.api.res.pvs,
                None,
                obj::name(pv),
                Some("status"),
                &json!({"status": {"phase": "Bound", "lastPhaseTransitionTime": now}}),
                &self.binder,
            )
        {
            tracing::debug!("marking volume {} bound: {e}", obj::name(pv));
            return Some(Duration::from_secs(1));
        }
        let mut annotations = json!({BIND_COMPLETED: "yes"});
        if obj::str_at(pvc, "/spec/volumeName").is_empty() {
            annotations[BOUND_BY_CONTROLLER] = json!("yes");
        }
        let patch = json!({
            "metadata": {"annotations": annotations},
            "spec": {"volumeName": obj::name(pv)},
        });
        if obj::annotation(pvc, BIND_COMPLETED).is_none() || obj::changes(pvc, &patch) {
            let mut patch = patch;
            if obj::annotation(pvc, BIND_COMPLETED).is_some() {
                patch["metadata"] = json!({});
            }
            if let Err(e) = self.api.merge_patch(
                &self.api.res.pvcs,
                Some(ns),
                obj::name(pvc),
                None,
                &patch,
                &self.binder,
            ) {
                tracing::debug!("binding claim {}: {e}", obj::name(pvc));
                return Some(Duration::from_secs(1));
            }
        }
        let status = json!({"status": {
            "phase": "Bound",
            "accessModes": obj::array(pv, "/spec/accessModes"),
            "capacity": pv.pointer("/spec/capacity").cloned().unwrap_or_else(|| json!({})),
        }});
        if obj::changes(pvc, &status)
            && let Err(e) = self.api.merge_patch(
                &self.api.res.pvcs,
                Some(ns),
                obj::name(pvc),
                Some("status"),
                &status,
                &self.binder,
            )
        {
            tracing::debug!("marking claim {} bound: {e}", obj::name(pvc));
            return Some(Duration::from_secs(1));
        }
        None
    }

    /// Keeps a volume's phase: `Available` without a claim, `Released` once its claim is
    /// gone (then deleted under reclaim policy `Delete`).
    fn volume(&self, name: &str) -> Option<Duration> {
        let pv = self.api.get(&self.api.res.pvs, None, name)?;
        if obj::is_deleting(&pv) {
            return None;
        }
        let phase = obj::str_at(&pv, "/status/phase");
        let claim_ns = obj::str_at(&pv, "/spec/claimRef/namespace");
        let claim_name = obj::str_at(&pv, "/spec/claimRef/name");
        let want = if claim_name.is_empty() {
            "Available"
        } else {
            let claim = self.api.get(&self.api.res.pvcs, Some(claim_ns), claim_name);
            let claim_uid = obj::str_at(&pv, "/spec/claimRef/uid");
            match claim {
                Some(c) if claim_uid.is_empty() || obj::uid(&c) == claim_uid => {
                    // The claim's side binds it.
                    return None;
                }
                _ if phase == "Bound" || phase == "Released" => "Released",
                // Provisioned for a claim that is already gone.
                _ if obj::annotation(&pv, PROVISIONED_BY).is_some() => "Released",
                _ => return None,
            }
        };
        if want != phase
            && let Err(e) = self.api.merge_patch(
                &self.api.res.pvs,
                None,
                name,
                Some("status"),
                &json!({"status": {"phase": want,
                    "lastPhaseTransitionTime": self.api.clock.stamp()}}),
                &self.binder,
            )
        {
            tracing::debug!("updating volume {name} phase: {e}");
            return Some(Duration::from_secs(1));
        }
        if want == "Released"
            && obj::str_at(&pv, "/spec/persistentVolumeReclaimPolicy") == "Delete"
            && let Err(e) = self.api.delete(
                &self.api.res.pvs,
                None,
                name,
                None,
                Some(obj::uid(&pv)),
                &self.provisioner,
            )
        {
            tracing::debug!("deleting released volume {name}: {e}");
        }
        None
    }
}
