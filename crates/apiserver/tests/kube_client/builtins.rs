//! Every built-in resource, over HTTP: a minimal valid object (valid for the
//! real kube-apiserver too) is created, read, listed and found in discovery with its
//! subresources; and a CRD's short names and categories are published by discovery.

use kube_client::Client;
use kube_client::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

use crate::common::{client, get_accept, raw, server};

/// One row of the table: where the resource is served and a minimal valid object of it.
struct Case {
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    /// The subresources among `status` and `scale` the real server serves on it.
    subresources: &'static [&'static str],
    /// The object's fields besides `apiVersion`, `kind` and `metadata.name`.
    body: Value,
}

fn pod_template(app: &str, restart: &str) -> Value {
    json!({
        "metadata": { "labels": { "app": app } },
        "spec": {
            "restartPolicy": restart,
            "containers": [{ "name": "c", "image": "registry.k8s.io/pause:3.9" }],
        },
    })
}

/// A workload's spec: a selector matching its pod template's labels.
fn workload(app: &str) -> Value {
    json!({
        "spec": {
            "selector": { "matchLabels": { "app": app } },
            "template": pod_template(app, "Always"),
        },
    })
}

fn cases() -> Vec<Case> {
    const STATUS: &[&str] = &["status"];
    const STATUS_SCALE: &[&str] = &["status", "scale"];
    let case = |group, plural, kind, namespaced, subresources, body| Case {
        group,
        plural,
        kind,
        namespaced,
        subresources,
        body,
    };
    let mut statefulset = workload("sts");
    statefulset["spec"]["serviceName"] = json!("sts");
    vec![
        case("", "namespaces", "Namespace", false, STATUS, json!({})),
        case(
            "",
            "configmaps",
            "ConfigMap",
            true,
            &[],
            json!({ "data": { "k": "v" } }),
        ),
        case(
            "",
            "secrets",
            "Secret",
            true,
            &[],
            json!({ "type": "Opaque", "data": { "k": "dg==" } }),
        ),
        case(
            "",
            "pods",
            "Pod",
            true,
            STATUS,
            json!({ "spec": pod_template("p", "Always")["spec"] }),
        ),
        case(
            "",
            "services",
            "Service",
            true,
            STATUS,
            json!({ "spec": { "selector": { "app": "p" }, "ports": [{ "port": 80 }] } }),
        ),
        case(
            "",
            "serviceaccounts",
            "ServiceAccount",
            true,
            &[],
            json!({}),
        ),
        case(
            "",
            "events",
            "Event",
            true,
            &[],
            json!({
                "involvedObject": { "kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1" },
                "reason": "Tested", "message": "a core event", "type": "Normal",
                "source": { "component": "builtins-test" },
            }),
        ),
        case("", "nodes", "Node", false, STATUS, json!({})),
        case(
            "",
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            STATUS,
            json!({ "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": { "requests": { "storage": "1Gi" } },
            } }),
        ),
        case(
            "apps",
            "deployments",
            "Deployment",
            true,
            STATUS_SCALE,
            workload("deploy"),
        ),
        case(
            "apps",
            "replicasets",
            "ReplicaSet",
            true,
            STATUS_SCALE,
            workload("rs"),
        ),
        case(
            "apps",
            "statefulsets",
            "StatefulSet",
            true,
            STATUS_SCALE,
            statefulset,
        ),
        case(
            "apps",
            "daemonsets",
            "DaemonSet",
            true,
            STATUS,
            workload("ds"),
        ),
        case(
            "batch",
            "jobs",
            "Job",
            true,
            STATUS,
            json!({ "spec": { "template": pod_template("job", "Never") } }),
        ),
        case(
            "batch",
            "cronjobs",
            "CronJob",
            true,
            STATUS,
            json!({ "spec": {
                "schedule": "*/5 * * * *",
                "jobTemplate": { "spec": { "template": pod_template("cron", "OnFailure") } },
            } }),
        ),
        case(
            "coordination.k8s.io",
            "leases",
            "Lease",
            true,
            &[],
            json!({ "spec": { "holderIdentity": "me", "leaseDurationSeconds": 15 } }),
        ),
        case(
            "events.k8s.io",
            "events",
            "Event",
            true,
            &[],
            json!({
                "eventTime": "2026-01-01T00:00:00.000000Z",
                "reportingController": "example.com/builtins-test", "reportingInstance": "builtins-test-1",
                "action": "Testing", "reason": "Tested", "type": "Normal", "note": "an events.k8s.io event",
                "regarding": { "kind": "Pod", "namespace": "default", "name": "p", "apiVersion": "v1" },
            }),
        ),
        case(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            STATUS,
            json!({ "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList" },
                "versions": [{ "name": "v1", "served": true, "storage": true,
                    "schema": { "openAPIV3Schema": { "type": "object" } } }],
            } }),
        ),
    ]
}

