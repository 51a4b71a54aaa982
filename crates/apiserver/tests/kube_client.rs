//! The embedded API server driven by kube-client, as a controller would drive a real cluster.

mod common;

#[path = "kube_client/admission_policy.rs"]
mod admission_policy;
#[path = "kube_client/auth.rs"]
mod auth;
#[path = "kube_client/authn.rs"]
mod authn;
#[path = "kube_client/builtins.rs"]
mod builtins;
#[path = "kube_client/cluster_basics.rs"]
mod cluster_basics;
#[path = "kube_client/conformance.rs"]
mod conformance;
#[path = "kube_client/conversion_webhook.rs"]
mod conversion_webhook;
#[path = "kube_client/crd_rules.rs"]
mod crd_rules;
#[path = "kube_client/durable.rs"]
mod durable;
#[path = "kube_client/flowcontrol.rs"]
mod flowcontrol;
#[path = "kube_client/http2.rs"]
mod http2;
#[path = "kube_client/impersonation.rs"]
mod impersonation;
#[path = "kube_client/openapi_v2.rs"]
mod openapi_v2;
#[path = "kube_client/pod_actions.rs"]
mod pod_actions;
#[path = "kube_client/protobuf.rs"]
mod protobuf;
#[path = "kube_client/resource_quota.rs"]
mod resource_quota;
#[path = "kube_client/validation.rs"]
mod validation;
#[path = "kube_client/watch_http.rs"]
mod watch_http;
#[path = "kube_client/webhooks.rs"]
mod webhooks;

use std::time::Duration;

use common::{client, code, eventually, raw, server};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "name": name, "labels": { "app": "web" } },
        "data": { "k": "v" },
    }))
    .unwrap()
}

#[tokio::test]
async fn typed_api_crud_and_conflicts() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let created = api.create(&PostParams::default(), &cm("a")).await.unwrap();
    let meta = &created.metadata;
    assert!(
        meta.uid.is_some() && meta.creation_timestamp.is_some() && meta.resource_version.is_some()
    );
    assert_eq!(
        code(
            &api.create(&PostParams::default(), &cm("a"))
                .await
                .unwrap_err()
        ),
        409
    );
    assert_eq!(api.get("a").await.unwrap().data.unwrap()["k"], "v");
    assert_eq!(code(&api.get("missing").await.unwrap_err()), 404);

    let mut stale = created.clone();
    let mut fresh = created.clone();
    fresh.data = Some([("k".to_string(), "v2".to_string())].into());
    let updated = api
        .replace("a", &PostParams::default(), &fresh)
        .await
        .unwrap();
    assert_ne!(
        updated.metadata.resource_version,
        created.metadata.resource_version
    );
    stale.data = Some([("k".to_string(), "stale".to_string())].into());
    let err = api
        .replace("a", &PostParams::default(), &stale)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 409);
    assert_eq!(
        api.get("a").await.unwrap().data.unwrap()["k"],
        "v2",
        "a conflict changes nothing"
    );

    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "x": "y" } })),
        )
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap().len(), 2);
    let sel = api
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(sel.items.len(), 1);
    assert!(
        api.list(&ListParams::default().labels("app!=web"))
            .await
            .unwrap()
            .items
            .is_empty()
    );
    api.delete("a", &DeleteParams::default()).await.unwrap();
    assert_eq!(code(&api.get("a").await.unwrap_err()), 404);
}

#[tokio::test]
async fn dynamic_objects_and_dry_run() {
    let server = server().await;
    let gvk = GroupVersionKind::gvk("", "v1", "ConfigMap");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "configmaps");
    let api: Api<DynamicObject> = Api::namespaced_with(client(&server).await, "default", &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "dyn" }, "data": { "a": "1" },
    }))
    .unwrap();
    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &obj,
        )
        .await
        .unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dyn"));
    assert_eq!(
        code(&api.get("dyn").await.unwrap_err()),
        404,
        "dry run stores nothing"
    );
    api.create(&PostParams::default(), &obj).await.unwrap();
    assert_eq!(api.get("dyn").await.unwrap().data["data"]["a"], "1");
}

