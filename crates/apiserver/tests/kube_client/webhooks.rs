//! Admission webhooks (Mutating and ValidatingWebhookConfiguration) called over HTTPS by
//! the server on writes, as a kube-apiserver calls them: denials answered with the
//! webhook's status and upstream's wording, patches stored, warnings sent as `Warning`
//! headers, failurePolicy, timeouts, selectors, rules, `service` references, dryRun.

use std::sync::Arc;

use base64::Engine as _;

use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Client;
use kube_client::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::common::webhook::{
    Handler, WebhookServer, allow, configuration, deny, hook, patch, rule,
};
use crate::common::{client, code, raw, server};

const MUTATING: &str = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations";
const VALIDATING: &str = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

/// A request, answering the status, the `Warning` headers and the body.
async fn send(
    client: &Client,
    method: &str,
    uri: &str,
    content_type: &str,
    body: &Value,
) -> (u16, Vec<String>, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube_client::client::Body::from(
            body.to_string().into_bytes(),
        ))
        .unwrap();
    let resp = client.send(req).await.unwrap();
    let status = resp.status().as_u16();
    let warnings = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, warnings, serde_json::from_slice(&bytes).unwrap())
}

async fn post(client: &Client, uri: &str, body: &Value) -> (u16, Value) {
    let (status, _, body) = raw(client, "POST", uri, "application/json", body.to_string()).await;
    (status, body)
}

