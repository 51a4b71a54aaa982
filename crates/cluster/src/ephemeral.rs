//! The ephemeral volume controller: for each `ephemeral` volume of a pod it creates the claim
//! `<pod>-<volume>` from the volume's `volumeClaimTemplate`, owned (as controller) by the pod,
//! so it is bound like any claim and deleted with the pod. The scheduler waits for it.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

/// Starts the controller.
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let watches = vec![Watched::mapped(&api.res.pods, |pod| {
        if obj::array(pod, "/spec/volumes")
            .iter()
            .any(|v| v.get("ephemeral").is_some())
        {
            vec![controller::key_of(pod)]
        } else {
            Vec::new()
        }
    })];
    let controller = Ephemeral {
        api: api.clone(),
        who: Actor::controller("ephemeral-volume-controller").reporting_as("ephemeral_volume"),
    };
    controller::spawn(&api.storage, watches, controller)
}

/// The claim name of a pod's ephemeral volume.
pub(crate) fn claim_name(pod: &Value, volume: &Value) -> String {
    format!("{}-{}", obj::name(pod), obj::str_at(volume, "/name"))
}

struct Ephemeral {
    api: Api,
    who: Actor,
}

impl Reconcile for Ephemeral {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let ns = Some(key.0.as_str());
        let pod = self.api.get(&self.api.res.pods, ns, &key.1)?;
        if obj::is_deleting(&pod) {
            return None;
        }
        let mut retry = None;
        for volume in obj::array(&pod, "/spec/volumes") {
            let Some(template) = volume.pointer("/ephemeral/volumeClaimTemplate") else {
                continue;
            };
            let name = claim_name(&pod, volume);
            if self.api.get(&self.api.res.pvcs, ns, &name).is_some() {
                continue;
            }
            let mut metadata = template
                .get("metadata")
                .cloned()
                .unwrap_or_else(|| json!({}));
            if let Some(m) = metadata.as_object_mut() {
                m.remove("generateName");
                m.remove("namespace");
                m.insert("name".into(), json!(name));
                m.insert("ownerReferences".into(), json!([obj::controller_ref(&pod)]));
            }
            let body = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": metadata,
                "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
            });
            if let Err(e) = self.api.create(&self.api.res.pvcs, ns, body, &self.who) {
                self.api.event(
                    &pod,
                    "Warning",
                    "FailedBinding",
                    "Create",
                    &format!("ephemeral volume {name}: {}", e.message),
                    &self.who,
                );
                retry = Some(Duration::from_secs(5));
            }
        }
        retry
    }
}