#[tokio::test]
async fn watch_with_bookmarks_resume_and_410_after_compaction() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let rv0 = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            }
            .timeout(10),
            &rv0,
        )
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &cm("w1")).await.unwrap();
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": { "k": "2" } })),
    )
    .await
    .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    let mut seen = Vec::new();
    let mut last_rv = rv0.clone();
    while seen.len() < 3 {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match event {
            WatchEvent::Added(o) => seen.push(("ADDED", o.metadata.resource_version.unwrap())),
            WatchEvent::Modified(o) => {
                seen.push(("MODIFIED", o.metadata.resource_version.unwrap()))
            }
            WatchEvent::Deleted(o) => seen.push(("DELETED", o.metadata.resource_version.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("watch error {e:?}"),
        }
    }
    assert_eq!(
        seen.iter().map(|s| s.0).collect::<Vec<_>>(),
        ["ADDED", "MODIFIED", "DELETED"]
    );
    let first_rv = seen[0].1.clone();
    last_rv.clone_from(&seen[2].1);

    // Resuming after the first event replays the two later ones.
    let resumed: Vec<_> = api
        .watch(&WatchParams::default().timeout(1), &first_rv)
        .await
        .unwrap()
        .take(2)
        .try_collect()
        .await
        .unwrap();
    assert!(matches!(resumed[0], WatchEvent::Modified(_)));
    assert!(matches!(resumed[1], WatchEvent::Deleted(_)));

    // After compaction, resuming from an old resourceVersion is 410 Gone.
    api.create(&PostParams::default(), &cm("w2")).await.unwrap();
    server.faults().compact();
    let gone = match api.watch(&WatchParams::default().timeout(1), &rv0).await {
        Err(e) => code(&e),
        Ok(s) => match s.boxed().try_next().await {
            Ok(Some(WatchEvent::Error(e))) => e.code,
            other => panic!("expected 410, got {other:?}"),
        },
    };
    assert_eq!(gone, 410);
    assert!(!last_rv.is_empty());
}

#[tokio::test]
async fn pagination_with_limit_and_continue() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    for i in 0..25 {
        api.create(&PostParams::default(), &cm(&format!("p{i:02}")))
            .await
            .unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(10);
    let mut pages = 0;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        names.extend(page.items.iter().map(|c| c.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), 25, "every object exactly once");

    // deletecollection with a selector removes exactly the selected objects.
    let mut other = cm("other");
    other.metadata.labels = Some([("app".to_string(), "db".to_string())].into());
    api.create(&PostParams::default(), &other).await.unwrap();
    api.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("app=web"),
    )
    .await
    .unwrap();
    let left = api.list(&ListParams::default()).await.unwrap();
    let left: Vec<_> = left
        .items
        .iter()
        .map(|c| c.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(left, ["other"]);
}

#[tokio::test]
async fn finalizers_and_owner_garbage_collection() {
    let server = server().await;
    let api: Api<ConfigMap> = Api::namespaced(client(&server).await, "default");
    let mut held = cm("held");
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    api.delete("held", &DeleteParams::default()).await.unwrap();
    let still = api.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
    )
    .await
    .unwrap();
    assert_eq!(code(&api.get("held").await.unwrap_err()), 404);

    let owner = api
        .create(&PostParams::default(), &cm("owner"))
        .await
        .unwrap();
    let mut owned = cm("owned");
    owned.metadata.owner_references = Some(vec![serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid.unwrap(),
    }))
    .unwrap()]);
    api.create(&PostParams::default(), &owned).await.unwrap();
    api.delete("owner", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the owned object is collected", || async {
        api.get_opt("owned").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn status_subresource_is_isolated() {
    let server = server().await;
    let api: Api<Deployment> = Api::namespaced(client(&server).await, "default");
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": { "name": "d" },
        "spec": {
            "replicas": 1,
            "selector": { "matchLabels": { "app": "d" } },
            "template": { "metadata": { "labels": { "app": "d" } }, "spec": { "containers": [{ "name": "c", "image": "nginx" }] } },
        },
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &d).await.unwrap();
    let generation = created.metadata.generation;
    let status =
        json!({ "status": { "replicas": 1, "readyReplicas": 1 }, "spec": { "replicas": 9 } });
    let after = api
        .patch_status("d", &PatchParams::default(), &Patch::Merge(status))
        .await
        .unwrap();
    assert_eq!(after.status.unwrap().ready_replicas, Some(1));
    assert_eq!(
        after.spec.unwrap().replicas,
        Some(1),
        "a status write ignores spec"
    );
    assert_eq!(after.metadata.generation, generation);
    let spec = json!({ "spec": { "replicas": 3 }, "status": { "readyReplicas": 0 } });
    let after = api
        .patch("d", &PatchParams::default(), &Patch::Merge(spec))
        .await
        .unwrap();
    assert_eq!(
        after.status.unwrap().ready_replicas,
        Some(1),
        "a main write ignores status"
    );
    assert!(after.metadata.generation > generation);
    assert_eq!(
        api.get_scale("d").await.unwrap().spec.unwrap().replicas,
        Some(3)
    );
}

