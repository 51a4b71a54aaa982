//! ValidatingAdmissionPolicy and its Binding enforced on writes, answered as a kube-apiserver
//! 1.33 answers them: `Deny` refuses with upstream's wording, `Warn` adds a `Warning` header
//! and stores, params come from a ConfigMap, matchConditions and selectors scope a policy,
//! `failurePolicy` decides what an evaluation error does.

use http_body_util::BodyExt;
use kube_client::Client;
use serde_json::{Value, json};

use crate::common::{client, raw, server};

const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";

fn deployments(ns: &str) -> String {
    format!("/apis/apps/v1/namespaces/{ns}/deployments")
}

fn deployment(name: &str, replicas: i64, labels: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}})
}

/// The rule of a policy on deployments' creates and updates.
fn deployments_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]})
}

fn max_replicas_policy(name: &str) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"failurePolicy": "Fail", "matchConstraints": deployments_rule(),
            "validations": [{"expression": "object.spec.replicas <= 5"}]}})
}

fn binding(name: &str, policy: &str, actions: Value, extra: Value) -> Value {
    let mut spec = json!({"policyName": policy, "validationActions": actions});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name}, "spec": spec})
}

async fn post(client: &Client, uri: &str, body: &Value) -> (u16, Value) {
    let (status, _, body) = raw(client, "POST", uri, "application/json", body.to_string()).await;
    (status, body)
}