/// The object's name: CRDs must be named `plural.group`.
fn name_of(case: &Case) -> String {
    if case.kind == "CustomResourceDefinition" {
        "gadgets.example.com".into()
    } else if case.group == "events.k8s.io" {
        // Core and events.k8s.io events are one storage, as in the real server: another name.
        "bt-events-k8s-io".into()
    } else {
        format!("bt-{}", case.plural)
    }
}

/// The discovery document of the group/version serving `group`.
async fn resource_list(client: &Client, group: &str) -> Value {
    let uri = if group.is_empty() {
        "/api/v1".to_string()
    } else {
        format!("/apis/{group}/v1")
    };
    let (status, _, body) = raw(client, "GET", &uri, "", "").await;
    assert_eq!(status, 200, "{uri}: {body}");
    assert_eq!(body["kind"], "APIResourceList");
    body
}

fn find<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list["resources"]
        .as_array()?
        .iter()
        .find(|r| r["name"] == name)
}

#[tokio::test]
async fn every_builtin_resource_is_created_read_listed_and_discovered() {
    let server = server().await;
    let client = client(&server).await;
    for case in cases() {
        let what = format!("{}/{}", case.group, case.plural);
        let gvk = GroupVersionKind::gvk(case.group, "v1", case.kind);
        let ar = ApiResource::from_gvk_with_plural(&gvk, case.plural);
        let api: Api<DynamicObject> = if case.namespaced {
            Api::namespaced_with(client.clone(), "default", &ar)
        } else {
            Api::all_with(client.clone(), &ar)
        };
        let name = name_of(&case);
        let mut body = case.body.clone();
        body["apiVersion"] = json!(ar.api_version);
        body["kind"] = json!(case.kind);
        body["metadata"] = json!({ "name": name });
        let obj: DynamicObject = serde_json::from_value(body).unwrap();

        let created = api
            .create(&PostParams::default(), &obj)
            .await
            .unwrap_or_else(|e| panic!("{what}: create: {e:?}"));
        assert_eq!(
            created.metadata.name.as_deref(),
            Some(name.as_str()),
            "{what}"
        );
        assert!(created.metadata.uid.is_some(), "{what}");
        assert_eq!(
            created.metadata.namespace.as_deref(),
            case.namespaced.then_some("default"),
            "{what}"
        );
        let got = api
            .get(&name)
            .await
            .unwrap_or_else(|e| panic!("{what}: get: {e:?}"));
        assert_eq!(got.metadata.uid, created.metadata.uid, "{what}");
        assert_eq!(
            got.types
                .as_ref()
                .map(|t| (t.api_version.as_str(), t.kind.as_str())),
            Some((ar.api_version.as_str(), case.kind)),
            "{what}"
        );
        let list = api
            .list(&ListParams::default())
            .await
            .unwrap_or_else(|e| panic!("{what}: list: {e:?}"));
        assert!(
            list.items
                .iter()
                .any(|o| o.metadata.name.as_deref() == Some(name.as_str())),
            "{what}: listed"
        );

        // The subresources are served, not only advertised.
        if case.subresources.contains(&"status") {
            let status = api
                .get_status(&name)
                .await
                .unwrap_or_else(|e| panic!("{what}: get status: {e:?}"));
            assert_eq!(status.metadata.uid, created.metadata.uid, "{what}");
        }
        if case.subresources.contains(&"scale") {
            let scale = api
                .get_scale(&name)
                .await
                .unwrap_or_else(|e| panic!("{what}: get scale: {e:?}"));
            assert_eq!(scale.spec.and_then(|s| s.replicas), Some(1), "{what}");
        }

        // Discovery names the resource with its kind, scope and verbs, and exactly the
        // status/scale subresources the real server serves on it.
        let doc = resource_list(&client, case.group).await;
        let entry = find(&doc, case.plural).unwrap_or_else(|| panic!("{what} not discovered"));
        assert_eq!(entry["kind"], case.kind, "{what}");
        assert_eq!(entry["namespaced"], case.namespaced, "{what}");
        let verbs = entry["verbs"].as_array().unwrap();
        for verb in [
            "create", "get", "list", "watch", "update", "patch", "delete",
        ] {
            assert!(verbs.contains(&json!(verb)), "{what}: verb {verb}");
        }
        for sub in ["status", "scale"] {
            let found = find(&doc, &format!("{}/{sub}", case.plural));
            assert_eq!(
                found.is_some(),
                case.subresources.contains(&sub),
                "{what}/{sub} in discovery"
            );
            if let Some(found) = found {
                let kind = if sub == "scale" { "Scale" } else { case.kind };
                assert_eq!(found["kind"], kind, "{what}/{sub}");
                assert_eq!(found["namespaced"], case.namespaced, "{what}/{sub}");
            }
        }
    }
}