#[tokio::test]
async fn faults_fail_requests_and_restart_the_listener() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("kept"))
        .await
        .unwrap();
    server.faults().fail_next(2, 500);
    assert_eq!(code(&api.get("kept").await.unwrap_err()), 500);
    assert_eq!(code(&api.get("kept").await.unwrap_err()), 500);
    assert!(api.get("kept").await.is_ok());

    server.stop_listener().await;
    assert!(api.get("kept").await.is_err(), "no listener, no answer");
    server.restart_listener().await.unwrap();
    let fresh: Api<ConfigMap> = Api::namespaced(common::client(&server).await, "default");
    assert!(
        fresh.get("kept").await.is_ok(),
        "data kept across the restart"
    );
}

#[tokio::test]
async fn injected_429s_ask_for_a_retry_after_and_a_bounced_listener_serves_again() {
    use crt_apiserver::faults::Fault;
    let server = server().await;
    // Without kube-client's default retry layer (which retries 429, 503 and 504, waiting a
    // 429's Retry-After), to see the answers themselves.
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let mut config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    let client = kube_client::Client::try_from(config).unwrap();
    let get = || async {
        let req = http::Request::get("/api/v1/namespaces/default/configmaps")
            .body(kube_client::client::Body::empty())
            .unwrap();
        let resp = client.send(req).await.expect("request sent");
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .unwrap()
            .to_bytes();
        let status: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        (retry_after, status)
    };
    // A 429 as upstream's NewTooManyRequests: the header and the Status agree.
    server.faults().throttle_next(1, 3);
    let (retry_after, status) = get().await;
    assert_eq!(retry_after.as_deref(), Some("3"), "{status}");
    assert_eq!(
        (status["code"].as_u64(), status["reason"].as_str()),
        (Some(429), Some("TooManyRequests"))
    );
    assert_eq!(status["details"]["retryAfterSeconds"], 3);
    server
        .inject(&Fault::FailNext { n: 1, code: 503 })
        .await
        .unwrap();
    let (retry_after, status) = get().await;
    assert_eq!(
        (retry_after, status["reason"].as_str()),
        (None, Some("ServiceUnavailable"))
    );
    assert_eq!(get().await.1["kind"], "ConfigMapList", "only the next one");
    // kube-client's default client retries the 429 after its Retry-After, and gets the list.
    server.faults().throttle_next(1, 1);
    let retrying: Api<ConfigMap> = Api::namespaced(common::client(&server).await, "default");
    assert!(retrying.list(&ListParams::default()).await.is_ok());
    assert_eq!(
        server.faults().pending_failures(),
        0,
        "the 429 was answered, then retried"
    );

    // A restart of the listener: the same client reconnects to the same address.
    let port = server.port();
    server
        .inject(&Fault::RestartListener {
            pause: Duration::from_millis(50),
        })
        .await
        .unwrap();
    assert_eq!(server.port(), port);
    assert_eq!(get().await.1["kind"], "ConfigMapList");
}