async fn install(client: &Client, uri: &str, config: Value) {
    let (status, body) = post(client, uri, &config).await;
    assert_eq!(status, 201, "{body}");
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

/// Denies on `/deny` (403 with a message), allows elsewhere, warning on `/warn`.
fn gatekeeper() -> Handler {
    Arc::new(|path: &str, _req: &Value| match path {
        "/deny" => deny(403, "configmaps named like that are not allowed"),
        "/bare" => json!({"allowed": false}),
        "/warn" => json!({"allowed": true, "warnings": ["think twice", "think twice"]}),
        _ => allow(),
    })
}

#[tokio::test]
async fn a_validating_denial_reaches_the_client_with_upstreams_wording() {
    let hooks = WebhookServer::start(gatekeeper()).await;
    let server = server().await;
    let client = client(&server).await;
    let config = configuration(
        "Validating",
        "gate",
        json!([
            hook(
                "deny.example.com",
                hooks.url_config("/deny"),
                rule("", &["configmaps"], &["CREATE"]),
                json!({"objectSelector": {"matchLabels": {"gate": "deny"}}})
            ),
            hook(
                "bare.example.com",
                hooks.url_config("/bare"),
                rule("", &["configmaps"], &["CREATE"]),
                json!({"objectSelector": {"matchLabels": {"gate": "bare"}}})
            ),
            hook(
                "warn.example.com",
                hooks.url_config("/warn"),
                rule("", &["configmaps"], &["CREATE"]),
                json!({})
            ),
        ]),
    );
    install(&client, VALIDATING, config).await;

    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let denied: ConfigMap = serde_json::from_value(cm("no", json!({"gate": "deny"}))).unwrap();
    let err = api
        .create(&PostParams::default(), &denied)
        .await
        .unwrap_err();
    assert_eq!(code(&err), 403);
    let kube_client::Error::Api(status) = err else {
        unreachable!()
    };
    assert_eq!(
        status.message,
        "admission webhook \"deny.example.com\" denied the request: configmaps named like that are not allowed"
    );

    // No status in the answer: 400, "without explanation".
    let (status, body) = post(&client, CMS, &cm("bare", json!({"gate": "bare"}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"bare.example.com\" denied the request without explanation"
    );

    // Allowed, with warnings: each sent once as a `Warning` header; the object is stored.
    let (status, warnings, body) = send(
        &client,
        "POST",
        CMS,
        "application/json",
        &cm("ok", json!({})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(warnings, vec!["299 - \"think twice\"".to_string()]);
    assert!(api.get("ok").await.is_ok());
    assert!(api.get("no").await.is_err());

    // What the webhook was sent: a v1 AdmissionReview request.
    let calls = hooks.calls.lock().clone();
    let (_, req) = calls.iter().find(|(p, _)| p == "/deny").unwrap();
    assert_eq!(req["operation"], "CREATE");
    assert_eq!(
        req["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        req["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(req["requestKind"], req["kind"]);
    assert_eq!(req["name"], "no");
    assert_eq!(req["namespace"], "default");
    assert_eq!(req["userInfo"]["username"], "crt-admin");
    assert_eq!(req["object"]["metadata"]["labels"]["gate"], "deny");
    assert_eq!(req["oldObject"], Value::Null);
    assert_eq!(req["dryRun"], false);
    assert_eq!(req["options"]["kind"], "CreateOptions");
    assert!(!req["uid"].as_str().unwrap().is_empty());
}

#[tokio::test]
async fn mutating_patches_are_stored_for_creates_updates_patches_and_applies() {
    let handler: Handler = Arc::new(|_: &str, req: &Value| {
        // A field ConfigMaps do not declare is added too: dropped, even under Strict.
        let unknown = json!({"op": "add", "path": "/extra", "value": 1});
        if req["object"]["metadata"]["labels"].is_object() {
            patch(json!([
                {"op": "add", "path": "/metadata/labels/defaulted", "value": "yes"},
                unknown
            ]))
        } else {
            patch(json!([
                {"op": "add", "path": "/metadata/labels", "value": {"defaulted": "yes"}},
                unknown
            ]))
        }
    });
    let hooks = WebhookServer::start(handler).await;
    let server = server().await;
    let client = client(&server).await;
    let config = configuration(
        "Mutating",
        "defaults",
        json!([hook(
            "default.example.com",
            hooks.url_config("/mutate"),
            rule("", &["configmaps"], &["CREATE", "UPDATE"]),
            json!({})
        )]),
    );
    install(&client, MUTATING, config).await;

    let (status, created) = post(
        &client,
        &format!("{CMS}?fieldValidation=Strict"),
        &json!({"metadata": {"name": "a"}}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["metadata"]["labels"]["defaulted"], "yes");
    assert_eq!(created.get("extra"), None);
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let stored = api.get("a").await.unwrap();
    assert_eq!(stored.metadata.labels.unwrap()["defaulted"], "yes");

    // An update that drops the label gets it back.
    let mut body = serde_json::to_value(api.get("a").await.unwrap()).unwrap();
    body["metadata"]["labels"] = json!({"other": "x"});
    let (status, _, updated) = send(
        &client,
        "PUT",
        &format!("{CMS}/a"),
        "application/json",
        &body,
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(
        updated["metadata"]["labels"],
        json!({"other": "x", "defaulted": "yes"})
    );

    // A merge patch removing it, and a server-side apply without it.
    let (status, _, patched) = send(
        &client,
        "PATCH",
        &format!("{CMS}/a"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"defaulted": null}}}),
    )
    .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["metadata"]["labels"]["defaulted"], "yes");
    let (status, _, applied) = send(
        &client,
        "PATCH",
        &format!("{CMS}/b?fieldManager=me"),
        "application/apply-patch+yaml",
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b"},
                "data": {"x": "1"}}),
    )
    .await;
    // 200, as this server answers every apply (with or without webhooks).
    assert_eq!(status, 200, "{applied}");
    let b = api.get("b").await.unwrap();
    assert_eq!(b.metadata.labels.unwrap()["defaulted"], "yes");
    assert_eq!(
        b.metadata.managed_fields.unwrap()[0].manager.as_deref(),
        Some("me")
    );
    let ops: Vec<String> = hooks
        .calls
        .lock()
        .iter()
        .map(|(_, r)| r["operation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, ["CREATE", "UPDATE", "UPDATE", "CREATE"]);
}

#[tokio::test]
async fn failure_policy_and_timeouts_decide_when_the_webhook_cannot_answer() {
    let hooks = WebhookServer::start(Arc::new(|_: &str, _: &Value| allow())).await;
    let server = server().await;
    let client = client(&server).await;
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = closed.local_addr().unwrap().port();
    drop(closed);
    let down_config =
        json!({"url": format!("https://127.0.0.1:{down}/x"), "caBundle": hooks.ca_bundle()});
    let select = |v: &str| json!({"objectSelector": {"matchLabels": {"case": v}}});
    let mut ignore = select("ignore");
    ignore["failurePolicy"] = json!("Ignore");
    let mut slow = select("slow");
    slow["timeoutSeconds"] = json!(1);
    let mut untrusted = select("untrusted");
    untrusted["failurePolicy"] = json!("Fail");
    // A caBundle of another CA: the webhook's certificate is not trusted.
    let other_ca = crt_apiserver::tls::Certificates::generate(&[])
        .unwrap()
        .ca_pem;
    let mut untrusted_config = hooks.url_config("/x");
    untrusted_config["caBundle"] =
        json!(base64::engine::general_purpose::STANDARD.encode(other_ca));
    let rules = rule("", &["configmaps"], &["CREATE"]);
    let config = configuration(
        "Validating",
        "fragile",
        json!([
            hook(
                "fail.example.com",
                down_config.clone(),
                rules.clone(),
                select("fail")
            ),
            hook("ignore.example.com", down_config, rules.clone(), ignore),
            hook(
                "slow.example.com",
                hooks.url_config("/slow"),
                rules.clone(),
                slow
            ),
            hook("untrusted.example.com", untrusted_config, rules, untrusted),
        ]),
    );
    install(&client, VALIDATING, config).await;

    let (status, body) = post(&client, CMS, &cm("a", json!({"case": "fail"}))).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["reason"], "InternalError");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Internal error occurred: failed calling webhook \"fail.example.com\": failed to call webhook: Post \"https://127.0.0.1:"
        ),
        "{message}"
    );
    let (status, body) = post(&client, CMS, &cm("b", json!({"case": "ignore"}))).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(&client, CMS, &cm("c", json!({"case": "slow"}))).await;
    assert_eq!(status, 500, "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("failed calling webhook \"slow.example.com\"")
            && message.ends_with("context deadline exceeded"),
        "{message}"
    );
    // The certificate is verified against caBundle.
    let (status, body) = post(&client, CMS, &cm("d", json!({"case": "untrusted"}))).await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("failed calling webhook \"untrusted.example.com\""),
        "{body}"
    );
    let names: Vec<String> = Api::<ConfigMap>::namespaced(client, "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.len() == 1)
        .collect();
    assert_eq!(names, ["b"]);
}

#[tokio::test]
async fn selectors_and_rules_choose_the_requests_a_webhook_sees() {
    let hooks = WebhookServer::start(gatekeeper()).await;
    let server = server().await;
    let client = client(&server).await;
    let (status, body) = post(
        &client,
        "/api/v1/namespaces",
        &json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let config = configuration(
        "Validating",
        "scoped",
        json!([
            // Configmaps in namespaces labelled env=prod.
            hook(
                "prod.example.com",
                hooks.url_config("/deny"),
                rule("", &["configmaps"], &["*"]),
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})
            ),
            // Updates only, of objects labelled locked=true (before or after).
            hook(
                "locked.example.com",
                hooks.url_config("/deny"),
                rule("", &["configmaps"], &["UPDATE"]),
                json!({"objectSelector": {"matchLabels": {"locked": "true"}}})
            ),
            // The status subresource of any apps resource.
            hook(
                "status.example.com",
                hooks.url_config("/deny"),
                rule("apps", &["*/status"], &["UPDATE"]),
                json!({})
            ),
        ]),
    );
    install(&client, VALIDATING, config).await;

    let (status, _) = post(
        &client,
        "/api/v1/namespaces/prod/configmaps",
        &cm("a", json!({})),
    )
    .await;
    assert_eq!(status, 403);
    let (status, body) = post(&client, CMS, &cm("a", json!({"locked": "true"}))).await;
    assert_eq!(status, 201, "{body}");
    let (status, _, body) = send(
        &client,
        "PATCH",
        &format!("{CMS}/a"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"locked": null}}}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("\"locked.example.com\"")
    );

    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let deployments = "/apis/apps/v1/namespaces/default/deployments";
    let (status, body) = post(&client, deployments, &deployment).await;
    assert_eq!(status, 201, "{body}");
    let (status, _, body) = send(
        &client,
        "PATCH",
        &format!("{deployments}/web"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 2}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = send(
        &client,
        "PATCH",
        &format!("{deployments}/web/status"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": 2}}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("\"status.example.com\"")
    );
    let calls = hooks.calls.lock().clone();
    let status_call = calls
        .iter()
        .find(|(_, r)| r["subResource"] == "status")
        .unwrap();
    assert_eq!(status_call.1["resource"]["resource"], "deployments");
    assert_eq!(status_call.1["oldObject"]["metadata"]["name"], "web");
}

