//! The test environment (`envtest` feature): CRDs installed from a type and from files, each
//! usable as soon as `start` returns; the existing-cluster switch; stop.

use crate::support;

use std::time::Duration;

use controller_runtime::envtest::{Environment, Error};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{ApiResource, DynamicObject, ListParams, PostParams};
use kube_client::core::GroupVersionKind;
use kube_derive::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A namespaced custom resource, as an operator declares one.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "envtest.crt.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    crates(kube_core = "::kube_core")
)]
pub struct WidgetSpec {
    size: i32,
}

/// A cluster-scoped one.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "envtest.crt.dev",
    version = "v1",
    kind = "Gadget",
    crates(kube_core = "::kube_core")
)]
pub struct GadgetSpec {
    color: String,
}

const WIDGETS: &str = "widgets.envtest.crt.dev";
const GADGETS: &str = "gadgets.envtest.crt.dev";

/// A CRD as YAML, `scope` `Namespaced` or `Cluster`.
fn crd_yaml(plural: &str, kind: &str, scope: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: {plural}.files.crt.dev
spec:
  group: files.crt.dev
  scope: {scope}
  names: {{plural: {plural}, kind: {kind}}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
"
    )
}

/// Creates an object of `kind` (group `files.crt.dev`) named `name`, then lists its kind and
/// answers the names listed.
async fn create_and_list(
    client: &kube_client::Client,
    plural: &str,
    kind: &str,
    namespace: Option<&str>,
) -> Vec<String> {
    let gvk = GroupVersionKind::gvk("files.crt.dev", "v1", kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    let mut object = DynamicObject::new("one", &resource);
    object.data = serde_json::json!({"spec": {"anything": 1}});
    api.create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|e| panic!("creating a {kind}: {e}"));
    api.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|o| o.metadata.name.unwrap())
        .collect()
}

fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

#[tokio::test]
async fn a_crd_from_a_type_is_usable_as_soon_as_start_returns() {
    let env = Environment::new()
        .use_existing_cluster(false)
        .crd::<Widget>()
        .start()
        .await
        .unwrap();
    assert!(!env.is_existing_cluster());
    assert_eq!(env.installed_crds(), [WIDGETS]);

    let crd = Api::<CustomResourceDefinition>::all(env.client())
        .get(WIDGETS)
        .await
        .unwrap();
    assert!(established(&crd), "{:?}", crd.status);
    let discovered = env
        .client()
        .list_api_group_resources("envtest.crt.dev/v1")
        .await
        .unwrap();
    assert!(discovered.resources.iter().any(|r| r.name == "widgets"));

    // No retry: usable at once.
    let widgets: Api<Widget> = Api::default_namespaced(env.client());
    let widget = Widget::new("w", WidgetSpec { size: 3 });
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    assert_eq!(widgets.get("w").await.unwrap().spec.size, 3);
    env.stop().await.unwrap();
}

#[tokio::test]
async fn crds_from_a_directory_of_multi_document_yaml_and_json_are_all_installed() {
    let dir = tempfile::tempdir().unwrap();
    let two = format!(
        "# two CRDs in one file\n---\n{}---\n{}",
        crd_yaml("apples", "Apple", "Namespaced"),
        crd_yaml("pears", "Pear", "Cluster")
    );
    std::fs::write(dir.path().join("fruit.yaml"), two).unwrap();
    // JSON is YAML too, but read as JSON from a `.json` file.
    let plum: serde_json::Value =
        serde_yaml_ng::from_str(&crd_yaml("plums", "Plum", "Namespaced")).unwrap();
    std::fs::write(dir.path().join("plum.json"), plum.to_string()).unwrap();
    // Not a CRD file by its name: skipped, as envtest skips it.
    std::fs::write(dir.path().join("README.md"), "# not YAML: {[").unwrap();

    let env = Environment::new()
        .use_existing_cluster(false)
        .crd_path(dir.path())
        .start()
        .await
        .unwrap();
    assert_eq!(
        env.installed_crds(),
        [
            "apples.files.crt.dev",
            "pears.files.crt.dev",
            "plums.files.crt.dev"
        ]
    );
    let client = env.client();
    assert_eq!(
        create_and_list(&client, "apples", "Apple", Some("default")).await,
        ["one"]
    );
    assert_eq!(
        create_and_list(&client, "pears", "Pear", None).await,
        ["one"]
    );
    assert_eq!(
        create_and_list(&client, "plums", "Plum", Some("default")).await,
        ["one"]
    );
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_crd_file_given_by_its_path_is_installed_along_with_typed_crds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("kiwi.anything");
    std::fs::write(&file, crd_yaml("kiwis", "Kiwi", "Namespaced")).unwrap();
    let env = Environment::new()
        .use_existing_cluster(false)
        .crd::<Gadget>()
        .crd_path(&file)
        .start()
        .await
        .unwrap();
    assert_eq!(env.installed_crds(), [GADGETS, "kiwis.files.crt.dev"]);
    assert_eq!(
        create_and_list(&env.client(), "kiwis", "Kiwi", Some("default")).await,
        ["one"]
    );
    let gadgets: Api<Gadget> = Api::all(env.client());
    let gadget = Gadget::new(
        "g",
        GadgetSpec {
            color: "red".into(),
        },
    );
    gadgets
        .create(&PostParams::default(), &gadget)
        .await
        .unwrap();
    env.stop().await.unwrap();
}