#[tokio::test]
async fn unauthorized_without_the_token_and_stop_frees_the_port() {
    let server = server().await;
    let bad = server.kubeconfig().replace(server.token(), "wrong-token");
    let api: Api<ConfigMap> =
        Api::namespaced(common::client_from_kubeconfig(&bad).await, "default");
    let err = api.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(code(&err), 401);
    let (status, _, body) = raw(
        &common::client_from_kubeconfig(&bad).await,
        "GET",
        "/version",
        "",
        "",
    )
    .await;
    // A bad token is refused everywhere, public paths included: upstream's union
    // authenticator fails on an invalid token rather than treating it as anonymous.
    assert_eq!(
        (status, body["reason"].as_str()),
        (401, Some("Unauthorized")),
        "/version with a bad token"
    );
    let port = server.port();
    server.stop().await;
    std::net::TcpListener::bind(("127.0.0.1", port)).expect("the port is free after stop");
}

#[tokio::test]
async fn bad_input_gets_status_errors_and_changes_nothing() {
    let server = server().await;
    let client = client(&server).await;
    let rv = server.storage().resource_version();
    let cms = "/api/v1/namespaces/default/configmaps";

    let (status, ct, body) = raw(&client, "POST", cms, "application/json", "{\"kind\": ").await;
    assert_eq!((status, ct.as_str()), (400, "application/json"));
    assert_eq!(
        (body["kind"].as_str(), body["reason"].as_str()),
        (Some("Status"), Some("BadRequest"))
    );
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("couldn't get version/kind; json parse error")
    );

    let (status, _, body) = raw(&client, "GET", "/api/v1/namespaces/default/widgets", "", "").await;
    assert_eq!((status, body["reason"].as_str()), (404, Some("NotFound")));
    assert_eq!(
        body["message"],
        "the server could not find the requested resource"
    );
    let (status, _, _) = raw(&client, "GET", "/apis/nope.example.com/v1", "", "").await;
    assert_eq!(status, 404);

    let (status, _, body) = raw(&client, "PUT", cms, "application/json", "{}").await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (405, Some("MethodNotAllowed"))
    );

    let big = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
        "x".repeat(3 * 1024 * 1024 + 1)
    );
    let (status, _, body) = raw(&client, "POST", cms, "application/json", big).await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (413, Some("RequestEntityTooLarge"))
    );

    let (status, _, body) = raw(&client, "PATCH", &format!("{cms}/x"), "text/plain", "{}").await;
    assert_eq!(
        (status, body["reason"].as_str()),
        (415, Some("UnsupportedMediaType"))
    );

    assert_eq!(
        server.storage().resource_version(),
        rv,
        "no failed request wrote anything"
    );
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    assert!(
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]
  }
}"#;

#[tokio::test]
async fn discovery_tables_and_metadata() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = server().await;
    let client = client(&server).await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_str(WIDGET_CRD).unwrap(),
    )
    .await
    .unwrap();

    // Plain and aggregated discovery both serve the CRD's resource at once.
    let discovery = kube_client::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let (ar, caps) = discovery.resolve_gvk(&gvk).expect("widgets discovered");
    assert_eq!(ar.plural, "widgets");
    assert_eq!(caps.scope, kube_client::discovery::Scope::Namespaced);
    let aggregated = kube_client::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(aggregated.resolve_gvk(&gvk).is_some());
    let accept =
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
    let (status, ct, body) = common::get_accept(&client, "/apis", accept).await;
    assert_eq!(status, 200);
    assert!(ct.contains("as=APIGroupDiscoveryList"), "{ct}");
    assert_eq!(body["kind"], "APIGroupDiscoveryList");

    // The Table form, with the CRD's printer columns.
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}, "spec": {"size": 7},
    }))
    .unwrap();
    widgets.create(&PostParams::default(), &w).await.unwrap();
    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let uri = "/apis/example.com/v1/namespaces/default/widgets";
    let (status, _, table) = common::get_accept(&client, uri, table_accept).await;
    assert_eq!((status, table["kind"].as_str()), (200, Some("Table")));
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "Size"]);
    assert_eq!(table["rows"][0]["cells"], json!(["w1", 7]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // Metadata-only lists.
    let cms: Api<ConfigMap> = Api::namespaced(client, "default");
    cms.create(&PostParams::default(), &cm("m1")).await.unwrap();
    let metas = cms.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(metas.items.len(), 1);
    assert_eq!(metas.items[0].metadata.name.as_deref(), Some("m1"));
}

#[tokio::test]
async fn dropping_the_server_frees_the_port() {
    let server = server().await;
    let port = server.port();
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_err(),
        "in use while running"
    );
    drop(server);
    let mut freed = false;
    for _ in 0..100 {
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            freed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(freed, "the port is free after drop");
}

/// The `fieldsV1` of `manager`'s entry with `operation`, read off a typed object.
fn owned(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    manager: &str,
    operation: &str,
) -> Option<serde_json::Value> {
    let entry = meta.managed_fields.as_ref()?.iter().find(|e| {
        e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some(operation)
    })?;
    assert_eq!(entry.fields_type.as_deref(), Some("FieldsV1"));
    assert!(entry.time.is_some() && entry.api_version.is_some());
    Some(entry.fields_v1.as_ref()?.0.clone())
}

fn applied_cm(data: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data})
}

