//! RBAC with the real kubectl: `kubectl auth can-i` (yes or no, exit 0 or 1) answers per
//! binding, `--as` / `--as-group` impersonate (the admin may), a ServiceAccount without a
//! binding is refused with upstream's 403 until a RoleBinding grants it, ClusterRoles
//! aggregated by label grant what they aggregate, and `can-i --list` lists the caller's rules.

use super::{Kubectl, Out};

/// `kubectl auth can-i ARGS`: its answer line and exit code.
async fn can_i(k: &Kubectl, args: &[&str]) -> (String, Option<i32>) {
    let mut all = vec!["auth", "can-i"];
    all.extend(args);
    let Out { stdout, code, .. } = k.run(&all, None).await;
    (stdout.trim().to_string(), code)
}

async fn yes(k: &Kubectl, args: &[&str]) {
    assert_eq!(
        can_i(k, args).await,
        ("yes".into(), Some(0)),
        "can-i {args:?}"
    );
}

async fn no(k: &Kubectl, args: &[&str]) {
    assert_eq!(
        can_i(k, args).await,
        ("no".into(), Some(1)),
        "can-i {args:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_answers_per_binding() {
    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    // The admin token's user is in system:masters.
    yes(&k, &["create", "pods"]).await;
    yes(&k, &["delete", "nodes"]).await;
    // alice has nothing but what every authenticated user has.
    no(&k, &["get", "pods", "--as", "alice"]).await;
    yes(&k, &["get", "/api", "--as", "alice"]).await;
    yes(
        &k,
        &[
            "create",
            "selfsubjectaccessreviews.authorization.k8s.io",
            "--as",
            "alice",
        ],
    )
    .await;
    no(&k, &["get", "/metrics", "--as", "alice"]).await;

    // A RoleBinding to the ClusterRole view grants in its namespace only.
    k.ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
    ])
    .await;
    yes(&k, &["get", "pods", "--as", "alice"]).await;
    yes(&k, &["list", "deployments.apps", "--as", "alice"]).await;
    yes(&k, &["get", "pods", "--subresource=log", "--as", "alice"]).await;
    no(&k, &["get", "pods", "-n", "kube-system", "--as", "alice"]).await;
    no(&k, &["delete", "pods", "--as", "alice"]).await;
    no(&k, &["get", "secrets", "--as", "alice"]).await;

    // Resource names: a named rule allows the named object only, never a list.
    k.ok(&[
        "create",
        "role",
        "one-cm",
        "--verb=get,update",
        "--resource=configmaps",
        "--resource-name=a",
    ])
    .await;
    k.ok(&[
        "create",
        "rolebinding",
        "bob-one-cm",
        "--role=one-cm",
        "--user=bob",
    ])
    .await;
    yes(&k, &["get", "configmaps/a", "--as", "bob"]).await;
    yes(&k, &["update", "configmaps/a", "--as", "bob"]).await;
    no(&k, &["get", "configmaps/b", "--as", "bob"]).await;
    no(&k, &["list", "configmaps", "--as", "bob"]).await;

    // A group's binding counts for whoever is impersonated with the group.
    no(&k, &["list", "nodes", "--as", "carol", "--as-group", "ops"]).await;
    k.ok(&[
        "create",
        "clusterrole",
        "node-reader",
        "--verb=get,list,watch",
        "--resource=nodes",
    ])
    .await;
    k.ok(&[
        "create",
        "clusterrolebinding",
        "ops-nodes",
        "--clusterrole=node-reader",
        "--group=ops",
    ])
    .await;
    yes(&k, &["list", "nodes", "--as", "carol", "--as-group", "ops"]).await;
    no(&k, &["list", "nodes", "--as", "carol"]).await;
    // Explicit groups are all the impersonated user has (plus system:authenticated).
    yes(&k, &["get", "/api", "--as", "carol", "--as-group", "ops"]).await;

    // A SubjectAccessReview needs `create subjectaccessreviews`, which alice lacks.
    let sar = r#"{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": "bob", "resourceAttributes": {"namespace": "default", "verb": "get",
        "resource": "configmaps", "name": "a"}}}"#;
    let err = k
        .fails(
            &["create", "-f", "-", "-o", "json", "--as", "alice"],
            Some(sar),
        )
        .await;
    assert!(
        err.contains(r#"Error from server (Forbidden): error when creating "STDIN": subjectaccessreviews.authorization.k8s.io is forbidden: User "alice" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope"#),
        "{err}"
    );
    let answered: serde_json::Value = serde_json::from_str(
        &k.ok_with(&["create", "-f", "-", "-o", "json"], Some(sar))
            .await,
    )
    .unwrap();
    assert_eq!(
        answered["status"],
        serde_json::json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"bob-one-cm/default\" of Role \"one-cm\" to User \"bob\""})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_is_forbidden_until_a_role_binding_grants_it() {
    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&["create", "namespace", "team"]).await;
    k.ok(&["create", "serviceaccount", "op", "-n", "team"])
        .await;
    let sa = "system:serviceaccount:team:op";
    let err = k
        .fails(&["get", "configmaps", "-n", "team", "--as", sa], None)
        .await;
    assert_eq!(
        err.trim(),
        r#"Error from server (Forbidden): configmaps is forbidden: User "system:serviceaccount:team:op" cannot list resource "configmaps" in API group "" in the namespace "team""#
    );
    let err = k
        .fails(
            &[
                "create",
                "configmap",
                "c",
                "--from-literal=a=1",
                "-n",
                "team",
                "--as",
                sa,
            ],
            None,
        )
        .await;
    assert!(
        err.contains(r#"configmaps is forbidden: User "system:serviceaccount:team:op" cannot create resource "configmaps" in API group "" in the namespace "team""#),
        "{err}"
    );
    k.ok(&[
        "create",
        "rolebinding",
        "op-edit",
        "--clusterrole=edit",
        "--serviceaccount=team:op",
        "-n",
        "team",
    ])
    .await;
    k.ok(&[
        "create",
        "configmap",
        "c",
        "--from-literal=a=1",
        "-n",
        "team",
        "--as",
        sa,
    ])
    .await;
    assert!(
        k.ok(&["get", "configmaps", "-n", "team", "--as", sa])
            .await
            .contains("c ")
    );
    // A RoleBinding in a namespace grants reading the Namespace itself, as upstream's.
    k.ok(&["get", "namespace", "team", "--as", sa]).await;
    let err = k
        .fails(&["get", "namespace", "default", "--as", sa], None)
        .await;
    assert_eq!(
        err.trim(),
        r#"Error from server (Forbidden): namespaces "default" is forbidden: User "system:serviceaccount:team:op" cannot get resource "namespaces" in API group "" in the namespace "default""#
    );
    // Only in its namespace; and edit does not grant RBAC itself.
    let err = k
        .fails(&["get", "configmaps", "-n", "default", "--as", sa], None)
        .await;
    assert!(
        err.contains(
            "cannot list resource \"configmaps\" in API group \"\" in the namespace \"default\""
        ),
        "{err}"
    );
    no(&k, &["create", "rolebindings", "-n", "team", "--as", sa]).await;
    // Its groups: system:serviceaccounts and system:serviceaccounts:team.
    k.ok(&[
        "create",
        "clusterrolebinding",
        "team-sas-nodes",
        "--clusterrole=view",
        "--group=system:serviceaccounts:team",
    ])
    .await;
    yes(&k, &["get", "pods", "-n", "default", "--as", sa]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_role_aggregated_by_label_grants_what_it_aggregates() {
    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&[
        "create",
        "clusterrole",
        "monitoring",
        "--aggregation-rule=example.com/aggregate-to-monitoring=true",
    ])
    .await;
    k.ok(&[
        "create",
        "clusterrolebinding",
        "dana-monitoring",
        "--clusterrole=monitoring",
        "--user=dana",
    ])
    .await;
    no(&k, &["get", "/metrics", "--as", "dana"]).await;
    no(&k, &["list", "endpoints", "-A", "--as", "dana"]).await;
    let labelled = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  \
                    name: monitoring-endpoints\n  labels:\n    example.com/aggregate-to-monitoring: \"true\"\n\
                    rules:\n- apiGroups: [\"\"]\n  resources: [endpoints]\n  verbs: [get, list, watch]\n\
                    - nonResourceURLs: [/metrics]\n  verbs: [get]\n";
    k.ok_with(&["apply", "-f", "-"], Some(labelled)).await;
    let rules = k.json(&["get", "clusterrole", "monitoring"]).await["rules"].clone();
    assert_eq!(
        rules,
        serde_json::json!([
            {"apiGroups": [""], "resources": ["endpoints"], "verbs": ["get", "list", "watch"]},
            {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
        ])
    );
    yes(&k, &["get", "/metrics", "--as", "dana"]).await;
    yes(&k, &["list", "endpoints", "-A", "--as", "dana"]).await;

    // The default view role aggregates an operator's role labelled for it.
    k.ok(&[
        "create",
        "rolebinding",
        "erin-view",
        "--clusterrole=view",
        "--user=erin",
    ])
    .await;
    no(&k, &["list", "leases.coordination.k8s.io", "--as", "erin"]).await;
    let to_view = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  \
                   name: leases-view\n  labels:\n    rbac.authorization.k8s.io/aggregate-to-view: \"true\"\n\
                   rules:\n- apiGroups: [coordination.k8s.io]\n  resources: [leases]\n  verbs: [get, list, watch]\n";
    k.ok_with(&["apply", "-f", "-"], Some(to_view)).await;
    yes(&k, &["list", "leases.coordination.k8s.io", "--as", "erin"]).await;
    // ...and edit and admin, which aggregate view, grant it too.
    let admin = k.json(&["get", "clusterrole", "admin"]).await["rules"].clone();
    assert!(
        admin
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"] == serde_json::json!(["leases"])
                && r["verbs"] == serde_json::json!(["get", "list", "watch"])),
        "{admin}"
    );
    // Removing the label takes the rules away again.
    k.ok(&[
        "label",
        "clusterrole",
        "monitoring-endpoints",
        "example.com/aggregate-to-monitoring-",
    ])
    .await;
    no(&k, &["get", "/metrics", "--as", "dana"]).await;
    assert_eq!(
        k.json(&["get", "clusterrole", "monitoring"])
            .await
            .get("rules")
            .cloned()
            .unwrap_or_default(),
        serde_json::Value::Null,
        "no rules left"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn can_i_list_shows_the_callers_rules() {
    let server = crate::common::server().await;
    let Some(k) = Kubectl::new(&server) else {
        return;
    };
    k.ok(&[
        "create",
        "rolebinding",
        "frank-view",
        "--clusterrole=view",
        "--user=frank",
    ])
    .await;
    let listed = k.ok(&["auth", "can-i", "--list", "--as", "frank"]).await;
    let row = |name: &str| {
        listed
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    assert_eq!(
        row("pods").as_deref(),
        Some("pods [] [] [get list watch]"),
        "{listed}"
    );
    assert_eq!(
        row("selfsubjectaccessreviews.authorization.k8s.io").as_deref(),
        Some("selfsubjectaccessreviews.authorization.k8s.io [] [] [create]"),
        "{listed}"
    );
    assert!(row("secrets").is_none(), "{listed}");
    assert!(listed.contains("[/api/*]"), "{listed}");
    // Elsewhere frank has only what every authenticated user has.
    let elsewhere = k
        .ok(&[
            "auth",
            "can-i",
            "--list",
            "-n",
            "kube-system",
            "--as",
            "frank",
        ])
        .await;
    assert!(
        !elsewhere.lines().any(|l| l.starts_with("pods ")),
        "{elsewhere}"
    );
    // The admin: everything, through cluster-admin's binding to system:masters.
    let admin = k.ok(&["auth", "can-i", "--list"]).await;
    assert!(
        admin
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["*.*", "[]", "[]", "[*]"]),
        "{admin}"
    );
}

/// A kubectl whose kubeconfig authenticates with a client certificate for `user` in `groups`,
/// signed by the server's client CA.
fn kubectl_with_certificate(
    server: &crt_apiserver::Server,
    user: &str,
    groups: &[&str],
) -> Kubectl {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let config = server.kubeconfig_for_certificate(user, groups).unwrap();
    std::fs::write(&kubeconfig, config).unwrap();
    Kubectl {
        binary: "kubectl".into(),
        kubeconfig,
        dir,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificates_groups_count() {
    let server = crate::common::server().await;
    let Some(admin) = Kubectl::new(&server) else {
        return;
    };
    let carol = kubectl_with_certificate(&server, "carol", &["devs", "qa"]);
    // Who the certificate says: CN the user, each O a group, plus system:authenticated.
    let who = carol.json(&["auth", "whoami", "-o", "json"]).await;
    assert_eq!(who["status"]["userInfo"]["username"], "carol");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["devs", "qa", "system:authenticated"])
    );
    no(&carol, &["list", "configmaps"]).await;
    let refused = carol.fails(&["get", "configmaps"], None).await;
    assert!(
        refused.contains(
            r#"configmaps is forbidden: User "carol" cannot list resource "configmaps" in API group "" in the namespace "default""#
        ),
        "{refused}"
    );
    // A binding to one of the certificate's groups grants what it binds, to that group only.
    admin
        .ok(&[
            "create",
            "rolebinding",
            "qa-view",
            "--clusterrole=view",
            "--group=qa",
            "-n",
            "default",
        ])
        .await;
    yes(&carol, &["list", "configmaps"]).await;
    no(&carol, &["list", "configmaps", "-n", "kube-system"]).await;
    no(&carol, &["create", "configmaps"]).await;
    carol.ok(&["get", "configmaps"]).await;
    let dave = kubectl_with_certificate(&server, "dave", &["devs"]);
    no(&dave, &["list", "configmaps"]).await;
}