/// POSTs `body`, answering the status, the `Warning` headers and the body.
async fn post_with_warnings(client: &Client, uri: &str, body: &Value) -> (u16, Vec<String>, Value) {
    let req = http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/json")
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

async fn created(client: &Client, uri: &str, body: Value) {
    let (status, answer) = post(client, uri, &body).await;
    assert_eq!(status, 201, "{answer}");
}

#[tokio::test]
async fn deny_refuses_creates_updates_patches_and_applies_until_the_binding_goes() {
    let server = server().await;
    let client = client(&server).await;
    let mut policy = max_replicas_policy("max-replicas");
    policy["spec"]
        .as_object_mut()
        .unwrap()
        .remove("failurePolicy");
    let (status, stored) = post(&client, POLICIES, &policy).await;
    assert_eq!(status, 201, "{stored}");
    // Upstream's defaults.
    assert_eq!(stored["spec"]["failurePolicy"], "Fail");
    let constraints = &stored["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["namespaceSelector"], json!({}));
    assert_eq!(constraints["objectSelector"], json!({}));
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");
    let b = binding(
        "max-replicas-binding",
        "max-replicas",
        json!(["Deny"]),
        json!({}),
    );
    created(&client, BINDINGS, b).await;

    let (status, body) = post(
        &client,
        &deployments("default"),
        &deployment("web", 6, json!({})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let denial = "ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' \
                  denied request: failed expression: object.spec.replicas <= 5";
    assert_eq!(
        body["message"],
        format!("deployments.apps \"web\" is forbidden: {denial}")
    );
    assert_eq!(body["details"]["name"], "web");
    assert_eq!(body["details"]["group"], "apps");
    assert_eq!(body["details"]["kind"], "deployments");
    assert_eq!(body["details"]["causes"][0]["message"], denial);

    // Within the limit: stored. An update, a merge patch and an apply beyond it: refused.
    created(
        &client,
        &deployments("default"),
        deployment("web", 3, json!({})),
    )
    .await;
    let web = format!("{}/web", deployments("default"));
    let over = deployment("web", 9, json!({}));
    let (status, _, body) = raw(&client, "PUT", &web, "application/json", over.to_string()).await;
    assert_eq!(status, 422, "{body}");
    let patch = json!({"spec": {"replicas": 7}}).to_string();
    let (status, _, body) = raw(
        &client,
        "PATCH",
        &web,
        "application/merge-patch+json",
        patch,
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with(denial),
        "{body}"
    );
    let apply = format!("{web}?fieldManager=tester&force=true");
    let (status, _, body) = raw(
        &client,
        "PATCH",
        &apply,
        "application/apply-patch+yaml",
        deployment("web", 8, json!({})).to_string(),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"].as_str().unwrap().ends_with(denial),
        "{body}"
    );
    let (status, _, got) = raw(&client, "GET", &web, "application/json", "").await;
    assert_eq!(status, 200);
    assert_eq!(got["spec"]["replicas"], 3, "nothing refused was stored");

    // Without the binding, the policy binds nothing.
    let (status, _, _) = raw(
        &client,
        "DELETE",
        &format!("{BINDINGS}/max-replicas-binding"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(status, 200);
    let patch = json!({"spec": {"replicas": 7}}).to_string();
    let (status, _, body) = raw(
        &client,
        "PATCH",
        &web,
        "application/merge-patch+json",
        patch,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["spec"]["replicas"], 7);
}

#[tokio::test]
async fn a_validation_reason_and_message_shape_the_answer() {
    let server = server().await;
    let client = client(&server).await;
    let mut policy = max_replicas_policy("limits");
    policy["spec"]["validations"] = json!([{"expression": "object.spec.replicas <= 5",
        "reason": "Forbidden", "message": "static message",
        "messageExpression": "'replicas ' + string(object.spec.replicas) + ' over 5'"}]);
    created(&client, POLICIES, policy).await;
    created(
        &client,
        BINDINGS,
        binding("limits", "limits", json!(["Deny"]), json!({})),
    )
    .await;
    let (status, body) = post(
        &client,
        &deployments("default"),
        &deployment("big", 6, json!({})),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'limits' with binding \
         'limits' denied request: replicas 6 over 5"
    );
}

#[tokio::test]
async fn warn_adds_a_warning_header_and_stores() {
    let server = server().await;
    let client = client(&server).await;
    created(&client, POLICIES, max_replicas_policy("max-replicas")).await;
    let b = binding(
        "warn-only",
        "max-replicas",
        json!(["Warn", "Audit"]),
        json!({}),
    );
    created(&client, BINDINGS, b).await;
    let (status, warnings, body) = post_with_warnings(
        &client,
        &deployments("default"),
        &deployment("web", 8, json!({})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["spec"]["replicas"], 8);
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'max-replicas' with binding \
          'warn-only': failed expression: object.spec.replicas <= 5\""
        ]
    );
    // Within the policy: no warning.
    let (status, warnings, _) = post_with_warnings(
        &client,
        &deployments("default"),
        &deployment("small", 2, json!({})),
    )
    .await;
    assert_eq!(status, 201);
    assert!(warnings.is_empty(), "{warnings:?}");
}

#[tokio::test]
async fn params_come_from_the_configmap_the_binding_names() {
    let server = server().await;
    let client = client(&server).await;
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "replica-limit"},
        "spec": {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": deployments_rule(),
            "variables": [{"name": "limit", "expression": "int(params.data.maxReplicas)"}],
            "validations": [{"expression": "object.spec.replicas <= variables.limit",
                "messageExpression": "'replicas must be at most ' + params.data.maxReplicas"}]}});
    created(&client, POLICIES, policy).await;
    let param_ref = json!({"paramRef": {"name": "replica-limit", "namespace": "default",
        "parameterNotFoundAction": "Deny"}});
    let b = binding("replica-limit", "replica-limit", json!(["Deny"]), param_ref);
    created(&client, BINDINGS, b).await;

    // No param yet: the binding cannot be configured, and Deny says so.
    let (status, body) = post(
        &client,
        &deployments("default"),
        &deployment("a", 1, json!({})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "deployments.apps \"a\" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with \
         binding 'replica-limit' denied request: failed to configure binding: no params found \
         for policy binding with `Deny` parameterNotFoundAction"
    );

    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "replica-limit"}, "data": {"maxReplicas": "3"}});
    created(&client, "/api/v1/namespaces/default/configmaps", cm).await;
    let (status, body) = post(
        &client,
        &deployments("default"),
        &deployment("a", 4, json!({})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: replicas must be at most 3"),
        "{body}"
    );
    created(
        &client,
        &deployments("default"),
        deployment("a", 3, json!({})),
    )
    .await;
}

#[tokio::test]
async fn match_conditions_and_selectors_scope_a_policy() {
    let server = server().await;
    let client = client(&server).await;
    for (ns, labels) in [
        ("prod", json!({"env": "prod"})),
        ("dev", json!({"env": "dev"})),
    ] {
        let body = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": labels}});
        created(&client, "/api/v1/namespaces", body).await;
    }
    let mut policy = max_replicas_policy("max-replicas");
    policy["spec"]["matchConstraints"]["objectSelector"] =
        json!({"matchExpressions": [{"key": "policy-exempt", "operator": "DoesNotExist"}]});
    policy["spec"]["matchConditions"] = json!([{"name": "not-canary",
        "expression": "!has(object.metadata.labels) || !('canary' in object.metadata.labels)"}]);
    created(&client, POLICIES, policy).await;
    let scope = json!({"matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}});
    let b = binding("prod-only", "max-replicas", json!(["Deny"]), scope);
    created(&client, BINDINGS, b).await;

    // Another namespace: not selected by the binding.
    created(&client, &deployments("dev"), deployment("a", 9, json!({}))).await;
    // The selected namespace: refused.
    let (status, body) = post(
        &client,
        &deployments("prod"),
        &deployment("a", 9, json!({})),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    // The object selector lets labelled objects through; so does a false match condition.
    let exempt = deployment("b", 9, json!({"policy-exempt": "yes"}));
    created(&client, &deployments("prod"), exempt).await;
    created(
        &client,
        &deployments("prod"),
        deployment("c", 9, json!({"canary": "true"})),
    )
    .await;
}

#[tokio::test]
async fn failure_policy_decides_what_an_evaluation_error_does() {
    let server = server().await;
    let client = client(&server).await;
    for (name, failure) in [("strict", "Fail"), ("lenient", "Ignore")] {
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": {"failurePolicy": failure,
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"]}],
                    "namespaceSelector": {"matchLabels": {"policy": name}}},
                "validations": [{"expression": "object.data.missing == 'x'"}]}});
        created(&client, POLICIES, policy).await;
        created(
            &client,
            BINDINGS,
            binding(name, name, json!(["Deny"]), json!({})),
        )
        .await;
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"policy": name}}});
        created(&client, "/api/v1/namespaces", ns).await;
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
        "data": {"k": "v"}});
    let (status, body) = post(&client, "/api/v1/namespaces/strict/configmaps", &cm).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'strict' with binding 'strict' \
         denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: \
         missing"
    );
    created(&client, "/api/v1/namespaces/lenient/configmaps", cm).await;
}