#[tokio::test]
async fn server_side_apply_with_kube_client() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let alice = PatchParams::apply("alice");
    let bob = PatchParams::apply("bob");

    // Create through apply; managedFields come back on GET.
    let created = api
        .patch(
            "ssa",
            &alice,
            &Patch::Apply(applied_cm(json!({"a": "1", "x": "1"}))),
        )
        .await
        .unwrap();
    assert_eq!(created.data.as_ref().unwrap()["a"], "1");
    let got = api.get("ssa").await.unwrap();
    assert_eq!(
        owned(&got.metadata, "alice", "Apply"),
        Some(json!({"f:data": {"f:a": {}, "f:x": {}}}))
    );

    // Two managers: same value is shared, a different one is a 409 naming owner and field.
    api.patch(
        "ssa",
        &bob,
        &Patch::Apply(applied_cm(json!({"a": "1", "b": "2"}))),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "ssa",
            &bob,
            &Patch::Apply(applied_cm(json!({"a": "9", "x": "9"}))),
        )
        .await
        .unwrap_err();
    let kube_client::Error::Api(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .data.a\n- .data.x"
    );
    assert_eq!(
        api.get("ssa").await.unwrap().data.unwrap()["a"],
        "1",
        "a conflict changes nothing"
    );

    // Force takes the field; alice keeps only x.
    let forced = api
        .patch(
            "ssa",
            &bob.clone().force(),
            &Patch::Apply(applied_cm(json!({"a": "9", "b": "2"}))),
        )
        .await
        .unwrap();
    assert_eq!(forced.data.as_ref().unwrap()["a"], "9");
    assert_eq!(
        owned(&forced.metadata, "alice", "Apply"),
        Some(json!({"f:data": {"f:x": {}}}))
    );

    // Alice stops applying x: nobody else owns it, so it goes; her entry goes with it.
    let after = api
        .patch("ssa", &alice, &Patch::Apply(applied_cm(json!({}))))
        .await
        .unwrap();
    assert_eq!(
        after.data.clone().unwrap().into_iter().collect::<Vec<_>>(),
        [("a".into(), "9".into()), ("b".into(), "2".into())]
    );
    assert_eq!(owned(&after.metadata, "alice", "Apply"), None);

    // An update owns what it changes: a later apply of another value conflicts with it.
    api.patch(
        "ssa",
        &PatchParams {
            field_manager: Some("editor".into()),
            ..Default::default()
        },
        &Patch::Merge(json!({"data": {"b": "3"}})),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "ssa",
            &bob,
            &Patch::Apply(applied_cm(json!({"a": "9", "b": "2"}))),
        )
        .await
        .unwrap_err();
    let kube_client::Error::Api(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"editor\" using v1: .data.b"
    );

    // Without fieldManager: 422, as the real server words it.
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ssa",
        "application/apply-patch+yaml",
        "data:\n  a: \"1\"\n",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // A YAML body works as well as JSON.
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  y: \"1\"\n";
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/ssa?fieldManager=yaml",
        "application/apply-patch+yaml",
        yaml,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["data"]["y"], "1");
}