#[tokio::test]
async fn a_document_that_is_not_a_crd_fails_the_start_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("a.yaml"),
        crd_yaml("apples", "Apple", "Namespaced"),
    )
    .unwrap();
    let mixed = format!(
        "{}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\n",
        crd_yaml("pears", "Pear", "Cluster")
    );
    std::fs::write(dir.path().join("b.yml"), mixed).unwrap();

    let err = Environment::new()
        .use_existing_cluster(false)
        .crd_path(dir.path())
        .start()
        .await
        .unwrap_err();
    match &err {
        Error::NotACrd {
            path,
            document,
            api_version,
            kind,
            ..
        } => {
            assert_eq!(path, &dir.path().join("b.yml"));
            assert_eq!(*document, 2);
            assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
        }
        other => panic!("expected NotACrd, got {other:?}"),
    }
    let message = err.to_string();
    assert!(message.contains("b.yml: document 2"), "{message}");

    let missing = dir.path().join("missing");
    let err = Environment::new()
        .use_existing_cluster(false)
        .crd_path(&missing)
        .start()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::ReadCrds { path, .. } if path == &missing),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_crd_the_server_refuses_fails_the_start_with_the_servers_reason() {
    let mut crd: CustomResourceDefinition =
        serde_yaml_ng::from_str(&crd_yaml("apples", "Apple", "Namespaced")).unwrap();
    crd.metadata.name = Some("wrong-name.files.crt.dev".into());
    let err = Environment::new()
        .use_existing_cluster(false)
        .crd_object(crd)
        .start()
        .await
        .unwrap_err();
    match &err {
        Error::InstallCrd { name, source } => {
            assert_eq!(name, "wrong-name.files.crt.dev");
            assert!(
                matches!(source, kube_client::Error::Api(s) if s.code == 422),
                "{source:?}"
            );
        }
        other => panic!("expected InstallCrd, got {other:?}"),
    }
}

/// Whether something accepts connections on `port` of 127.0.0.1.
async fn listening(port: u16) -> bool {
    tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_ok()
}