#[tokio::test]
async fn policies_whose_expressions_do_not_compile_are_refused() {
    let server = server().await;
    let client = client(&server).await;
    let mut policy = max_replicas_policy("broken");
    policy["spec"]["validations"] = json!([{"expression": "object.spec.replicas <= "}]);
    let (status, body) = post(&client, POLICIES, &policy).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let cause = &body["details"]["causes"][0];
    assert_eq!(cause["field"], "spec.validations[0].expression");
    assert!(
        cause["message"].as_str().unwrap().starts_with(
            "Invalid value: \"object.spec.replicas <= \": compilation failed: ERROR: <input>:1:"
        ),
        "{body}"
    );
    let b = binding("b", "", json!(["Deny", "Block"]), json!({}));
    let (status, body) = post(&client, BINDINGS, &b).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["message"],
        "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: \
         [spec.policyName: Required value, spec.validationActions[1]: Unsupported value: \
         \"Block\": supported values: \"Audit\", \"Deny\", \"Warn\"]"
    );
}

#[tokio::test]
async fn policies_do_not_apply_to_the_admission_configuration() {
    let server = server().await;
    let client = client(&server).await;
    let keep = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "keep"}});
    created(&client, "/api/v1/namespaces/default/configmaps", keep).await;
    // A policy refusing every write of every resource, bound with Deny.
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "deny-all"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["*"],
            "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
            "validations": [{"expression": "false", "message": "no writes"}]}});
    created(&client, POLICIES, policy).await;
    created(
        &client,
        BINDINGS,
        binding("deny-all", "deny-all", json!(["Deny"]), json!({})),
    )
    .await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let (status, body) = post(&client, "/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(status, 422, "{body}");
    // Deletes are admitted too: a Warn binding's warning reaches the answer.
    let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "deletes"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""],
            "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]},
            "validations": [{"expression": "object == null && oldObject.metadata.name != 'keep'",
                "messageExpression": "'deleting ' + oldObject.metadata.name"}]}});
    created(&client, POLICIES, policy).await;
    created(
        &client,
        BINDINGS,
        binding("deletes", "deletes", json!(["Warn"]), json!({})),
    )
    .await;
    let keep = "/api/v1/namespaces/default/configmaps/keep";
    let (status, _, body) = raw(&client, "DELETE", keep, "application/json", "").await;
    assert_eq!(status, 422, "{body}");
    let all = "/api/v1/namespaces/default/configmaps";
    let (status, _, body) = raw(&client, "DELETE", all, "application/json", "").await;
    assert_eq!(
        status, 422,
        "a collection delete is admitted item by item: {body}"
    );
    assert_eq!(
        body["message"],
        "configmaps \"keep\" is forbidden: ValidatingAdmissionPolicy 'deny-all' with binding \
         'deny-all' denied request: no writes"
    );
    // The policy and binding themselves can still be changed and removed.
    let (status, _, body) = raw(
        &client,
        "DELETE",
        &format!("{BINDINGS}/deny-all"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    created(&client, "/api/v1/namespaces/default/configmaps", cm).await;
    let req = http::Request::builder()
        .method("DELETE")
        .uri(keep)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.unwrap();
    assert_eq!(resp.status(), 200);
    let warnings: Vec<_> = resp.headers().get_all("warning").iter().collect();
    assert_eq!(
        warnings,
        [
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'deletes' with binding \
          'deletes': deleting keep\""
        ]
    );
}

#[tokio::test]
async fn subresources_match_only_the_rules_that_name_them() {
    let server = server().await;
    let client = client(&server).await;
    created(
        &client,
        &deployments("default"),
        deployment("web", 2, json!({})),
    )
    .await;
    for (name, resource) in [
        ("frozen", "deployments"),
        ("no-scaling", "deployments/scale"),
    ] {
        let policy = json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name},
            "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": ["apps"],
                "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": [resource]}]},
                "validations": [{"expression": "false", "message": name}]}});
        created(&client, POLICIES, policy).await;
        created(
            &client,
            BINDINGS,
            binding(name, name, json!(["Deny"]), json!({})),
        )
        .await;
    }
    let web = format!("{}/web", deployments("default"));
    let merge = "application/merge-patch+json";
    // The object itself: refused by the policy on deployments.
    let patch = json!({"metadata": {"labels": {"a": "b"}}}).to_string();
    let (status, _, body) = raw(&client, "PATCH", &web, merge, patch).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: frozen"),
        "{body}"
    );
    // Its status: neither rule names it.
    let patch = json!({"status": {"observedGeneration": 1}}).to_string();
    let (status, _, body) = raw(&client, "PATCH", &format!("{web}/status"), merge, patch).await;
    assert_eq!(status, 200, "{body}");
    // Its scale: refused by the policy on deployments/scale only.
    let patch = json!({"spec": {"replicas": 4}}).to_string();
    let (status, _, body) = raw(&client, "PATCH", &format!("{web}/scale"), merge, patch).await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with("denied request: no-scaling"),
        "{body}"
    );
}