#[tokio::test]
async fn server_side_apply_lists_status_and_scale() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let deployment = |containers: serde_json::Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"selector": {"matchLabels": {"app": "d"}},
                        "template": {"metadata": {"labels": {"app": "d"}},
                                     "spec": {"containers": containers}}}})
    };
    api.patch(
        "d",
        &PatchParams::apply("a"),
        &Patch::Apply(deployment(json!([{"name": "app", "image": "nginx"}]))),
    )
    .await
    .unwrap();
    let d = api
        .patch(
            "d",
            &PatchParams::apply("b"),
            &Patch::Apply(deployment(
                json!([{"name": "log", "image": "busybox", "ports": [{"containerPort": 80}]}]),
            )),
        )
        .await
        .unwrap();
    let names: Vec<String> = d
        .spec
        .unwrap()
        .template
        .spec
        .unwrap()
        .containers
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["app", "log"]);
    let b = owned(&d.metadata, "b", "Apply").unwrap();
    assert_eq!(
        b["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"log\"}"]["f:ports"],
        json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}})
    );

    // Status through its subresource: an entry marked with the subresource.
    let status = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                        "status": {"replicas": 2, "readyReplicas": 1}});
    let after = api
        .patch_status("d", &PatchParams::apply("ctrl"), &Patch::Apply(status))
        .await
        .unwrap();
    assert_eq!(after.status.as_ref().unwrap().ready_replicas, Some(1));
    let entry = after
        .metadata
        .managed_fields
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.manager.as_deref() == Some("ctrl"))
        .unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("status"));
    assert_eq!(
        entry.fields_v1.as_ref().unwrap().0,
        json!({"f:status": {"f:readyReplicas": {}, "f:replicas": {}}})
    );

    // Scale through apply: the entry is on the object, for spec.replicas, via `scale`.
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 4}});
    let s = api
        .patch_scale("d", &PatchParams::apply("hpa"), &Patch::Apply(scale))
        .await
        .unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(4));
    let d = api.get("d").await.unwrap();
    let entry = d
        .metadata
        .managed_fields
        .as_ref()
        .unwrap()
        .iter()
        .find(|e| e.manager.as_deref() == Some("hpa"))
        .unwrap();
    assert_eq!(entry.subresource.as_deref(), Some("scale"));
    assert_eq!(
        entry.fields_v1.as_ref().unwrap().0,
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[tokio::test]
async fn server_side_apply_custom_map_list() {
    let server = server().await;
    let client = client(&server).await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "ports": {"type": "array", "x-kubernetes-list-type": "map",
                                   "x-kubernetes-list-map-keys": ["name"],
                                   "items": {"type": "object", "required": ["name"], "properties": {
                                       "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}}}]}});
    let (code, _, body) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Gadget"));
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let gadget = |ports: serde_json::Value| json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"ports": ports}});
    api.patch(
        "g",
        &PatchParams::apply("a"),
        &Patch::Apply(gadget(json!([{"name": "http", "port": 80}]))),
    )
    .await
    .unwrap();
    let g = api
        .patch(
            "g",
            &PatchParams::apply("b"),
            &Patch::Apply(gadget(json!([{"name": "https", "port": 443}]))),
        )
        .await
        .unwrap();
    assert_eq!(
        g.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    let err = api
        .patch(
            "g",
            &PatchParams::apply("b"),
            &Patch::Apply(gadget(json!([{"name": "http", "port": 8080}]))),
        )
        .await
        .unwrap_err();
    let kube_client::Error::Api(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"a\": .spec.ports[name=\"http\"].port"
    );
    // b dropping its item removes it; a's stays.
    let g = api
        .patch(
            "g",
            &PatchParams::apply("b"),
            &Patch::Apply(gadget(json!([]))),
        )
        .await
        .unwrap();
    assert_eq!(
        g.data["spec"]["ports"],
        json!([{"name": "http", "port": 80}])
    );
}

#[tokio::test]
async fn updates_record_their_manager_and_managed_fields_can_be_reset() {
    let server = server().await;
    let client = client(&server).await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let pp = PostParams {
        field_manager: Some("creator".into()),
        ..Default::default()
    };
    let created = api.create(&pp, &cm("u")).await.unwrap();
    assert_eq!(
        owned(&created.metadata, "creator", "Update"),
        Some(json!({"f:data": {".": {}, "f:k": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}))
    );
    // Without fieldManager the manager is the user agent's prefix.
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/u",
        "application/merge-patch+json",
        r#"{"data":{"k":"w"}}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let entries = body["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{entries:?}");
    // force is only for apply.
    let (code, _, body) = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/u?force=true",
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    // A field manager is at most 128 bytes.
    let long = "m".repeat(129);
    let (code, _, body) = raw(
        &client,
        "PATCH",
        &format!("/api/v1/namespaces/default/configmaps/u?fieldManager={long}"),
        "application/merge-patch+json",
        "{}",
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    // `[{}]` strips every entry.
    let reset = api
        .patch(
            "u",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": [{}]}})),
        )
        .await
        .unwrap();
    assert_eq!(reset.metadata.managed_fields, None);
    assert_eq!(api.get("u").await.unwrap().metadata.managed_fields, None);
}

#[tokio::test]
async fn field_validation_strict_warn_ignore_over_http() {
    let server = server().await;
    let client = client(&server).await;
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "knobs.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "knobs", "singular": "knob", "kind": "Knob"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object", "properties": {"spec": {"type": "object", "properties": {
                         "size": {"type": "integer"}}}}}}}]}});
    let (status, _, body) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string(),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let knob = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Knob", "metadata": {"name": name}, "spec": {"size": 1, "sise": 2}}).to_string()
    };
    let knobs = "/apis/example.com/v1/namespaces/default/knobs";

    // Strict (what kubectl sends): refused, naming the field.
    let uri = format!("{knobs}?fieldValidation=Strict");
    let (status, _, body) = raw(&client, "POST", &uri, "application/json", knob("a")).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["reason"], "BadRequest");
    assert_eq!(
        body["message"],
        "Knob in version \"v1\" cannot be handled as a Knob: strict decoding error: unknown field \"spec.sise\""
    );
    // A value other than the three directives.
    let uri = format!("{knobs}?fieldValidation=Loose");
    let (status, _, body) = raw(&client, "POST", &uri, "application/json", knob("a")).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
    );

    // No directive is Warn: created, pruned, one Warning header per field.
    let req = http::Request::builder()
        .method("POST")
        .uri(knobs)
        .header("content-type", "application/json")
        .body(kube_client::client::Body::from(knob("a").into_bytes()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    let warnings: Vec<_> = resp.headers().get_all("warning").iter().collect();
    assert_eq!(warnings, ["299 - \"unknown field \\\"spec.sise\\\"\""]);

    // Ignore: pruned silently; kube-client's PatchParams directive reaches the server.
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Knob"));
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let patch = Patch::Merge(json!({"spec": {"colour": "red"}}));
    let strict = PatchParams::default().validation_strict();
    let err = api.patch("a", &strict, &patch).await.unwrap_err();
    assert_eq!(code(&err), 400);
    let ignore = PatchParams::default().validation_ignore();
    let patched = api.patch("a", &ignore, &patch).await.unwrap();
    assert_eq!(patched.data["spec"], json!({"size": 1}));
}

/// A patch that leaves a built-in object with a value of the wrong JSON type is a 422 on the
/// field `patch`, its value the patched object (upstream's JSON and merge patcher), where a
/// create or update of the same object is a 400. (A strategic merge patch gets the same 422
/// shape; upstream words its value and detail through its unstructured converter instead.)
#[tokio::test]
async fn patched_type_errors_are_invalid() {
    let server = server().await;
    let client = client(&server).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p"},
                    "data": {"a": "x"}});
    let (status, _, body) = raw(&client, "POST", cms, "application/json", cm.to_string()).await;
    assert_eq!(status, 201, "{body}");
    for (content_type, patch) in [
        ("application/merge-patch+json", json!({"data": {"a": 1}})),
        (
            "application/json-patch+json",
            json!([{"op": "replace", "path": "/data/a", "value": 1}]),
        ),
    ] {
        let (status, _, body) = raw(
            &client,
            "PATCH",
            &format!("{cms}/p"),
            content_type,
            patch.to_string(),
        )
        .await;
        assert_eq!(
            (status, body["reason"].as_str()),
            (422, Some("Invalid")),
            "{body}"
        );
        let message = body["message"].as_str().unwrap();
        assert!(
            message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"),
            "{message}"
        );
        assert!(
            message.ends_with(
                "\": json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            ),
            "{message}"
        );
        let cause = &body["details"]["causes"][0];
        assert_eq!(cause["field"], "patch");
        assert_eq!(cause["reason"], "FieldValueInvalid");
    }
    // Unchanged, and a well-typed patch still applies.
    let (status, _, body) = raw(
        &client,
        "PATCH",
        &format!("{cms}/p"),
        "application/merge-patch+json",
        json!({"data": {"a": "y"}}).to_string(),
    )
    .await;
    assert_eq!((status, &body["data"]["a"]), (200, &json!("y")), "{body}");
}