#[tokio::test]
async fn stop_closes_the_embedded_servers_port() {
    let env = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    let port = env.server().unwrap().port();
    assert!(listening(port).await);
    env.stop().await.unwrap();
    assert!(!listening(port).await, "port {port} still open after stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_environment_stops_the_embedded_server() {
    let env = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    let port = env.server().unwrap().port();
    let client = env.client();
    client.apiserver_version().await.unwrap();
    drop(env);
    // The drop aborts the server's task; the runtime drops its listener right after.
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        while listening(port).await {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    assert!(closed.is_ok(), "port {port} still open after the drop");
    assert!(client.apiserver_version().await.is_err());
}

/// The variables the parent test hands its child process.
const EXPECTED_URL: &str = "ENVTEST_TEST_EXPECTED_URL";

/// `USE_EXISTING_CLUSTER=true` with `KUBECONFIG` naming a second embedded server: environments
/// started without `use_existing_cluster` run against that server and start none of their own.
/// Environment variables are process-wide, and setting them needs `unsafe` in Rust 2024 (which
/// the workspace forbids), so the environments run in a child process of this test binary
/// ([`existing_cluster_child`]) that inherits the variables.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_existing_cluster_runs_against_the_cluster_kubeconfig_names() {
    let (second, second_client) = support::server().await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    second.write_kubeconfig(&kubeconfig).unwrap();

    // The second server runs on this runtime, so the child is awaited, not waited for.
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "envtest::existing_cluster_child",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("USE_EXISTING_CLUSTER", "true")
        .env(EXPECTED_URL, second.url())
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("1 passed"),
        "the child ran no test:\n{stdout}"
    );

    // What the child's environments did is on the second server.
    let crds: Api<CustomResourceDefinition> = Api::all(second_client.clone());
    assert!(established(&crds.get(WIDGETS).await.unwrap()));
    let widgets: Api<Widget> = Api::default_namespaced(second_client.clone());
    assert_eq!(widgets.get("from-child").await.unwrap().spec.size, 7);
    // Cleaned up after use: the Gadget CRD is gone, and its objects with it.
    assert!(crds.get_opt(GADGETS).await.unwrap().is_none());
    // The child left a ConfigMap through an environment of its own (use_existing_cluster(false)
    // wins over the variable): not here.
    let configmaps: Api<ConfigMap> = Api::default_namespaced(second_client);
    assert!(configmaps.get_opt("own-server").await.unwrap().is_none());
    second.stop().await;
}

/// Run by [`use_existing_cluster_runs_against_the_cluster_kubeconfig_names`] in a child
/// process, with `KUBECONFIG` and `USE_EXISTING_CLUSTER` set.
#[tokio::test]
#[ignore = "run by use_existing_cluster_runs_against_the_cluster_kubeconfig_names in a child process"]
async fn existing_cluster_child() {
    let url = std::env::var(EXPECTED_URL).expect(
        "run by use_existing_cluster_runs_against_the_cluster_kubeconfig_names, which sets it",
    );
    let same_server = |config: &kube_client::Config| {
        assert_eq!(config.cluster_url.to_string().trim_end_matches('/'), url);
    };

    // Installed on the existing cluster (the variable says so); kept after stop.
    let env = Environment::new().crd::<Widget>().start().await.unwrap();
    assert!(env.is_existing_cluster());
    assert!(env.server().is_none());
    same_server(env.config());
    let widgets: Api<Widget> = Api::default_namespaced(env.client());
    let widget = Widget::new("from-child", WidgetSpec { size: 7 });
    widgets
        .create(&PostParams::default(), &widget)
        .await
        .unwrap();
    env.stop().await.unwrap();

    // Installed again: the CRD exists, so it is updated, and its objects stay.
    let env = Environment::new().crd::<Widget>().start().await.unwrap();
    same_server(env.config());
    let widgets: Api<Widget> = Api::default_namespaced(env.client());
    assert_eq!(widgets.get("from-child").await.unwrap().spec.size, 7);
    env.stop().await.unwrap();

    // Cleaned up after use: stop deletes the CRD it installed.
    let env = Environment::new()
        .crd::<Gadget>()
        .clean_up_after_use(true)
        .start()
        .await
        .unwrap();
    same_server(env.config());
    let gadgets: Api<Gadget> = Api::all(env.client());
    let gadget = Gadget::new(
        "g",
        GadgetSpec {
            color: "blue".into(),
        },
    );
    gadgets
        .create(&PostParams::default(), &gadget)
        .await
        .unwrap();
    let client = env.client();
    env.stop().await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client);
    assert!(crds.get_opt(GADGETS).await.unwrap().is_none());

    // The builder's choice wins over the variable: an embedded server of its own.
    let env = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    assert!(!env.is_existing_cluster());
    assert_ne!(env.server().unwrap().url(), url);
    let configmaps: Api<ConfigMap> = Api::default_namespaced(env.client());
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("own-server".into());
    configmaps
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    env.stop().await.unwrap();
}

mod webhooks {
    //! envtest installs a process's webhooks (envtest's `WebhookInstallOptions`).

    use std::sync::Arc;

