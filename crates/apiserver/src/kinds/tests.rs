//! The discovery of the built-in kinds against a golden table written from a kube-apiserver
//! 1.33's `kubectl api-resources -o wide` (and its aggregated discovery for subresources).

use serde_json::Value;

use crate::discovery;
use crate::resource::ResourceInfo;

/// `NAME SHORTNAMES APIVERSION NAMESPACED KIND VERBS CATEGORIES SUBRESOURCES` with `-` for an
/// empty column, lists comma-separated; in the order a 1.33 server's aggregated discovery lists
/// them (core, then the groups in the server's order).
const GOLDEN: &str = "
bindings - v1 true Binding create - -
componentstatuses cs v1 false ComponentStatus get,list - -
configmaps cm v1 true ConfigMap create,delete,deletecollection,get,list,patch,update,watch - -
endpoints ep v1 true Endpoints create,delete,deletecollection,get,list,patch,update,watch - -
events ev v1 true Event create,delete,deletecollection,get,list,patch,update,watch - -
limitranges limits v1 true LimitRange create,delete,deletecollection,get,list,patch,update,watch - -
namespaces ns v1 false Namespace create,delete,get,list,patch,update,watch - finalize,status
nodes no v1 false Node create,delete,deletecollection,get,list,patch,update,watch - proxy,status
persistentvolumeclaims pvc v1 true PersistentVolumeClaim create,delete,deletecollection,get,list,patch,update,watch - status
persistentvolumes pv v1 false PersistentVolume create,delete,deletecollection,get,list,patch,update,watch - status
pods po v1 true Pod create,delete,deletecollection,get,list,patch,update,watch all attach,binding,ephemeralcontainers,eviction,exec,log,portforward,proxy,resize,status
podtemplates - v1 true PodTemplate create,delete,deletecollection,get,list,patch,update,watch - -
replicationcontrollers rc v1 true ReplicationController create,delete,deletecollection,get,list,patch,update,watch all scale,status
resourcequotas quota v1 true ResourceQuota create,delete,deletecollection,get,list,patch,update,watch - status
secrets - v1 true Secret create,delete,deletecollection,get,list,patch,update,watch - -
serviceaccounts sa v1 true ServiceAccount create,delete,deletecollection,get,list,patch,update,watch - token
services svc v1 true Service create,delete,deletecollection,get,list,patch,update,watch all proxy,status
apiservices - apiregistration.k8s.io/v1 false APIService create,delete,deletecollection,get,list,patch,update,watch api-extensions status
controllerrevisions - apps/v1 true ControllerRevision create,delete,deletecollection,get,list,patch,update,watch - -
daemonsets ds apps/v1 true DaemonSet create,delete,deletecollection,get,list,patch,update,watch all status
deployments deploy apps/v1 true Deployment create,delete,deletecollection,get,list,patch,update,watch all scale,status
replicasets rs apps/v1 true ReplicaSet create,delete,deletecollection,get,list,patch,update,watch all scale,status
statefulsets sts apps/v1 true StatefulSet create,delete,deletecollection,get,list,patch,update,watch all scale,status
events ev events.k8s.io/v1 true Event create,delete,deletecollection,get,list,patch,update,watch - -
selfsubjectreviews - authentication.k8s.io/v1 false SelfSubjectReview create - -
tokenreviews - authentication.k8s.io/v1 false TokenReview create - -
localsubjectaccessreviews - authorization.k8s.io/v1 true LocalSubjectAccessReview create - -
selfsubjectaccessreviews - authorization.k8s.io/v1 false SelfSubjectAccessReview create - -
selfsubjectrulesreviews - authorization.k8s.io/v1 false SelfSubjectRulesReview create - -
subjectaccessreviews - authorization.k8s.io/v1 false SubjectAccessReview create - -
horizontalpodautoscalers hpa autoscaling/v2 true HorizontalPodAutoscaler create,delete,deletecollection,get,list,patch,update,watch all status
horizontalpodautoscalers hpa autoscaling/v1 true HorizontalPodAutoscaler create,delete,deletecollection,get,list,patch,update,watch all status
cronjobs cj batch/v1 true CronJob create,delete,deletecollection,get,list,patch,update,watch all status
jobs - batch/v1 true Job create,delete,deletecollection,get,list,patch,update,watch all status
certificatesigningrequests csr certificates.k8s.io/v1 false CertificateSigningRequest create,delete,deletecollection,get,list,patch,update,watch - approval,status
ingressclasses - networking.k8s.io/v1 false IngressClass create,delete,deletecollection,get,list,patch,update,watch - -
ingresses ing networking.k8s.io/v1 true Ingress create,delete,deletecollection,get,list,patch,update,watch - status
ipaddresses ip networking.k8s.io/v1 false IPAddress create,delete,deletecollection,get,list,patch,update,watch - -
networkpolicies netpol networking.k8s.io/v1 true NetworkPolicy create,delete,deletecollection,get,list,patch,update,watch - -
servicecidrs - networking.k8s.io/v1 false ServiceCIDR create,delete,deletecollection,get,list,patch,update,watch - status
poddisruptionbudgets pdb policy/v1 true PodDisruptionBudget create,delete,deletecollection,get,list,patch,update,watch - status
clusterrolebindings - rbac.authorization.k8s.io/v1 false ClusterRoleBinding create,delete,deletecollection,get,list,patch,update,watch - -
clusterroles - rbac.authorization.k8s.io/v1 false ClusterRole create,delete,deletecollection,get,list,patch,update,watch - -
rolebindings - rbac.authorization.k8s.io/v1 true RoleBinding create,delete,deletecollection,get,list,patch,update,watch - -
roles - rbac.authorization.k8s.io/v1 true Role create,delete,deletecollection,get,list,patch,update,watch - -
csidrivers - storage.k8s.io/v1 false CSIDriver create,delete,deletecollection,get,list,patch,update,watch - -
csinodes - storage.k8s.io/v1 false CSINode create,delete,deletecollection,get,list,patch,update,watch - -
csistoragecapacities - storage.k8s.io/v1 true CSIStorageCapacity create,delete,deletecollection,get,list,patch,update,watch - -
storageclasses sc storage.k8s.io/v1 false StorageClass create,delete,deletecollection,get,list,patch,update,watch - -
volumeattachments - storage.k8s.io/v1 false VolumeAttachment create,delete,deletecollection,get,list,patch,update,watch - status
mutatingwebhookconfigurations - admissionregistration.k8s.io/v1 false MutatingWebhookConfiguration create,delete,deletecollection,get,list,patch,update,watch api-extensions -
validatingadmissionpolicies - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicy create,delete,deletecollection,get,list,patch,update,watch api-extensions status
validatingadmissionpolicybindings - admissionregistration.k8s.io/v1 false ValidatingAdmissionPolicyBinding create,delete,deletecollection,get,list,patch,update,watch api-extensions -
validatingwebhookconfigurations - admissionregistration.k8s.io/v1 false ValidatingWebhookConfiguration create,delete,deletecollection,get,list,patch,update,watch api-extensions -
customresourcedefinitions crd,crds apiextensions.k8s.io/v1 false CustomResourceDefinition create,delete,deletecollection,get,list,patch,update,watch api-extensions status
priorityclasses pc scheduling.k8s.io/v1 false PriorityClass create,delete,deletecollection,get,list,patch,update,watch - -
leases - coordination.k8s.io/v1 true Lease create,delete,deletecollection,get,list,patch,update,watch - -
runtimeclasses - node.k8s.io/v1 false RuntimeClass create,delete,deletecollection,get,list,patch,update,watch - -
endpointslices - discovery.k8s.io/v1 true EndpointSlice create,delete,deletecollection,get,list,patch,update,watch - -
flowschemas - flowcontrol.apiserver.k8s.io/v1 false FlowSchema create,delete,deletecollection,get,list,patch,update,watch - status
prioritylevelconfigurations - flowcontrol.apiserver.k8s.io/v1 false PriorityLevelConfiguration create,delete,deletecollection,get,list,patch,update,watch - status
";

