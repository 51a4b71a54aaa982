//! The EndpointSlice and Endpoints controllers: a Service with a selector gets the pods it
//! selects that have an IP and have not ended, as upstream's controllers list them.
//!
//! - **EndpointSlices** (`<service>-<random>`, labelled `kubernetes.io/service-name` and
//!   `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`, owned by the
//!   Service): one slice per distinct set of resolved ports (a named `targetPort` resolves
//!   through each pod's container ports), each endpoint with its address, `nodeName`,
//!   `targetRef` and the conditions `ready` (ready and not terminating, or the Service
//!   publishes not-ready addresses), `serving` (ready) and `terminating`. A Service that
//!   selects nothing keeps one empty slice, as upstream's placeholder.
//! - **Endpoints** (named as the Service): one subset per port set, ready pods under
//!   `addresses` and the others under `notReadyAddresses`, terminating pods left out; it is
//!   deleted with its Service.
//!
//! Left out: topology hints, zones, dual stack, the 100-endpoint slice limit, mirroring of
//! selector-less Endpoints.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::api::{Actor, Api};
use crate::controller::{self, Key, Reconcile, Watched};
use crate::obj;

const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER: &str = "endpointslice-controller.k8s.io";
const HEADLESS: &str = "service.kubernetes.io/headless";

/// Starts the controllers (one loop serves both kinds).
pub(crate) fn start(api: &Api) -> Vec<JoinHandle<()>> {
    let lookup = api.clone();
    let watches = vec![
        Watched::itself(&api.res.services),
        // A pod concerns every Service of its namespace that selects it, or did.
        Watched::mapped(&api.res.pods, move |pod| {
            let ns = obj::namespace(pod);
            lookup
                .list(&lookup.res.services, Some(ns), None, None)
                .iter()
                .filter(|s| !obj::string_map(s, "/spec/selector").is_empty())
                .map(controller::key_of)
                .collect()
        }),
        Watched::mapped(&api.res.endpointslices, |slice| {
            match obj::labels(slice).get(SERVICE_NAME) {
                Some(svc) => vec![(obj::namespace(slice).to_string(), svc.clone())],
                None => Vec::new(),
            }
        }),
    ];
    let controller = Endpoints {
        api: api.clone(),
        slices: Actor::controller("endpointslice-controller"),
        endpoints: Actor::controller("endpoint-controller"),
    };
    controller::spawn(&api.storage, watches, controller)
}

struct Endpoints {
    api: Api,
    slices: Actor,
    endpoints: Actor,
}

/// One pod as an endpoint of the Service.
struct Member<'a> {
    pod: &'a Value,
    ip: &'a str,
    ready: bool,
    serving: bool,
    terminating: bool,
    /// The Service's ports resolved for this pod.
    ports: Vec<Value>,
}

impl Reconcile for Endpoints {
    fn reconcile(&mut self, key: &Key) -> Option<Duration> {
        let ns = Some(key.0.as_str());
        let Some(svc) = self.api.get(&self.api.res.services, ns, &key.1) else {
            // Gone: its slices go with it (owner references); the Endpoints is deleted.
            if self.api.get(&self.api.res.endpoints, ns, &key.1).is_some() {
                let _ = self.api.delete(
                    &self.api.res.endpoints,
                    ns,
                    &key.1,
                    None,
                    None,
                    &self.endpoints,
                );
            }
            return None;
        };
        let selector = obj::string_map(&svc, "/spec/selector");
        if selector.is_empty()
            || obj::str_at(&svc, "/spec/type") == "ExternalName"
            || obj::is_deleting(&svc)
        {
            return None;
        }
        let label_selector = selector
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut pods = self
            .api
            .list(&self.api.res.pods, ns, Some(label_selector), None);
        pods.sort_by(|a, b| obj::name(a).cmp(obj::name(b)));
        let publish = svc
            .pointer("/spec/publishNotReadyAddresses")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let members: Vec<Member> = pods
            .iter()
            .filter(|p| !obj::pod_terminal(p) && !obj::str_at(p, "/status/podIP").is_empty())
            .map(|pod| {
                let terminating = obj::is_deleting(pod);
                let ready = obj::pod_ready(pod);
                Member {
                    pod,
                    ip: obj::str_at(pod, "/status/podIP"),
                    ready: (ready || publish) && !terminating,
                    serving: ready || publish,
                    terminating,
                    ports: resolve_ports(&svc, pod),
                }
            })
            .collect();
        let a = self.sync_slices(&svc, &members);
        let b = self.sync_endpoints(&svc, &members);
        a.or(b)
    }
}