    use controller_runtime::CancellationToken;
    use controller_runtime::builder::WebhookBuilder;
    use controller_runtime::envtest::{
        Environment, MUTATING_CONFIGURATION, VALIDATING_CONFIGURATION,
    };
    use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
    use controller_runtime::webhook::BoxError;
    use controller_runtime::webhook::admission::{
        Defaulter, Denial, Request, ValidationResult, Validator,
    };
    use controller_runtime::webhook::conversion::{Conversion, Convertible, Hub};
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::TokioIo;
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube_client::Api;
    use kube_core::CustomResourceExt;
    use kube_derive::CustomResource;
    use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    mod v1 {
        use super::*;
        #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
        #[kube(
            group = "hooks.crt.dev",
            version = "v1",
            kind = "Note",
            namespaced,
            crates(kube_core = "::kube_core")
        )]
        pub struct NoteSpec {
            pub text: String,
        }
    }

    mod v2 {
        use super::*;
        #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
        #[kube(
            group = "hooks.crt.dev",
            version = "v2",
            kind = "Note",
            namespaced,
            crates(kube_core = "::kube_core")
        )]
        pub struct NoteSpec {
            pub body: String,
        }
    }

    impl Hub for v2::Note {}

    impl Convertible<v2::Note> for v1::Note {
        fn convert_to(&self) -> Result<v2::Note, BoxError> {
            Ok(v2::Note {
                metadata: self.metadata.clone(),
                spec: v2::NoteSpec {
                    body: self.spec.text.clone(),
                },
            })
        }
        fn convert_from(hub: &v2::Note) -> Result<Self, BoxError> {
            Ok(v1::Note {
                metadata: hub.metadata.clone(),
                spec: v1::NoteSpec {
                    text: hub.spec.body.clone(),
                },
            })
        }
    }

    struct Hooks;

    impl Defaulter<ConfigMap> for Hooks {
        async fn default(&self, _: &mut ConfigMap, _: &Request) -> Result<(), Denial> {
            Ok(())
        }
    }

    impl Validator<ConfigMap> for Hooks {
        async fn validate_create(&self, _: &ConfigMap, _: &Request) -> ValidationResult {
            Err(Denial::new("no new configmaps"))
        }
    }

    /// POSTs `body` to `url` over HTTPS trusting `ca` only, as the API server calls a webhook.
    async fn call(url: &str, ca: &[u8], body: Value) -> Value {
        let uri: http::Uri = url.parse().unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from_pem_slice(ca).unwrap())
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let authority = uri.authority().unwrap().clone();
        let tcp = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(
                ServerName::try_from(authority.host().to_string()).unwrap(),
                tcp,
            )
            .await
            .expect("the serving certificate is trusted through the caBundle");
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap();
        tokio::spawn(conn);
        let request = http::Request::post(uri.path())
            .header("host", authority.as_str())
            .header("content-type", "application/json")
            .body(Full::new(bytes::Bytes::from(
                serde_json::to_vec(&body).unwrap(),
            )))
            .unwrap();
        let response = send.send_request(request).await.unwrap();
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn the_environment_installs_the_webhooks_of_a_running_manager() {
        let crd = kube_core::crd::merge_crds(vec![v1::Note::crd(), v2::Note::crd()], "v2").unwrap();
        let env = Environment::new()
            .use_existing_cluster(false)
            .crd_object(crd)
            .start()
            .await
            .unwrap();
        let options = env.webhook_options().unwrap();
        assert_eq!(
            format!("{:?}", env.webhook_options().unwrap()),
            format!("{options:?}"),
            "made once"
        );
        let mgr = Manager::new(
            env.client(),
            ManagerOptions::default()
                .with_metrics_bind_address(BindAddress::Disabled)
                .with_webhook_server(options.clone()),
        )
        .unwrap();
        WebhookBuilder::new(&mgr)
            .for_::<ConfigMap>()
            .with_defaulter(Hooks)
            .with_validator(Hooks)
            .complete()
            .unwrap();
        WebhookBuilder::new(&mgr)
            .for_::<v2::Note>()
            .with_conversion(Conversion::new().with_spoke::<v1::Note>())
            .complete()
            .unwrap();
        let ctx = CancellationToken::new();
        let running = tokio::spawn({
            let (mgr, ctx) = (mgr.clone(), ctx.clone());
            async move { mgr.start(ctx).await }
        });
        // The server starts from the environment's certificate, on the loopback address.
        let addr = mgr.webhook_server().listening().await.unwrap();
        assert_eq!(addr.ip().to_string(), "127.0.0.1");
        env.install_webhooks(mgr.webhook_server()).await.unwrap();

        let ca = env.webhook_ca_pem().unwrap();
        let base = format!("https://127.0.0.1:{}", addr.port());
        let mutating = Api::<MutatingWebhookConfiguration>::all(env.client())
            .get(MUTATING_CONFIGURATION)
            .await
            .unwrap();
        let webhook = &mutating.webhooks.unwrap()[0];
        assert_eq!(
            webhook.client_config.url.as_deref(),
            Some(&*format!("{base}/mutate-core-v1-configmap"))
        );
        assert_eq!(
            webhook.client_config.ca_bundle.as_ref().unwrap().0,
            ca.as_bytes()
        );
        let validating = Api::<ValidatingWebhookConfiguration>::all(env.client())
            .get(VALIDATING_CONFIGURATION)
            .await
            .unwrap();
        let webhook = &validating.webhooks.unwrap()[0];
        let url = webhook.client_config.url.clone().unwrap();
        assert_eq!(url, format!("{base}/validate-core-v1-configmap"));
        let crd = Api::<CustomResourceDefinition>::all(env.client())
            .get("notes.hooks.crt.dev")
            .await
            .unwrap();
        let conversion = crd.spec.conversion.unwrap();
        assert_eq!(conversion.strategy, "Webhook");
        let client_config = conversion.webhook.unwrap().client_config.unwrap();
        assert_eq!(client_config.url, Some(format!("{base}/convert")));

        // The installed URL and caBundle reach the running server, as the API server will.
        let review = json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {
                "uid": "e1",
                "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
                "resource": {"group": "", "version": "v1", "resource": "configmaps"},
                "name": "x", "namespace": "default", "operation": "CREATE", "userInfo": {},
                "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
            },
        });
        let answer = call(&url, ca.as_bytes(), review).await;
        assert_eq!(answer["response"]["allowed"], false);
        assert_eq!(answer["response"]["status"]["message"], "no new configmaps");

        ctx.cancel();
        running.await.unwrap().unwrap();
        env.stop().await.unwrap();
    }
}

