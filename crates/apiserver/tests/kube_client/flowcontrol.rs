//! API priority and fairness as a client sees it: the bootstrap FlowSchemas and
//! PriorityLevelConfigurations, the `X-Kubernetes-PF-*-UID` headers naming what classified a
//! request (refused ones too), and the FlowSchemas' `Dangling` condition.

use http_body_util::BodyExt;
use kube_client::Client;
use kube_client::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use serde_json::{Value, json};

use crate::common::{client, server};

const FS_HEADER: &str = "x-kubernetes-pf-flowschema-uid";
const PL_HEADER: &str = "x-kubernetes-pf-prioritylevel-uid";

/// Sends a GET, as `impersonate` when given; answers the status and the two headers.
async fn classified(
    client: &Client,
    uri: &str,
    impersonate: Option<&str>,
) -> (u16, String, String) {
    let mut req = http::Request::builder().method("GET").uri(uri);
    if let Some(user) = impersonate {
        req = req.header("Impersonate-User", user);
    }
    let req = req.body(kube_client::client::Body::empty()).unwrap();
    let resp = client.send(req).await.expect("request sent");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_else(|| panic!("{uri}: no {name}"))
    };
    let (fs, pl) = (header(FS_HEADER), header(PL_HEADER));
    let status = resp.status().as_u16();
    let _ = resp.into_body().collect().await;
    (status, fs, pl)
}

fn api(client: &Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("flowcontrol.apiserver.k8s.io", "v1", kind);
    Api::all_with(
        client.clone(),
        &ApiResource::from_gvk_with_plural(&gvk, plural),
    )
}

fn uid(obj: &DynamicObject) -> String {
    obj.metadata.uid.clone().unwrap()
}

fn dangling(obj: &DynamicObject) -> Value {
    let conditions = obj.data["status"]["conditions"].as_array().unwrap();
    let c = conditions.iter().find(|c| c["type"] == "Dangling").unwrap();
    json!([c["status"], c["reason"], c["message"]])
}

#[tokio::test]
async fn requests_are_classified_by_the_bootstrap_and_new_flow_schemas() {
    let server = server().await;
    let admin = client(&server).await;
    let schemas = api(&admin, "FlowSchema", "flowschemas");
    let levels = api(
        &admin,
        "PriorityLevelConfiguration",
        "prioritylevelconfigurations",
    );

    let listed = schemas.list(&ListParams::default()).await.unwrap().items;
    let mut names: Vec<_> = listed
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "catch-all",
            "endpoint-controller",
            "exempt",
            "global-default",
            "kube-controller-manager",
            "kube-scheduler",
            "kube-system-service-accounts",
            "probes",
            "service-accounts",
            "system-leader-election",
            "system-node-high",
            "system-nodes",
            "workload-leader-election",
        ]
    );
    for fs in &listed {
        let annotations = fs.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["apf.kubernetes.io/autoupdate-spec"], "true");
        let level = fs.data["spec"]["priorityLevelConfiguration"]["name"]
            .as_str()
            .unwrap();
        assert_eq!(
            dangling(fs),
            json!([
                "False",
                "Found",
                format!(
                    "This FlowSchema references the PriorityLevelConfiguration object named \"{level}\" and it exists"
                )
            ])
        );
    }
    let mut level_names: Vec<_> = levels
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    level_names.sort();
    assert_eq!(
        level_names,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );

    // The admin (`system:masters`) is exempt.
    let exempt_fs = uid(&schemas.get("exempt").await.unwrap());
    let exempt_pl = uid(&levels.get("exempt").await.unwrap());
    let uri = "/api/v1/namespaces/default/configmaps";
    assert_eq!(
        classified(&admin, uri, None).await,
        (200, exempt_fs, exempt_pl)
    );
    // Anyone else falls to `global-default`, refused requests too.
    let default_fs = uid(&schemas.get("global-default").await.unwrap());
    let default_pl = uid(&levels.get("global-default").await.unwrap());
    assert_eq!(
        classified(&admin, uri, Some("alice")).await,
        (403, default_fs.clone(), default_pl.clone())
    );
    // The health probes are exempt for everyone.
    let probes_fs = uid(&schemas.get("probes").await.unwrap());
    let (_, fs, pl) = classified(&admin, "/readyz", Some("alice")).await;
    assert_eq!(
        (fs, pl),
        (probes_fs, uid(&levels.get("exempt").await.unwrap()))
    );

    // A FlowSchema ahead of `global-default` matching alice classifies her requests.
    let mine: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": "FlowSchema",
        "metadata": {"name": "alice"},
        "spec": {
            "priorityLevelConfiguration": {"name": "workload-low"},
            "matchingPrecedence": 1000,
            "rules": [{
                "subjects": [{"kind": "User", "user": {"name": "alice"}}],
                "resourceRules": [{
                    "verbs": ["list"], "apiGroups": [""], "resources": ["configmaps"],
                    "namespaces": ["default"],
                }],
            }],
        },
    }))
    .unwrap();
    let created = schemas.create(&PostParams::default(), &mine).await.unwrap();
    let low_pl = uid(&levels.get("workload-low").await.unwrap());
    assert_eq!(
        classified(&admin, uri, Some("alice")).await,
        (403, uid(&created), low_pl)
    );
    // Other requests of hers, and other users' lists, are classified as before.
    assert_eq!(
        classified(
            &admin,
            "/api/v1/namespaces/kube-system/configmaps",
            Some("alice")
        )
        .await,
        (403, default_fs.clone(), default_pl.clone())
    );
    assert_eq!(
        classified(&admin, uri, Some("bob")).await,
        (403, default_fs, default_pl)
    );
    let stored = schemas.get("alice").await.unwrap();
    assert_eq!(dangling(&stored)[1], "Found");

    // A FlowSchema naming a missing priority level is dangling, and skipped.
    let mut broken = mine.clone();
    broken.metadata.name = Some("broken".into());
    broken.data["spec"]["priorityLevelConfiguration"]["name"] = json!("no-such-level");
    broken.data["spec"]["matchingPrecedence"] = json!(10);
    schemas
        .create(&PostParams::default(), &broken)
        .await
        .unwrap();
    assert_eq!(
        dangling(&schemas.get("broken").await.unwrap()),
        json!([
            "True",
            "NotFound",
            "This FlowSchema references the PriorityLevelConfiguration object named \"no-such-level\" but there is no such object"
        ])
    );
    let (_, fs, _) = classified(&admin, uri, Some("alice")).await;
    assert_eq!(fs, uid(&created));
}