#[tokio::test]
async fn service_references_resolve_through_endpoints() {
    let hooks = WebhookServer::start(gatekeeper()).await;
    let server = server().await;
    let client = client(&server).await;
    let (status, body) = post(
        &client,
        "/api/v1/namespaces/default/services",
        &json!({"metadata": {"name": "hook"},
                "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hooks.port}]}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = post(
        &client,
        "/api/v1/namespaces/default/endpoints",
        &json!({"metadata": {"name": "hook"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                             "ports": [{"name": "https", "port": hooks.port}]}]}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let service = json!({"service": {"namespace": "default", "name": "hook", "path": "/deny"},
                         "caBundle": hooks.ca_bundle()});
    let config = configuration(
        "Validating",
        "by-service",
        json!([hook(
            "svc.example.com",
            service,
            rule("", &["configmaps"], &["CREATE"]),
            json!({})
        )]),
    );
    install(&client, VALIDATING, config).await;
    let (status, body) = post(&client, CMS, &cm("a", json!({}))).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"svc.example.com\" denied the request: configmaps named like that are not allowed"
    );
    assert_eq!(hooks.paths(), ["/deny"]);
}

#[tokio::test]
async fn dry_run_only_reaches_webhooks_without_side_effects_and_deletes_are_admitted() {
    let hooks = WebhookServer::start(gatekeeper()).await;
    let server = server().await;
    let client = client(&server).await;
    let (status, body) = post(&client, CMS, &cm("keep", json!({}))).await;
    assert_eq!(status, 201, "{body}");
    let config = configuration(
        "Validating",
        "effects",
        json!([
            hook(
                "effects.example.com",
                hooks.url_config("/allow"),
                rule("", &["configmaps"], &["CREATE"]),
                json!({"sideEffects": "Unknown",
                        "objectSelector": {"matchLabels": {"effects": "yes"}}})
            ),
            hook(
                "pure.example.com",
                hooks.url_config("/allow"),
                rule("", &["configmaps"], &["CREATE"]),
                json!({"sideEffects": "None"})
            ),
            hook(
                "nodelete.example.com",
                hooks.url_config("/deny"),
                rule("", &["configmaps"], &["DELETE"]),
                json!({})
            ),
        ]),
    );
    install(&client, VALIDATING, config).await;

    let (status, body) = post(
        &client,
        &format!("{CMS}?dryRun=All"),
        &cm("a", json!({"effects": "yes"})),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        body["message"],
        "admission webhook \"effects.example.com\" does not support dry run"
    );
    let (status, body) = post(&client, &format!("{CMS}?dryRun=All"), &cm("b", json!({}))).await;
    assert_eq!(status, 201, "{body}");
    let calls = hooks.calls.lock().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].1["dryRun"], true);
    assert_eq!(calls[0].1["options"]["dryRun"], json!(["All"]));
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    assert!(api.get("b").await.is_err());

    // A delete is admitted with the stored object as oldObject.
    let (status, _, body) = send(
        &client,
        "DELETE",
        &format!("{CMS}/keep"),
        "application/json",
        &json!({}),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert!(api.get("keep").await.is_ok());
    let calls = hooks.calls.lock().clone();
    let delete = &calls.last().unwrap().1;
    assert_eq!(delete["operation"], "DELETE");
    assert_eq!(delete["oldObject"]["metadata"]["name"], "keep");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["options"]["kind"], "DeleteOptions");

    // A delete collection is admitted item by item before anything is deleted.
    let (status, body) = post(&client, CMS, &cm("other", json!({}))).await;
    assert_eq!(status, 201, "{body}");
    let before = hooks.calls.lock().len();
    let (status, _, body) = send(&client, "DELETE", CMS, "application/json", &json!({})).await;
    assert_eq!(status, 403, "{body}");
    assert!(api.get("keep").await.is_ok() && api.get("other").await.is_ok());
    let calls = hooks.calls.lock().clone();
    assert!(calls.len() > before, "{calls:?}");
    assert!(
        calls[before..]
            .iter()
            .all(|(_, r)| r["operation"] == "DELETE")
    );
}