#[tokio::test]
async fn core_and_events_k8s_io_events_are_one_storage() {
    let server = server().await;
    let client = client(&server).await;
    let [core, new] = [("", "Event"), ("events.k8s.io", "Event")].map(|(group, kind)| {
        let ar =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), "events");
        Api::<DynamicObject>::namespaced_with(client.clone(), "default", &ar)
    });
    let case = cases()
        .into_iter()
        .find(|c| c.plural == "events" && c.group.is_empty())
        .unwrap();
    let mut body = case.body;
    body["apiVersion"] = json!("v1");
    body["kind"] = json!("Event");
    body["metadata"] = json!({ "name": "shared" });
    core.create(
        &PostParams::default(),
        &serde_json::from_value(body).unwrap(),
    )
    .await
    .unwrap();
    // The real server serves one storage at both versions, converting the fields.
    let seen = new.get("shared").await.unwrap();
    assert_eq!(seen.types.unwrap().api_version, "events.k8s.io/v1");
    assert_eq!(seen.data["regarding"]["name"], "p");
    assert_eq!(seen.data["note"], "a core event");
}

const GIZMO_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "gizmos.example.org"},
  "spec": {
    "group": "example.org", "scope": "Cluster",
    "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "listKind": "GizmoList",
      "shortNames": ["gz", "gzm"], "categories": ["all"]},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object",
        "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]
  }
}"#;

#[tokio::test]
async fn crd_short_names_and_categories_are_discovered() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = server().await;
    let client = client(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_str(GIZMO_CRD).unwrap(),
    )
    .await
    .unwrap();

    // The plain discovery document of the group/version.
    let doc = resource_list(&client, "example.org").await;
    assert_eq!(doc["groupVersion"], "example.org/v1");
    let gizmos = find(&doc, "gizmos").expect("gizmos discovered");
    assert_eq!(
        (
            &gizmos["kind"],
            &gizmos["singularName"],
            &gizmos["namespaced"]
        ),
        (&json!("Gizmo"), &json!("gizmo"), &json!(false))
    );
    assert_eq!(gizmos["shortNames"], json!(["gz", "gzm"]));
    assert_eq!(gizmos["categories"], json!(["all"]));

    // The aggregated form kubectl asks for first.
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let (status, _, body) = get_accept(&client, "/apis", accept).await;
    assert_eq!(status, 200);
    let group = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "example.org")
        .expect("the CRD's group in aggregated discovery");
    let version = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "v1")
        .expect("v1 of the CRD's group");
    let resource = version["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "gizmos")
        .expect("gizmos in aggregated discovery");
    assert_eq!(resource["shortNames"], json!(["gz", "gzm"]));
    assert_eq!(resource["categories"], json!(["all"]));
    assert_eq!(resource["scope"], "Cluster");

    // kube-client's discovery sees the same.
    let discovery = kube_client::Discovery::new(client).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("example.org", "v1", "Gizmo");
    let (ar, _) = discovery.resolve_gvk(&gvk).expect("Gizmo resolved");
    assert_eq!(ar.plural, "gizmos");
}

