//! The operator run as it runs in a cluster: as its ServiceAccount, allowed exactly what its
//! RBAC manifests (those `memo-operator manifests` ships: the ClusterRole of
//! `config/rbac/role.yaml`, the Role of `config/rbac/namespace_role.yaml` in its namespace)
//! grant. A permission missing from them fails these tests naming the
//! refused verb and resource, instead of surfacing in production as a controller stuck on 403s.
//! The role itself is derived from behaviour: the API server records what the operator was
//! allowed (`UPDATE_RBAC=1` rewrites the roles from it: what it does in its own namespace, its
//! leader-election Lease, in the Role; the rest in the ClusterRole), and a grant it never used
//! is a warning.

use std::path::Path;

use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::envtest::{ClusterConfig, Environment, Running, eventually, rbac};
use controller_runtime::k8s_openapi::api::apps::v1::Deployment;
use controller_runtime::k8s_openapi::api::core::v1::ConfigMap;
use controller_runtime::k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule, Role};
use controller_runtime::kube_client::api::DeleteParams;
use controller_runtime::prelude::*;
use memo_operator::manifests::{self, Manifests, NAMESPACE};
use memo_operator::{Memo, MemoSpec};

/// The shipped RBAC manifests (the operator's namespace, its ServiceAccount, the bindings, the
/// namespace's Role) with `role` as the ClusterRole.
fn rbac_objects(role: &str, namespace_role: &str) -> Vec<serde_json::Value> {
    let files = Manifests::default().kustomize();
    let file = |path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, text)| text.as_str())
            .unwrap_or_else(|| panic!("the manifests have no {path}"))
    };
    [
        file("manager/namespace.yaml"),
        file("rbac/service_account.yaml"),
        file("rbac/role_binding.yaml"),
        file("rbac/namespace_role_binding.yaml"),
        role,
        namespace_role,
    ]
    .into_iter()
    .map(|text| serde_yaml_ng::from_str(text).unwrap())
    .collect()
}

/// Starts the environment with the Memo CRD and the RBAC manifests with `role` and
/// `namespace_role`, and the operator's manager acting as its ServiceAccount, electing itself
/// leader as the binary does.
async fn start_as_operator(
    role: &str,
    namespace_role: &str,
) -> (Running, CancellationToken, Manager) {
    let mut env = Environment::new()
        .crd::<Memo>()
        .simulate_cluster(ClusterConfig::default());
    for object in rbac_objects(role, namespace_role) {
        env = env.manifest_object(object);
    }
    let env = env.start().await.expect("test environment");
    let operator = env
        .service_account_client(NAMESPACE, manifests::NAME)
        .await
        .expect("a client acting as the operator's ServiceAccount");
    let options = ManagerOptions::default()
        .with_metrics_bind_address(BindAddress::Disabled)
        .with_leader_election(memo_operator::leader_election(NAMESPACE));
    let mgr = Manager::new(operator, options).unwrap();
    memo_operator::add_controller(&mgr).await.unwrap();
    (env, CancellationToken::new(), mgr)
}

/// The ServiceAccount's user, as the API server authenticates its tokens.
fn operator_user() -> String {
    format!("system:serviceaccount:{NAMESPACE}:{}", manifests::NAME)
}

/// A role granting everything: what the operator runs with when `UPDATE_RBAC` is set, so that
/// the role it needs can be recorded.
const EVERYTHING: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: memo-operator
rules:
- apiGroups: ['*']
  resources: ['*']
  verbs: ['*']
";

/// A Role granting nothing (beside [`EVERYTHING`]).
const NOTHING: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: memo-operator
  namespace: memo-operator-system
";

const ROLE_HEADER: &str = "# What the operator may do, and nothing more: the accesses it made in its tests (its\n\
     # caches' lists and watches, its reconciler's writes). tests/rbac.rs runs the operator\n\
     # as its ServiceAccount with this role, warns about a grant nothing used, and with\n\
     # UPDATE_RBAC=1 (`UPDATE_RBAC=1 cargo test --test rbac`) rewrites this file from what\n\
     # the operator did under a role granting everything.\n";

const NAMESPACE_ROLE_HEADER: &str = "# What the operator may do in its own namespace, and nothing more: its leader-election\n\
     # Lease. Derived and checked as role.yaml is (tests/rbac.rs; UPDATE_RBAC=1 rewrites it).\n";

/// `role` as `config/rbac/role.yaml` writes it: a rule a line-group, lists in flow style.
fn role_yaml(role: &ClusterRole) -> String {
    let mut out = format!(
        "{ROLE_HEADER}apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {}\nrules:\n",
        manifests::NAME
    );
    out.push_str(&rules_yaml(role.rules.as_deref().unwrap_or_default()));
    out
}

/// `role` as `config/rbac/namespace_role.yaml` writes it.
fn namespace_role_yaml(role: &Role) -> String {
    let mut out = format!(
        "{NAMESPACE_ROLE_HEADER}apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: {}\n  namespace: {NAMESPACE}\nrules:\n",
        manifests::NAME
    );
    out.push_str(&rules_yaml(role.rules.as_deref().unwrap_or_default()));
    out
}

