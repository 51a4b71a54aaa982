//! CRD conversion strategy `Webhook`: a CRD serving `v1` and `v2` (`v2` stored, `spec.size`
//! of `v1` is `spec.replicas` of `v2`), every request at `v1` converted through the webhook of
//! `common::conversion` over HTTPS, requests at `v2` never.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube_client::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, WatchEvent, WatchParams,
};
use serde_json::{Value, json};

use crate::common::conversion::ConversionWebhook;
use crate::common::{client, raw, server};

const V1: &str = "/apis/conv.example.com/v1/namespaces/default/gadgets";
const V2: &str = "/apis/conv.example.com/v2/namespaces/default/gadgets";

async fn setup() -> (
    crt_apiserver::Server,
    kube_client::Client,
    ConversionWebhook,
) {
    let server = server().await;
    let client = client(&server).await;
    let webhook = ConversionWebhook::start().await;
    let (code, _, body) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        webhook.crd().to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    (server, client, webhook)
}

async fn get(client: &kube_client::Client, uri: &str) -> (u16, Value) {
    let (code, _, body) = raw(client, "GET", uri, "application/json", "").await;
    (code, body)
}

fn gadget(api_version: &str, name: &str, spec: Value) -> String {
    json!({"apiVersion": api_version, "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
        .to_string()
}

#[tokio::test]
async fn created_at_v1_stored_at_v2_and_read_at_both() {
    let (_server, client, webhook) = setup().await;
    let (code, _, created) = raw(
        &client,
        "POST",
        V1,
        "application/json",
        gadget("conv.example.com/v1", "a", json!({"size": 3})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "conv.example.com/v1");
    assert_eq!(created["spec"], json!({"size": 3}));
    // In, then out: two reviews.
    assert_eq!(webhook.reviews(), 2);

    // Stored at v2: read there without a call.
    let (code, stored) = get(&client, &format!("{V2}/a")).await;
    assert_eq!(code, 200, "{stored}");
    assert_eq!(stored["apiVersion"], "conv.example.com/v2");
    assert_eq!(stored["spec"], json!({"replicas": 3}));
    assert_eq!(stored["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(webhook.reviews(), 2);

    let (code, at_v1) = get(&client, &format!("{V1}/a")).await;
    assert_eq!(code, 200, "{at_v1}");
    assert_eq!(at_v1["apiVersion"], "conv.example.com/v1");
    assert_eq!(at_v1["spec"], json!({"size": 3}));
    assert_eq!(at_v1["metadata"], stored["metadata"]);
    assert_eq!(webhook.reviews(), 3);

    // Written at v2 directly: no call.
    let (code, _, _) = raw(
        &client,
        "POST",
        V2,
        "application/json",
        gadget("conv.example.com/v2", "b", json!({"replicas": 4})),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(webhook.reviews(), 3);
    // A v1 body sent to v2 is converted on its way in (and only then).
    let (code, _, created) = raw(
        &client,
        "POST",
        V2,
        "application/json",
        gadget("conv.example.com/v1", "c", json!({"size": 9})),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["apiVersion"], "conv.example.com/v2");
    assert_eq!(created["spec"], json!({"replicas": 9}));
    assert_eq!(webhook.reviews(), 4);
    let (code, _, _) = raw(
        &client,
        "DELETE",
        &format!("{V2}/c"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(webhook.reviews(), 4);

    // A list converts its items in one review.
    let (code, list) = get(&client, V1).await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["apiVersion"], "conv.example.com/v1");
    assert_eq!(list["kind"], "GadgetList");
    let specs: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["spec"])
        .collect();
    assert_eq!(specs, [&json!({"size": 3}), &json!({"size": 4})]);
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["apiVersion"] == "conv.example.com/v1")
    );
    assert_eq!(webhook.reviews(), 5);
    let (_, list) = get(&client, V2).await;
    assert_eq!(list["items"][0]["spec"], json!({"replicas": 3}));
    assert_eq!(webhook.reviews(), 5);
}

#[tokio::test]
async fn updates_and_patches_at_v1_round_trip() {
    let (_server, client, _webhook) = setup().await;
    let (code, _, _) = raw(
        &client,
        "POST",
        V1,
        "application/json",
        gadget("conv.example.com/v1", "a", json!({"size": 1})),
    )
    .await;
    assert_eq!(code, 201);
    let (_, mut obj) = get(&client, &format!("{V1}/a")).await;
    obj["spec"]["size"] = json!(5);
    let (code, _, updated) = raw(
        &client,
        "PUT",
        &format!("{V1}/a"),
        "application/json",
        obj.to_string(),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"], json!({"size": 5}));
    let (_, stored) = get(&client, &format!("{V2}/a")).await;
    assert_eq!(stored["spec"], json!({"replicas": 5}));
    assert_eq!(stored["metadata"]["generation"], 2);

    // The read resourceVersion is a precondition: a stale one conflicts.
    let (code, _, stale) = raw(
        &client,
        "PUT",
        &format!("{V1}/a"),
        "application/json",
        obj.to_string(),
    )
    .await;
    assert_eq!(code, 409, "{stale}");

    let (code, _, patched) = raw(
        &client,
        "PATCH",
        &format!("{V1}/a"),
        "application/merge-patch+json",
        json!({"spec": {"size": 7}, "metadata": {"labels": {"l": "x"}}}).to_string(),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"size": 7}));
    assert_eq!(patched["metadata"]["labels"]["l"], "x");
    let (_, stored) = get(&client, &format!("{V2}/a")).await;
    assert_eq!(stored["spec"], json!({"replicas": 7}));
    assert_eq!(stored["metadata"]["labels"]["l"], "x");

    let (code, _, patched) = raw(
        &client,
        "PATCH",
        &format!("{V1}/a"),
        "application/json-patch+json",
        json!([{"op": "replace", "path": "/spec/size", "value": 8}]).to_string(),
    )
    .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(patched["spec"], json!({"size": 8}));

    // Server-side apply at v1: the configuration is converted as an object.
    let (code, _, applied) = raw(
        &client,
        "PATCH",
        &format!("{V1}/a?fieldManager=tester&force=true"),
        "application/apply-patch+yaml",
        "apiVersion: conv.example.com/v1\nkind: Gadget\nmetadata:\n  name: a\nspec:\n  size: 10\n",
    )
    .await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(applied["spec"], json!({"size": 10}));
    let (_, stored) = get(&client, &format!("{V2}/a")).await;
    assert_eq!(stored["spec"], json!({"replicas": 10}));

    let (code, _, deleted) = raw(
        &client,
        "DELETE",
        &format!("{V1}/a"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(code, 200, "{deleted}");
    assert_eq!(deleted["apiVersion"], "conv.example.com/v1");
    assert_eq!(deleted["spec"], json!({"size": 10}));
}

#[tokio::test]
async fn a_watch_at_v1_sees_converted_events() {
    let (_server, client, webhook) = setup().await;
    let gvk = GroupVersionKind::gvk("conv.example.com", "v1", "Gadget");
    let v1: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk));
    let stream = v1.watch(&WatchParams::default(), "0").await.unwrap();
    let mut stream = stream.boxed();
    let (code, _, _) = raw(
        &client,
        "POST",
        V2,
        "application/json",
        gadget("conv.example.com/v2", "w", json!({"replicas": 2})),
    )
    .await;
    assert_eq!(code, 201);
    let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("an event")
        .unwrap()
        .unwrap();
    let WatchEvent::Added(obj) = event else {
        panic!("expected ADDED, got {event:?}");
    };
    assert_eq!(obj.types.unwrap().api_version, "conv.example.com/v1");
    assert_eq!(obj.data["spec"], json!({"size": 2}));

    let (code, _, _) = raw(
        &client,
        "PATCH",
        &format!("{V2}/w"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": 6}}).to_string(),
    )
    .await;
    assert_eq!(code, 200);
    let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("an event")
        .unwrap()
        .unwrap();
    let WatchEvent::Modified(obj) = event else {
        panic!("expected MODIFIED, got {event:?}");
    };
    assert_eq!(obj.data["spec"], json!({"size": 6}));

    // An event that cannot be converted ends the watch with the 500.
    webhook.stop().await;
    let (code, _, _) = raw(
        &client,
        "PATCH",
        &format!("{V2}/w"),
        "application/merge-patch+json",
        json!({"spec": {"replicas": 7}}).to_string(),
    )
    .await;
    assert_eq!(code, 200);
    let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("an event")
        .unwrap()
        .unwrap();
    let WatchEvent::Error(status) = event else {
        panic!("expected ERROR, got {event:?}");
    };
    assert_eq!(status.code, 500);
    assert!(
        status
            .message
            .contains("conversion webhook for conv.example.com/v2, Kind=Gadget failed"),
        "{}",
        status.message
    );
    let end = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("the end");
    assert!(matches!(end, Ok(None)), "{end:?}");
}

#[tokio::test]
async fn the_webhook_down_is_a_500_worded_as_upstream() {
    let (_server, client, webhook) = setup().await;
    let (code, _, _) = raw(
        &client,
        "POST",
        V2,
        "application/json",
        gadget("conv.example.com/v2", "a", json!({"replicas": 1})),
    )
    .await;
    assert_eq!(code, 201);
    webhook.stop().await;
    let (code, status) = get(&client, &format!("{V1}/a")).await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "InternalError");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "Internal error occurred: conversion webhook for conv.example.com/v2, Kind=Gadget failed: Post \"https://127.0.0.1:"
        ),
        "{message}"
    );
    let (code, _, status) = raw(
        &client,
        "POST",
        V1,
        "application/json",
        gadget("conv.example.com/v1", "b", json!({"size": 1})),
    )
    .await;
    assert_eq!(code, 500, "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("conversion webhook for conv.example.com/v1, Kind=Gadget failed: "),
        "{status}"
    );
    // Nothing was stored; the storage version still reads.
    let (_, list) = get(&client, V2).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    let (code, _) = get(&client, V1).await;
    assert_eq!(code, 500);
}

#[tokio::test]
async fn a_webhook_strategy_needs_a_client_config_and_review_versions() {
    let server = server().await;
    let client = client(&server).await;
    let webhook = ConversionWebhook::start().await;
    let mut crd = webhook.crd();
    crd["spec"]["conversion"] = json!({"strategy": "Webhook"});
    let (code, _, status) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string(),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook"),
        "{message}"
    );
    assert!(
        message.contains("spec.conversion.conversionReviewVersions: Required value"),
        "{message}"
    );
    let mut crd = webhook.crd();
    crd["spec"]["conversion"]["webhook"]["conversionReviewVersions"] = json!(["v2"]);
    crd["spec"]["conversion"]["webhook"]["clientConfig"]["url"] = json!("http://127.0.0.1/convert");
    let (code, _, status) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string(),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1"),
        "{message}"
    );
    assert!(
        message.contains("spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]"),
        "{message}"
    );
}