#[tokio::test]
async fn mutating_webhooks_are_reinvoked_if_needed() {
    // "first" adds a=1 when absent; "second" adds b=<a or none>: "first" (IfNeeded) is called
    // again after "second" changed the object.
    let handler: Handler = Arc::new(|path: &str, req: &Value| {
        let labels = req["object"]["metadata"]["labels"].clone();
        let add = |k: &str, v: &str| {
            if labels.is_object() {
                patch(json!([{"op": "add", "path": format!("/metadata/labels/{k}"), "value": v}]))
            } else {
                patch(json!([{"op": "add", "path": "/metadata/labels", "value": {k: v}}]))
            }
        };
        match path {
            "/first" => {
                let n = labels["seen"].as_str().map_or(0, |s| s.len());
                add("seen", &"x".repeat(n + 1))
            }
            "/second" if labels.get("b").is_none() => add("b", "1"),
            _ => allow(),
        }
    });
    let hooks = WebhookServer::start(handler).await;
    let server = server().await;
    let client = client(&server).await;
    let rules = rule("", &["configmaps"], &["CREATE"]);
    install(
        &client,
        MUTATING,
        configuration(
            "Mutating",
            "a-first",
            json!([hook(
                "first.example.com",
                hooks.url_config("/first"),
                rules.clone(),
                json!({"reinvocationPolicy": "IfNeeded"})
            )]),
        ),
    )
    .await;
    install(
        &client,
        MUTATING,
        configuration(
            "Mutating",
            "b-second",
            json!([hook(
                "second.example.com",
                hooks.url_config("/second"),
                rules,
                json!({})
            )]),
        ),
    )
    .await;
    let (status, body) = post(&client, CMS, &json!({"metadata": {"name": "a"}})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["metadata"]["labels"], json!({"seen": "xx", "b": "1"}));
    assert_eq!(hooks.paths(), ["/first", "/second", "/first"]);
}