#[tokio::test]
async fn verbs_reviews_generation_and_two_hpa_versions() {
    let server = server().await;
    let client = client(&server).await;
    let ct = "application/json";

    // A verb a resource does not serve is 405, as on the real server.
    let (status, _, body) = raw(
        &client,
        "GET",
        "/api/v1/namespaces/default/bindings",
        ct,
        "",
    )
    .await;
    assert_eq!(status, 405, "{body}");
    let (status, _, _) = raw(&client, "GET", "/api/v1/componentstatuses", ct, "").await;
    assert_eq!(status, 200);
    let cs = r#"{"apiVersion":"v1","kind":"ComponentStatus","metadata":{"name":"x"}}"#;
    let (status, _, _) = raw(&client, "POST", "/api/v1/componentstatuses", ct, cs).await;
    assert_eq!(status, 405);
    let (status, _, _) = raw(&client, "DELETE", "/api/v1/namespaces", ct, "").await;
    assert_eq!(status, 405);

    // Reviews are answered, not stored.
    let token_review = |t: &str| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}})
            .to_string()
    };
    let uri = "/apis/authentication.k8s.io/v1/tokenreviews";
    let (status, _, ok) = raw(&client, "POST", uri, ct, token_review(server.token())).await;
    assert_eq!(status, 201, "{ok}");
    assert_eq!(ok["status"]["authenticated"], true);
    let (_, _, no) = raw(&client, "POST", uri, ct, token_review("not-the-token")).await;
    assert_eq!(no["status"]["authenticated"], false);
    let (status, _, _) = raw(&client, "GET", uri, ct, "").await;
    assert_eq!(status, 405);
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}});
    let uri = "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews";
    let (status, _, refused) = raw(&client, "POST", uri, ct, sar.to_string()).await;
    assert_eq!(status, 201, "{refused}");
    // RBAC answers: bob has no binding, a member of system:masters may do everything.
    assert_eq!(refused["status"], json!({"allowed": false}));
    let master = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
        "spec": {"user": "bob", "groups": ["system:masters"],
                 "resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}});
    let (status, _, allowed) = raw(&client, "POST", uri, ct, master.to_string()).await;
    assert_eq!(status, 201, "{allowed}");
    assert_eq!(allowed["status"]["allowed"], true);

    // A PodDisruptionBudget keeps metadata.generation: bumped by a spec change only.
    let pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets";
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}});
    let (status, _, created) = raw(&client, "POST", pdbs, ct, pdb.to_string()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1);
    let merge = "application/merge-patch+json";
    let uri = format!("{pdbs}/web");
    let (_, _, labelled) = raw(
        &client,
        "PATCH",
        &uri,
        merge,
        r#"{"metadata":{"labels":{"a":"b"}}}"#,
    )
    .await;
    assert_eq!(labelled["metadata"]["generation"], 1);
    let (_, _, changed) = raw(
        &client,
        "PATCH",
        &uri,
        merge,
        r#"{"spec":{"minAvailable":2}}"#,
    )
    .await;
    assert_eq!(changed["metadata"]["generation"], 2);
    // A Role has no spec and no generation.
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "r"}, "rules": []});
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles";
    let (status, _, created) = raw(&client, "POST", roles, ct, role.to_string()).await;
    assert_eq!(status, 201, "{created}");
    assert!(created["metadata"].get("generation").is_none(), "{created}");

    // One HorizontalPodAutoscaler storage, at v2 and v1.
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 3}});
    let v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers";
    let (status, _, created) = raw(&client, "POST", v2, ct, hpa.to_string()).await;
    assert_eq!(status, 201, "{created}");
    let v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web";
    let (status, _, seen) = raw(&client, "GET", v1, ct, "").await;
    assert_eq!(status, 200, "{seen}");
    assert_eq!(seen["apiVersion"], "autoscaling/v1");
    assert_eq!(seen["spec"]["maxReplicas"], 3);
    let (_, _, group) = raw(&client, "GET", "/apis/autoscaling", ct, "").await;
    assert_eq!(group["preferredVersion"]["version"], "v2");
}