mod manifests {
    //! Manifests beside the CRDs (RBAC, any kind), and acting as a ServiceAccount.

    use std::time::Duration;

    use controller_runtime::CancellationToken;
    use controller_runtime::Request;
    use controller_runtime::cache::{Cache, CacheOptions};
    use controller_runtime::controller::{self, Controller, ControllerOptions};
    use controller_runtime::envtest::{Environment, Error};
    use controller_runtime::handler::EnqueueRequestForObject;
    use controller_runtime::reconcile::{self, Action};
    use controller_runtime::source::Kind;
    use k8s_openapi::api::authentication::v1::SelfSubjectReview;
    use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use kube_client::Api;
    use kube_client::api::PostParams;
    use kube_core::ObjectMeta;

    use super::{Widget, WidgetSpec};

    /// An operator's RBAC as kubebuilder lays it out: its ServiceAccount, a ClusterRole on
    /// ConfigMaps and its binding, a Role on Widgets in its namespace and its binding.
    const RBAC: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: op-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op-configmaps}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: op-configmaps}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: op-configmaps}
subjects:
- {kind: ServiceAccount, name: op, namespace: op-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: op-widgets, namespace: op-system}
rules:
- {apiGroups: [envtest.crt.dev], resources: [widgets], verbs: ["*"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: op-widgets, namespace: op-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: op-widgets}
subjects:
- {kind: ServiceAccount, name: op, namespace: op-system}
"#;

    /// The namespace, in a file read after the RBAC that needs it.
    const NAMESPACE: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: op-system}\n";

    fn settings(data: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some("op-settings".into()),
                namespace: Some("op-system".into()),
                ..Default::default()
            },
            data: Some([("mode".to_string(), data.to_string())].into()),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn rbac_and_any_other_manifests_are_installed_after_the_crds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a-rbac.yaml"), RBAC).unwrap();
        std::fs::write(dir.path().join("z-namespace.yaml"), NAMESPACE).unwrap();
        let settings_json = serde_json::to_string(&settings("file")).unwrap();
        std::fs::write(dir.path().join("settings.json"), settings_json).unwrap();
        let mut widget = Widget::new("first", WidgetSpec::default());
        widget.metadata.namespace = Some("op-system".into());

        let env = Environment::new()
            .use_existing_cluster(false)
            .crd::<Widget>()
            .manifest_path(dir.path())
            // A custom resource of a CRD installed by the same start.
            .manifest_object(&widget)
            // The same ConfigMap as settings.json: updated to this one.
            .manifest_object(settings("object"))
            .start()
            .await
            .unwrap();
        let client = env.client();
        Api::<ServiceAccount>::namespaced(client.clone(), "op-system")
            .get("op")
            .await
            .unwrap();
        let role = Api::<ClusterRole>::all(client.clone())
            .get("op-configmaps")
            .await
            .unwrap();
        let rules = role.rules.unwrap();
        assert_eq!(rules[0].verbs, ["get", "list", "watch"]);
        let binding = Api::<ClusterRoleBinding>::all(client.clone())
            .get("op-configmaps")
            .await
            .unwrap();
        assert_eq!(binding.subjects.unwrap()[0].name, "op");
        Api::<Role>::namespaced(client.clone(), "op-system")
            .get("op-widgets")
            .await
            .unwrap();
        Api::<RoleBinding>::namespaced(client.clone(), "op-system")
            .get("op-widgets")
            .await
            .unwrap();
        Api::<Widget>::namespaced(client.clone(), "op-system")
            .get("first")
            .await
            .unwrap();
        let settings = Api::<ConfigMap>::namespaced(client.clone(), "op-system")
            .get("op-settings")
            .await
            .unwrap();
        assert_eq!(settings.data.unwrap()["mode"], "object");
        env.stop().await.unwrap();
    }

    #[tokio::test]
    async fn a_manifest_that_cannot_be_installed_fails_the_start_naming_it() {
        // Read before anything starts: a document without a name, named by file and position.
        let dir = tempfile::tempdir().unwrap();
        let nameless = format!("{NAMESPACE}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{}}\n");
        std::fs::write(dir.path().join("bad.yaml"), nameless).unwrap();
        let err = Environment::new()
            .use_existing_cluster(false)
            .manifest_path(dir.path())
            .start()
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::ParseManifest { document: 2, .. }),
            "{err:?}"
        );
        assert!(
            err.to_string()
                .ends_with("bad.yaml: document 2: not an installable manifest: no metadata.name"),
            "{err}"
        );

        // A kind the server does not serve: named with its origin and the reason.
        let gizmo = serde_json::json!({
            "apiVersion": "gadgets.crt.dev/v1", "kind": "Gizmo", "metadata": {"name": "g"},
        });
        let err = Environment::new()
            .use_existing_cluster(false)
            .manifest_object(gizmo)
            .start()
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("installing Gizmo g (manifest object 1): the API server does not serve Gizmo in gadgets.crt.dev/v1"),
            "{message}"
        );

        // An object the server refuses: its reason.
        let err = Environment::new()
            .use_existing_cluster(false)
            .manifest_object(settings("x")) // its namespace does not exist
            .start()
            .await
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.starts_with("installing ConfigMap op-settings (manifest object 1): ")
                && message.contains("op-system"),
            "{message}"
        );
    }

    /// Passes on a server without ServiceAccount tokens (the error must say so) and on one
    /// with them (the token authenticates as the account).
    #[tokio::test]
    async fn a_service_account_config_is_the_account_or_a_clear_error() {
        let env = Environment::new()
            .use_existing_cluster(false)
            .start()
            .await
            .unwrap();
        let result = env.service_account_config("sa-test", "op").await;
        // Created with its namespace, whatever the server says of tokens.
        Api::<ServiceAccount>::namespaced(env.client(), "sa-test")
            .get("op")
            .await
            .unwrap();
        match result {
            Ok(config) => {
                assert_eq!(config.default_namespace, "sa-test");
                let client = kube_client::Client::try_from(config).unwrap();
                let review = Api::<SelfSubjectReview>::all(client)
                    .create(&PostParams::default(), &SelfSubjectReview::default())
                    .await
                    .unwrap();
                let user = review.status.unwrap().user_info.unwrap();
                assert_eq!(
                    user.username.as_deref(),
                    Some("system:serviceaccount:sa-test:op")
                );
            }
            Err(
                err @ Error::TokenRequest {
                    unsupported: true, ..
                },
            ) => {
                let message = err.to_string();
                assert!(
                    message.starts_with("requesting a token for ServiceAccount sa-test/op: the API server does not serve the TokenRequest subresource (serviceaccounts/token): "),
                    "{message}"
                );
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
        env.stop().await.unwrap();
    }

    /// The pattern the envtest docs teach: the operator runs as its ServiceAccount with its
    /// RBAC installed; what the RBAC lacks (Secrets here) fails the controller's start naming
    /// the refused verb and resource.
    #[tokio::test]
    async fn an_operator_running_as_its_service_account_is_refused_what_its_rbac_lacks() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rbac.yaml"),
            format!("{NAMESPACE}---{RBAC}"),
        )
        .unwrap();
        let env = Environment::new()
            .use_existing_cluster(false)
            .crd::<Widget>()
            .manifest_path(dir.path())
            .start()
            .await
            .unwrap();
        let operator = env.service_account_client("op-system", "op").await.unwrap();
        let cache = Cache::new(operator, CacheOptions::default());
        let ctx = CancellationToken::new();
        cache.start(ctx.clone());

        let run = |name: &'static str| {
            let reconciler = reconcile::from_fn(|_: Request, _ctx| async { Ok(Action::done()) });
            let options =
                ControllerOptions::default().with_cache_sync_timeout(Duration::from_secs(5));
            Controller::new(name, reconciler, options).unwrap()
        };
        // ConfigMaps: granted by the ClusterRole, the controller starts.
        let configmaps = run("configmaps");
        configmaps
            .watch(
                Kind::<ConfigMap>::new(cache.clone()),
                EnqueueRequestForObject,
                vec![],
            )
            .await
            .unwrap();
        let started = tokio::spawn({
            let (c, ctx) = (configmaps.clone(), ctx.clone());
            async move { c.start(ctx).await }
        });
        // Secrets: not granted, the start fails naming what was refused.
        let secrets = run("secrets");
        secrets
            .watch(
                Kind::<Secret>::new(cache.clone()),
                EnqueueRequestForObject,
                vec![],
            )
            .await
            .unwrap();
        let err = secrets.start(ctx.clone()).await.unwrap_err();
        assert!(
            matches!(err, controller::Error::SyncTimeout { .. }),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains(
                "secrets is forbidden: User \"system:serviceaccount:op-system:op\" cannot list resource \"secrets\" in API group \"\" at the cluster scope"
            ),
            "{message}"
        );
        assert!(!started.is_finished(), "the ConfigMaps controller runs");
        ctx.cancel();
        started.await.unwrap().unwrap();
        env.stop().await.unwrap();
    }
}

#[tokio::test]
async fn a_simulated_cluster_rolls_deployments_out_and_plain_envtest_has_no_nodes() {
    use controller_runtime::ObjectKey;
    use controller_runtime::envtest::{ClusterConfig, eventually};
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Node, Pod};

    let plain = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(plain.client());
    assert!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    plain.stop().await.unwrap();

    let env = Environment::new()
        .use_existing_cluster(false)
        .simulate_cluster(ClusterConfig::default().with_nodes(2))
        .start()
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(env.client());
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]},
            },
        },
    }))
    .unwrap();
    Api::<Deployment>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &deployment)
        .await
        .unwrap();
    eventually(env.client())
        .until_object::<Deployment>(&ObjectKey::new("default", "web"), |d| {
            d.status
                .as_ref()
                .is_some_and(|s| s.available_replicas == Some(2))
        })
        .await
        .unwrap();
    let pods = Api::<Pod>::namespaced(env.client(), "default")
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    assert_eq!(pods.items.len(), 2);
    for pod in &pods.items {
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(status.pod_ip.is_some());
    }
    env.stop().await.unwrap();
}