fn strings(v: &Value) -> String {
    let items: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if items.is_empty() {
        "-".into()
    } else {
        items.join(",")
    }
}

/// The served resources as the aggregated discovery documents list them, one golden line each.
fn discovered() -> Vec<String> {
    let mut served = ResourceInfo::builtins();
    served.extend(ResourceInfo::reviews());
    let mut lines = Vec::new();
    for core in [true, false] {
        let doc = discovery::aggregated(&served, core, "v2");
        for group in doc["items"].as_array().unwrap() {
            let name = group["metadata"]["name"].as_str().unwrap();
            for version in group["versions"].as_array().unwrap() {
                let v = version["version"].as_str().unwrap();
                let gv = if name.is_empty() {
                    v.to_string()
                } else {
                    format!("{name}/{v}")
                };
                for r in version["resources"].as_array().unwrap() {
                    let subs: Vec<Value> = r["subresources"]
                        .as_array()
                        .map(|s| s.iter().map(|s| s["subresource"].clone()).collect())
                        .unwrap_or_default();
                    lines.push(format!(
                        "{} {} {gv} {} {} {} {} {}",
                        r["resource"].as_str().unwrap(),
                        strings(&r["shortNames"]),
                        r["scope"] == "Namespaced",
                        r["responseKind"]["kind"].as_str().unwrap(),
                        strings(&r["verbs"]),
                        strings(&r["categories"]),
                        strings(&Value::from(subs)),
                    ));
                }
            }
        }
    }
    lines
}