fn rules_yaml(rules: &[PolicyRule]) -> String {
    let list = |items: &[String]| {
        let items: Vec<String> = items
            .iter()
            .map(|i| {
                if i.is_empty() {
                    "\"\"".to_string()
                } else {
                    i.clone()
                }
            })
            .collect();
        format!("[{}]", items.join(", "))
    };
    let mut out = String::new();
    for rule in rules {
        out.push_str(&format!(
            "- apiGroups: {}\n  resources: {}\n  verbs: {}\n",
            list(rule.api_groups.as_deref().unwrap_or_default()),
            list(rule.resources.as_deref().unwrap_or_default()),
            list(&rule.verbs)
        ));
    }
    out
}

/// The operator's life with a Memo, run as its ServiceAccount with exactly the shipped RBAC:
/// published, changed, deleted. The API server records what the operator was allowed to do:
/// the shipped role must grant all of it, and a grant nothing used is a warning. With
/// `UPDATE_RBAC` set, the operator runs with every permission and the role it used is written
/// to `config/rbac/role.yaml`.
#[tokio::test]
async fn the_operator_works_with_exactly_its_rbac() {
    let update = std::env::var_os("UPDATE_RBAC").is_some();
    let (env, stop, mgr) = if update {
        start_as_operator(EVERYTHING, NOTHING).await
    } else {
        start_as_operator(manifests::ROLE, manifests::NAMESPACE_ROLE).await
    };
    let recorder = env.server().map(|server| server.access_recorder());
    if let Some(recorder) = recorder {
        recorder.start();
    }
    let cache = mgr.cache().clone();
    let token = stop.clone();
    let running = tokio::spawn(async move { mgr.start(token).await });
    // The test writes as the environment's admin, not as the operator.
    let admin = Client::new(Cache::new(env.client(), CacheOptions::default()));
    let memos = admin.objects::<Memo>();
    let key = ObjectKey::new("default", "hello");
    let wait = eventually(env.client());
    let text_is = |want: &'static str| {
        move |cm: &ConfigMap| {
            cm.data
                .as_ref()
                .and_then(|d| d.get("text"))
                .map(String::as_str)
                == Some(want)
        }
    };
    let scenario = async {
        let mut memo = Memo::new(
            "hello",
            MemoSpec {
                text: "hi".into(),
                ..Default::default()
            },
        );
        memo.metadata.namespace = Some("default".into());
        memos.create(&memo).await?;
        let memo = wait
            .until_object(&key, |memo: &Memo| {
                memo.status.as_ref().is_some_and(|s| s.ready)
            })
            .await?;
        wait.until_object(&key, text_is("hi")).await?;
        let mut changed = memo.clone();
        changed.spec.text = "bye".into();
        memos.update(&changed).await?;
        wait.until_object(&key, text_is("bye")).await?;
        // Annotations for the server's pods: the operator updates its Deployment.
        let mut annotated = wait.until_exists::<Memo>(&key).await?;
        annotated.spec.pod_annotations = [("example.com/note".into(), "v2".into())].into();
        memos.update(&annotated).await?;
        wait.until_object(&key, |d: &Deployment| {
            let template = d.spec.template.metadata.as_ref();
            template
                .and_then(|m| m.annotations.as_ref())
                .is_some_and(|a| a.contains_key("example.com/note"))
        })
        .await?;
        memos.delete(&key, &DeleteParams::default()).await?;
        wait.until_gone::<Memo>(&key).await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    if let Err(err) = scenario.await {
        // What the operator was refused is what its role lacks.
        let refused: Vec<String> = recorder
            .map(|r| r.refused(&operator_user()))
            .unwrap_or_default()
            .iter()
            .map(|access| access.to_string())
            .collect();
        panic!(
            "the operator did not do its work: {err}\nits RBAC lacks: {}",
            refused.join("; ")
        );
    }
    assert!(cache.sync_errors().is_empty(), "{:?}", cache.sync_errors());
    stop.cancel();
    running.await.unwrap().unwrap();

    let Some(recorder) = recorder else {
        eprintln!("an existing cluster records no accesses: the role is not compared");
        return env.stop().await.unwrap();
    };
    recorder.stop();
    let used = recorder.recorded(&operator_user());
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/rbac");
    if update {
        let derived = rbac::roles(manifests::NAME, &used, &[NAMESPACE]);
        std::fs::write(dir.join("role.yaml"), role_yaml(&derived.cluster_role)).unwrap();
        let own = derived.role(NAMESPACE).cloned().unwrap_or_default();
        std::fs::write(dir.join("namespace_role.yaml"), namespace_role_yaml(&own)).unwrap();
        eprintln!("wrote {}/role.yaml and namespace_role.yaml", dir.display());
        return env.stop().await.unwrap();
    }
    let shipped = rbac::Roles {
        cluster_role: serde_yaml_ng::from_str(manifests::ROLE).unwrap(),
        roles: vec![serde_yaml_ng::from_str(manifests::NAMESPACE_ROLE).unwrap()],
    };
    let missing = shipped.missing(&used);
    assert!(
        missing.is_empty(),
        "{} lacks what the operator was allowed: {missing:?}",
        dir.display()
    );
    // The Lease is the Role's: the ClusterRole grants nothing in the operator's namespace only.
    assert!(
        used.iter()
            .any(|a| a.resource == "leases" && a.namespace == NAMESPACE),
        "the operator elected itself through a Lease in its namespace: {used:?}"
    );
    for grant in shipped.unused(&used) {
        eprintln!(
            "warning: {} grants {grant}, which the operator never used (UPDATE_RBAC=1 cargo test \
             --test rbac writes the roles it used)",
            dir.display()
        );
    }
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_missing_permission_names_itself() {
    // The same manifests, but the role lacks `list` and `watch` on ConfigMaps (a forgotten
    // `list;watch`: what the cache needs, not what the reconciler writes).
    let mut role: ClusterRole = serde_yaml_ng::from_str(manifests::ROLE).unwrap();
    let rule = role
        .rules
        .iter_mut()
        .flatten()
        .find(|rule| rule.resources.as_deref() == Some(&["configmaps".to_string()]))
        .expect("config/rbac/role.yaml grants on configmaps");
    rule.verbs.retain(|verb| verb != "list" && verb != "watch");
    let role = role_yaml(&role);
    let (env, stop, mgr) = start_as_operator(&role, manifests::NAMESPACE_ROLE).await;
    let cache = mgr.cache().clone();
    let token = stop.clone();
    let running = tokio::spawn(async move { mgr.start(token).await });
    // The ConfigMaps cache cannot list: it never syncs, and says why.
    let refused = eventually(env.client())
        .until("the cache reports the refused list", || async {
            cache
                .sync_errors()
                .into_iter()
                .find(|(_, e)| e.is_forbidden())
                .map(|(_, e)| e.to_string())
        })
        .await
        .unwrap();
    assert!(
        refused.contains(
            "configmaps is forbidden: User \"system:serviceaccount:memo-operator-system:memo-operator\" \
             cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
        ),
        "{refused}"
    );
    stop.cancel();
    let _ = running.await;
    env.stop().await.unwrap();
}

/// The roles derived from behaviour (and shipped) are, verb for verb, the minimal ones a
/// reader of the operator's code writes by hand: what its caches list and watch, what its
/// reconciler writes, and its leader election in its own namespace.
#[test]
fn the_derived_roles_are_the_minimal_ones_written_by_hand() {
    type Rules = std::collections::BTreeSet<(String, String, Vec<String>)>;
    let rules = |rules: &[PolicyRule]| -> Rules {
        rules
            .iter()
            .flat_map(|r| {
                let mut verbs = r.verbs.clone();
                verbs.sort();
                let groups = r.api_groups.clone().unwrap_or_default();
                let resources = r.resources.clone().unwrap_or_default();
                groups.into_iter().flat_map(move |g| {
                    let verbs = verbs.clone();
                    resources
                        .clone()
                        .into_iter()
                        .map(move |res| (g.clone(), res, verbs.clone()))
                })
            })
            .collect()
    };
    let by_hand = |list: &[(&str, &str, &[&str])]| -> Rules {
        list.iter()
            .map(|(g, r, v)| {
                let mut verbs: Vec<String> = v.iter().map(|v| v.to_string()).collect();
                verbs.sort();
                (g.to_string(), r.to_string(), verbs)
            })
            .collect()
    };
    // Only the rules on the resources written here: a kind added with `crt new --api`
    // brings its own.
    let on_the_same = |shipped: Rules, want: &Rules| -> Rules {
        shipped
            .into_iter()
            .filter(|(g, r, _)| want.iter().any(|(wg, wr, _)| wg == g && wr == r))
            .collect()
    };
    let cluster: ClusterRole = serde_yaml_ng::from_str(manifests::ROLE).unwrap();
    let want = by_hand(&[
        // The Memos' cache, the finalizer's patch and its fresh read before removing it.
        ("example.com", "memos", &["list", "watch", "patch", "get"]),
        ("example.com", "memos/status", &["update"]),
        // The owned ConfigMaps' cache, create-or-update of a Memo's own, create-or-patch
        // of the index.
        (
            "",
            "configmaps",
            &["list", "watch", "create", "update", "patch"],
        ),
        // The owned Deployments' cache and create-or-update of a Memo's server.
        (
            "apps",
            "deployments",
            &["list", "watch", "create", "update"],
        ),
    ]);
    assert_eq!(
        on_the_same(rules(cluster.rules.as_deref().unwrap_or_default()), &want),
        want
    );
    let own: Role = serde_yaml_ng::from_str(manifests::NAMESPACE_ROLE).unwrap();
    assert_eq!(
        rules(own.rules.as_deref().unwrap_or_default()),
        // Leader election: read the Lease, create it once, renew it.
        by_hand(&[(
            "coordination.k8s.io",
            "leases",
            &["get", "create", "update"]
        )]),
    );
}