/// The Service's ports as endpoint ports of `pod` (a named target port it lacks is left out).
fn resolve_ports(svc: &Value, pod: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    for p in obj::array(svc, "/spec/ports") {
        let protocol = match obj::str_at(p, "/protocol") {
            "" => "TCP",
            proto => proto,
        };
        let port = match p.get("targetPort") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(name)) => match name.parse::<i64>() {
                Ok(n) => Some(n),
                Err(_) => obj::array(pod, "/spec/containers")
                    .iter()
                    .flat_map(|c| obj::array(c, "/ports"))
                    .find(|cp| {
                        obj::str_at(cp, "/name") == name
                            && match obj::str_at(cp, "/protocol") {
                                "" => "TCP",
                                x => x,
                            } == protocol
                    })
                    .and_then(|cp| obj::i64_at(cp, "/containerPort")),
            },
            _ => obj::i64_at(p, "/port"),
        };
        let Some(port) = port else { continue };
        let mut ep = json!({"name": obj::str_at(p, "/name"), "port": port, "protocol": protocol});
        if let Some(app) = p.get("appProtocol") {
            ep["appProtocol"] = app.clone();
        }
        out.push(ep);
    }
    out
}

impl Endpoints {
    fn labels(&self, svc: &Value) -> BTreeMap<String, String> {
        let mut labels = obj::labels(svc);
        if obj::str_at(svc, "/spec/clusterIP") == "None" {
            labels.insert(HEADLESS.into(), String::new());
        }
        labels
    }

    fn sync_slices(&self, svc: &Value, members: &[Member]) -> Option<Duration> {
        let ns = obj::namespace(svc);
        let res = &self.api.res.endpointslices;
        let mut groups: BTreeMap<String, (Value, Vec<Value>)> = BTreeMap::new();
        for m in members {
            let ports = json!(m.ports);
            let entry = groups
                .entry(ports.to_string())
                .or_insert_with(|| (ports.clone(), Vec::new()));
            entry.1.push(json!({
                "addresses": [m.ip],
                "conditions": {"ready": m.ready, "serving": m.serving, "terminating": m.terminating},
                "nodeName": obj::str_at(m.pod, "/spec/nodeName"),
                "targetRef": {
                    "kind": "Pod", "namespace": ns,
                    "name": obj::name(m.pod), "uid": obj::uid(m.pod),
                },
            }));
        }
        if groups.is_empty() {
            groups.insert(String::new(), (Value::Null, Vec::new()));
        }
        let mut existing: Vec<Value> = self
            .api
            .list(
                res,
                Some(ns),
                Some(format!(
                    "{SERVICE_NAME}={},{MANAGED_BY}={CONTROLLER}",
                    obj::name(svc)
                )),
                None,
            )
            .into_iter()
            .filter(|s| obj::controlled_by(s, svc))
            .collect();
        let mut labels = self.labels(svc);
        labels.insert(SERVICE_NAME.into(), obj::name(svc).into());
        labels.insert(MANAGED_BY.into(), CONTROLLER.into());
        let mut retry = None;
        for (ports, endpoints) in groups.into_values() {
            let same_ports = existing
                .iter()
                .position(|s| s.get("ports").cloned().unwrap_or(Value::Null) == ports)
                .or(if existing.is_empty() { None } else { Some(0) });
            let result = match same_ports {
                Some(i) => {
                    let slice = existing.remove(i);
                    let mut new = slice.clone();
                    new["endpoints"] = json!(endpoints);
                    new["ports"] = ports;
                    new["metadata"]["labels"] = json!(labels);
                    if new == slice {
                        continue;
                    }
                    self.api.update(res, Some(ns), None, new, &self.slices)
                }
                None => {
                    let body = json!({
                        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                        "metadata": {
                            "generateName": format!("{}-", obj::name(svc)),
                            "namespace": ns,
                            "labels": labels,
                            "ownerReferences": [obj::controller_ref(svc)],
                        },
                        "addressType": "IPv4",
                        "endpoints": endpoints,
                        "ports": ports,
                    });
                    self.api.create(res, Some(ns), body, &self.slices)
                }
            };
            if let Err(e) = result {
                tracing::debug!("writing the endpointslices of {}: {e}", obj::name(svc));
                retry = Some(Duration::from_millis(100));
            }
        }
        for stale in existing {
            let _ = self.api.delete(
                res,
                Some(ns),
                obj::name(&stale),
                None,
                Some(obj::uid(&stale)),
                &self.slices,
            );
        }
        retry
    }