#[test]
fn discovery_lists_every_kind_of_a_1_33_server() {
    let golden: Vec<&str> = GOLDEN.lines().filter(|l| !l.is_empty()).collect();
    let discovered = discovered();
    for (want, got) in golden.iter().zip(&discovered) {
        assert_eq!(got, want);
    }
    assert_eq!(discovered.len(), golden.len());
}

#[test]
fn every_kind_of_the_schema_table_is_served() {
    let rows: Vec<_> = super::rows().collect();
    // HorizontalPodAutoscaler is one kind at two versions: 60 kinds, 61 rows.
    assert_eq!(rows.len(), crate::schema::builtin::kinds().len());
    for k in crate::schema::builtin::kinds() {
        let row = super::find(k.group, k.version, k.plural)
            .unwrap_or_else(|| panic!("{}/{} {} is not served", k.group, k.version, k.plural));
        assert_eq!(
            (row.kind, row.namespaced),
            (k.kind, k.namespaced),
            "{}",
            k.plural
        );
    }
}

#[test]
fn plain_discovery_names_subresources_of_other_groups() {
    let served = ResourceInfo::builtins();
    let core = discovery::resource_list(&served, "", "v1").unwrap();
    let find = |name: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}"))
    };
    let eviction = find("pods/eviction");
    assert_eq!(
        (&eviction["group"], &eviction["version"]),
        (&"policy".into(), &"v1".into())
    );
    assert_eq!(eviction["kind"], "Eviction");
    assert!(find("pods/status").get("group").is_none());
    assert_eq!(find("replicationcontrollers/scale")["kind"], "Scale");
    assert_eq!(
        find("namespaces/finalize")["verbs"],
        serde_json::json!(["update"])
    );
}

#[test]
fn stored_kinds_publish_their_storage_version_hash() {
    let served = ResourceInfo::builtins();
    let hash = |group: &str, version: &str, name: &str| {
        let list = discovery::resource_list(&served, group, version).unwrap();
        let found = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}"));
        found.get("storageVersionHash").cloned()
    };
    // The values a kube-apiserver 1.33 publishes.
    assert_eq!(hash("", "v1", "pods"), Some("xPOwRZ+Yhw8=".into()));
    assert_eq!(hash("", "v1", "events"), Some("r2yiGXH7wu8=".into()));
    // events.k8s.io Events are stored as core Events, HPAs at autoscaling/v2.
    assert_eq!(
        hash("events.k8s.io", "v1", "events"),
        Some("r2yiGXH7wu8=".into())
    );
    assert_eq!(
        hash("autoscaling", "v1", "horizontalpodautoscalers"),
        hash("autoscaling", "v2", "horizontalpodautoscalers")
    );
    assert_eq!(
        hash("apps", "v1", "deployments"),
        Some("8aSe+NMegvE=".into())
    );
    for (group, name) in [
        ("", "bindings"),
        ("", "componentstatuses"),
        ("", "pods/status"),
        ("authentication.k8s.io", "tokenreviews"),
    ] {
        let served = if group.is_empty() {
            ResourceInfo::builtins()
        } else {
            ResourceInfo::reviews()
        };
        let list = discovery::resource_list(&served, group, "v1").unwrap();
        let found = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned();
        assert!(found.unwrap().get("storageVersionHash").is_none(), "{name}");
    }
    // Every other stored kind has one.
    for r in &served {
        let none = r.plural == "bindings" || r.plural == "componentstatuses";
        assert_eq!(r.storage_version_hash.is_none(), none, "{}", r.plural);
    }
}