#[tokio::test]
async fn a_write_that_conflicts_while_webhooks_run_is_computed_again() {
    // The webhook's first call writes the same object behind the request's back (as another
    // client would while the webhook answers): the request is computed again from the new
    // version and the webhook called again, as upstream's GuaranteedUpdate retries.
    let server = server().await;
    let storage = server.storage().clone();
    let cms = storage.resolve("", "v1", "configmaps").unwrap();
    let writes = std::sync::atomic::AtomicUsize::new(0);
    let handler: Handler = Arc::new(move |_: &str, req: &Value| {
        if req["operation"] == "UPDATE" && req["object"]["data"]["other"].is_null() {
            let n = writes.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let patch = json!({"data": {"other": format!("x{n}")}}).to_string();
            storage
                .patch(
                    &cms,
                    Some("default"),
                    "a",
                    None,
                    crt_apiserver::storage::PatchType::Merge,
                    patch.as_bytes(),
                    &Default::default(),
                )
                .unwrap();
        }
        allow()
    });
    let hooks = WebhookServer::start(handler).await;
    let client = client(&server).await;
    let (status, body) = post(&client, CMS, &cm("a", json!({}))).await;
    assert_eq!(status, 201, "{body}");
    let config = configuration(
        "Validating",
        "racy",
        json!([hook(
            "racy.example.com",
            hooks.url_config("/racy"),
            rule("", &["configmaps"], &["UPDATE"]),
            json!({})
        )]),
    );
    install(&client, VALIDATING, config).await;
    let (status, _, body) = send(
        &client,
        "PATCH",
        &format!("{CMS}/a"),
        "application/merge-patch+json",
        &json!({"data": {"mine": "y"}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"], json!({"k": "v", "other": "x1", "mine": "y"}));
    assert_eq!(hooks.paths(), ["/racy", "/racy"]);

    // A PUT naming the resourceVersion it read is not retried: its precondition fails
    // once the webhook's call has written the object.
    let mut stale = body.clone();
    stale["data"].as_object_mut().unwrap().remove("other");
    let (status, _, body) = send(
        &client,
        "PUT",
        &format!("{CMS}/a"),
        "application/json",
        &stale,
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["reason"], "Conflict");
    let stored = Api::<ConfigMap>::namespaced(client, "default")
        .get("a")
        .await
        .unwrap();
    assert_eq!(stored.data.unwrap()["other"], "x2");
}

#[tokio::test]
async fn equivalent_versions_reach_a_webhook_at_the_version_its_rule_names() {
    let handler: Handler = Arc::new(|_: &str, _: &Value| {
        patch(json!([{"op": "add", "path": "/metadata/labels", "value": {"seen-at": "v2"}}]))
    });
    let hooks = WebhookServer::start(handler).await;
    let server = server().await;
    let client = client(&server).await;
    let schema = json!({"openAPIV3Schema": {"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}]}});
    let (status, body) = post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let v2_only = json!([{"apiGroups": ["example.com"], "apiVersions": ["v2"],
        "resources": ["widgets"], "operations": ["CREATE"]}]);
    install(
        &client,
        MUTATING,
        configuration(
            "Mutating",
            "widgets",
            json!([
                hook(
                    "equivalent.example.com",
                    hooks.url_config("/eq"),
                    v2_only.clone(),
                    json!({})
                ),
                hook(
                    "exact.example.com",
                    hooks.url_config("/exact"),
                    v2_only,
                    json!({"matchPolicy": "Exact"})
                ),
            ]),
        ),
    )
    .await;
    let (status, body) = post(
        &client,
        "/apis/example.com/v1/namespaces/default/widgets",
        &json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w"}, "spec": {"size": 1}}),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["apiVersion"], "example.com/v1");
    assert_eq!(body["metadata"]["labels"]["seen-at"], "v2");
    // Only the Equivalent webhook was called, and it saw the object at v2.
    let calls = hooks.calls.lock().clone();
    assert_eq!(calls.len(), 1, "{calls:?}");
    let req = &calls[0].1;
    assert_eq!(calls[0].0, "/eq");
    assert_eq!(req["object"]["apiVersion"], "example.com/v2");
    assert_eq!(req["kind"]["version"], "v2");
    assert_eq!(req["resource"]["version"], "v2");
    assert_eq!(req["requestKind"]["version"], "v1");
    assert_eq!(req["requestResource"]["version"], "v1");
}