    fn sync_endpoints(&self, svc: &Value, members: &[Member]) -> Option<Duration> {
        let ns = obj::namespace(svc);
        let res = &self.api.res.endpoints;
        let mut subsets: BTreeMap<String, (Value, Vec<Value>, Vec<Value>)> = BTreeMap::new();
        for m in members.iter().filter(|m| !m.terminating) {
            let ports: Vec<Value> = m
                .ports
                .iter()
                .map(|p| {
                    let mut p = p.clone();
                    if obj::str_at(&p, "/name").is_empty() {
                        p.as_object_mut().map(|o| o.remove("name"));
                    }
                    p
                })
                .collect();
            let ports = json!(ports);
            let entry = subsets
                .entry(ports.to_string())
                .or_insert_with(|| (ports.clone(), Vec::new(), Vec::new()));
            let address = json!({
                "ip": m.ip,
                "nodeName": obj::str_at(m.pod, "/spec/nodeName"),
                "targetRef": {
                    "kind": "Pod", "namespace": ns,
                    "name": obj::name(m.pod), "uid": obj::uid(m.pod),
                },
            });
            if m.ready {
                entry.1.push(address);
            } else {
                entry.2.push(address);
            }
        }
        let subsets: Vec<Value> = subsets
            .into_values()
            .map(|(ports, mut ready, mut not_ready)| {
                let by_ip = |a: &Value, b: &Value| obj::str_at(a, "/ip").cmp(obj::str_at(b, "/ip"));
                ready.sort_by(by_ip);
                not_ready.sort_by(by_ip);
                let mut s = json!({"ports": ports});
                if !ready.is_empty() {
                    s["addresses"] = json!(ready);
                }
                if !not_ready.is_empty() {
                    s["notReadyAddresses"] = json!(not_ready);
                }
                s
            })
            .collect();
        let labels = self.labels(svc);
        let result = match self.api.get(res, Some(ns), obj::name(svc)) {
            Some(current) => {
                let mut new = current.clone();
                if subsets.is_empty() {
                    new.as_object_mut().map(|o| o.remove("subsets"));
                } else {
                    new["subsets"] = json!(subsets);
                }
                if labels.is_empty() {
                    new["metadata"].as_object_mut().map(|m| m.remove("labels"));
                } else {
                    new["metadata"]["labels"] = json!(labels);
                }
                if new == current {
                    return None;
                }
                self.api.update(res, Some(ns), None, new, &self.endpoints)
            }
            None => {
                let mut body = json!({
                    "apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": obj::name(svc), "namespace": ns},
                });
                if !labels.is_empty() {
                    body["metadata"]["labels"] = json!(labels);
                }
                if !subsets.is_empty() {
                    body["subsets"] = json!(subsets);
                }
                self.api.create(res, Some(ns), body, &self.endpoints)
            }
        };
        match result {
            Ok(_) => None,
            Err(e) => {
                tracing::debug!("writing the endpoints of {}: {e}", obj::name(svc));
                Some(Duration::from_millis(100))
            }
        }
    }
}
