//! The ResourceQuota admission plugin: creates measured against a namespace's quotas,
//! refused past them with upstream's messages, and charged to their `status.used`.

use kube_client::Client;
use kube_client::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::common::{client, raw, server};

/// `(code, message)` of a create at `path` (201 and `""` when created).
async fn post(client: &Client, path: &str, body: Value) -> (u16, String) {
    let (code, _, answer) = raw(
        client,
        "POST",
        path,
        "application/json",
        serde_json::to_vec(&body).unwrap(),
    )
    .await;
    let message = answer["message"].as_str().unwrap_or_default().to_string();
    (code, message)
}

fn pod(name: &str, cpu: Option<&str>) -> Value {
    let resources = match cpu {
        Some(cpu) => json!({"requests": {"cpu": cpu}}),
        None => json!({}),
    };
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
}

/// The `status.used` of quota `name` in namespace `rq`.
async fn used(quotas: &Api<DynamicObject>, name: &str) -> Value {
    quotas.get(name).await.unwrap().data["status"]["used"].clone()
}

#[tokio::test]
async fn quotas_refuse_and_charge_writes_as_upstream() {
    let server = server().await;
    let client = client(&server).await;
    let (code, _) = post(
        &client,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "rq"}}),
    )
    .await;
    assert_eq!(code, 201);
    let ar = kube_client::api::ApiResource::erase::<k8s_openapi::api::core::v1::ResourceQuota>(&());
    let quotas: Api<DynamicObject> = Api::namespaced_with(client.clone(), "rq", &ar);
    let base = "/api/v1/namespaces/rq";
    for (name, hard) in [
        ("compute", json!({"requests.cpu": "1"})),
        (
            "objects",
            json!({"pods": "5", "configmaps": "1", "services.nodeports": "1"}),
        ),
    ] {
        let q = json!({"apiVersion": "v1", "kind": "ResourceQuota",
            "metadata": {"name": name}, "spec": {"hard": hard}});
        assert_eq!(
            post(&client, &format!("{base}/resourcequotas"), q).await.0,
            201
        );
    }

    // No controller measured the quotas (their status is empty): they limit nothing yet, as
    // on a kube-apiserver without kube-controller-manager.
    assert_eq!(
        post(&client, &format!("{base}/pods"), pod("free", None)).await,
        (201, String::new())
    );
    assert_eq!(used(&quotas, "objects").await, Value::Null);

    // What a quota controller writes: hard from spec, used measured.
    for (name, status) in [
        (
            "compute",
            json!({"hard": {"requests.cpu": "1"}, "used": {"requests.cpu": "0"}}),
        ),
        (
            "objects",
            json!({"hard": {"pods": "5", "configmaps": "1", "services.nodeports": "1"},
                   "used": {"pods": "1", "configmaps": "0", "services.nodeports": "0"}}),
        ),
    ] {
        quotas
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": status})),
            )
            .await
            .unwrap();
    }

    assert_eq!(
        post(&client, &format!("{base}/pods"), pod("p1", Some("600m"))).await,
        (201, String::new())
    );
    assert_eq!(
        used(&quotas, "compute").await,
        json!({"requests.cpu": "600m"})
    );
    assert_eq!(
        used(&quotas, "objects").await,
        json!({"pods": "2", "configmaps": "0", "services.nodeports": "0"})
    );
    let q = quotas.get("compute").await.unwrap();
    let managers: Vec<&str> = q
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .filter_map(|m| m.manager.as_deref())
        .collect();
    assert!(managers.contains(&"kube-apiserver"), "{managers:?}");

    assert_eq!(
        post(&client, &format!("{base}/pods"), pod("p2", Some("600m"))).await,
        (
            403,
            r#"pods "p2" is forbidden: exceeded quota: compute, requested: requests.cpu=600m, used: requests.cpu=600m, limited: requests.cpu=1"#
                .into()
        )
    );
    assert_eq!(
        post(&client, &format!("{base}/pods"), pod("p3", None)).await,
        (
            403,
            r#"pods "p3" is forbidden: failed quota: compute: must specify requests.cpu for: c"#
                .into()
        )
    );
    // A dry run is measured and charges nothing.
    assert_eq!(
        post(
            &client,
            &format!("{base}/pods?dryRun=All"),
            pod("p4", Some("400m"))
        )
        .await,
        (201, String::new())
    );
    assert_eq!(
        used(&quotas, "compute").await,
        json!({"requests.cpu": "600m"})
    );

    assert_eq!(
        post(&client, &format!("{base}/configmaps"), configmap("c1"))
            .await
            .0,
        201
    );
    assert_eq!(
        post(&client, &format!("{base}/configmaps"), configmap("c2")).await,
        (
            403,
            r#"configmaps "c2" is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=1, limited: configmaps=1"#
                .into()
        )
    );

    // An update that makes a Service a NodePort one uses node ports.
    let svc = |name: &str, type_: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"type": type_, "ports": [{"port": 80}]}})
    };
    assert_eq!(
        post(&client, &format!("{base}/services"), svc("s1", "ClusterIP"))
            .await
            .0,
        201
    );
    let services: Api<k8s_openapi::api::core::v1::Service> = Api::namespaced(client.clone(), "rq");
    services
        .patch(
            "s1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"type": "NodePort"}})),
        )
        .await
        .unwrap();
    assert_eq!(used(&quotas, "objects").await["services.nodeports"], "1");
    assert_eq!(
        post(&client, &format!("{base}/services"), svc("s2", "NodePort")).await,
        (
            403,
            r#"services "s2" is forbidden: exceeded quota: objects, requested: services.nodeports=1, used: services.nodeports=1, limited: services.nodeports=1"#
                .into()
        )
    );

    // A quota whose status names a limit without its usage refuses what it would count.
    let fresh = json!({"apiVersion": "v1", "kind": "ResourceQuota",
        "metadata": {"name": "fresh"}, "spec": {"hard": {"secrets": "3"}}});
    assert_eq!(
        post(&client, &format!("{base}/resourcequotas"), fresh)
            .await
            .0,
        201
    );
    quotas
        .patch_status(
            "fresh",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"hard": {"secrets": "3"}}})),
        )
        .await
        .unwrap();
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    assert_eq!(
        post(&client, &format!("{base}/secrets"), secret).await,
        (
            403,
            r#"secrets "s" is forbidden: status unknown for quota: fresh, resources: secrets"#
                .into()
        )
    );
}