/// Built-in kinds are decoded as the real server decodes them: a value of the wrong JSON type
/// is a 400 in Go's words, unknown fields follow `fieldValidation`.
#[tokio::test]
async fn built_in_objects_are_decoded_as_go_decodes_them() {
    let server = server().await;
    let client = client(&server).await;
    let deploys = "/apis/apps/v1/namespaces/default/deployments";
    let deployment = |replicas: serde_json::Value, extra: serde_json::Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "d"}},
                        "template": {"metadata": {"labels": {"app": "d"}},
                                     "spec": {"containers": [{"name": "c", "image": "i", "x": extra}]}}}})
        .to_string()
    };
    let (status, _, body) = raw(
        &client,
        "POST",
        deploys,
        "application/json",
        deployment(json!("3"), json!(1)),
    )
    .await;
    assert_eq!((status, body["reason"].as_str()), (400, Some("BadRequest")));
    assert_eq!(
        body["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: json: cannot unmarshal \
         string into Go struct field DeploymentSpec.spec.replicas of type int32"
    );
    let uri = format!("{deploys}?fieldValidation=Strict");
    let (status, _, body) = raw(
        &client,
        "POST",
        &uri,
        "application/json",
        deployment(json!(3), json!(1)),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"spec.template.spec.containers[0].x\""
    );
    let req = http::Request::builder()
        .method("POST")
        .uri(deploys)
        .header("content-type", "application/json")
        .body(kube_client::client::Body::from(
            deployment(json!(3), json!(1)).into_bytes(),
        ))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    let warnings: Vec<_> = resp.headers().get_all("warning").iter().collect();
    assert_eq!(
        warnings,
        ["299 - \"unknown field \\\"spec.template.spec.containers[0].x\\\"\""]
    );
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let stored = api.get("d").await.unwrap();
    assert_eq!(stored.spec.unwrap().replicas, Some(3));
}

/// A field a JSON body repeats: `Strict` refuses the write naming it, `Warn` (the default)
/// warns and keeps the last value, `Ignore` keeps it silently, as the real server's decoder.
#[tokio::test]
async fn duplicate_fields_follow_field_validation() {
    let server = server().await;
    let client = client(&server).await;
    let cms = "/api/v1/namespaces/default/configmaps";
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {{"name": "{name}", "labels": {{"app": "a", "app": "b"}}}}, "data": {{"k": "1"}}, "data": {{"k": "2"}}}}"#
        )
    };
    let uri = format!("{cms}?fieldValidation=Strict");
    let (status, _, answer) = raw(&client, "POST", &uri, "application/json", body("strict")).await;
    assert_eq!(
        (status, answer["reason"].as_str()),
        (400, Some("BadRequest")),
        "{answer}"
    );
    assert_eq!(
        answer["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.labels.app\", duplicate field \"data\""
    );

    let req = http::Request::builder()
        .method("POST")
        .uri(cms)
        .header("content-type", "application/json")
        .body(kube_client::client::Body::from(body("warn").into_bytes()))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 201);
    let warnings: Vec<_> = resp.headers().get_all("warning").iter().collect();
    assert_eq!(
        warnings,
        [
            "299 - \"duplicate field \\\"metadata.labels.app\\\"\"",
            "299 - \"duplicate field \\\"data\\\"\""
        ]
    );
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let warned = api.get("warn").await.unwrap();
    assert_eq!(warned.data.unwrap()["k"], "2", "the last value is kept");
    assert_eq!(warned.metadata.labels.unwrap()["app"], "b");

    let uri = format!("{cms}?fieldValidation=Ignore");
    let (status, _, _) = raw(&client, "POST", &uri, "application/json", body("ignore")).await;
    assert_eq!(status, 201);
}
