//! Acting as a ServiceAccount in a test environment: the account (and its namespace) created
//! when missing, a token asked through the TokenRequest subresource, as `kubectl create
//! token` does, and a client configuration that authenticates with it.

use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube_client::Api;
use kube_client::api::PostParams;
use kube_client::config::AuthInfo;
use kube_core::ObjectMeta;

use super::Error;

/// The lifetime asked for the token: an hour, longer than any test.
const TOKEN_SECONDS: i64 = 3600;

/// A configuration like `base` (the same server and CA) authenticating as the ServiceAccount
/// `namespace/name`, created with its namespace when missing; its default namespace is the
/// account's, as in a pod.
pub(crate) async fn config(
    base: &kube_client::Config,
    client: &kube_client::Client,
    namespace: &str,
    name: &str,
) -> Result<kube_client::Config, Error> {
    let account_err = |source| Error::ServiceAccount {
        namespace: namespace.to_string(),
        name: name.to_string(),
        source,
    };
    let meta = |name: &str, namespace: Option<&str>| ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        ..Default::default()
    };
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if namespaces
        .get_opt(namespace)
        .await
        .map_err(account_err)?
        .is_none()
    {
        let created = Namespace {
            metadata: meta(namespace, None),
            ..Default::default()
        };
        create_if_missing(&namespaces, &created)
            .await
            .map_err(account_err)?;
    }
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    let account = ServiceAccount {
        metadata: meta(name, Some(namespace)),
        ..Default::default()
    };
    create_if_missing(&accounts, &account)
        .await
        .map_err(account_err)?;

    // Built from and read as JSON: the fields' Rust types differ between the Kubernetes
    // versions k8s-openapi offers (`audiences` became optional, `status.token` too), and a
    // library compiles against whichever version its user picked.
    let request: TokenRequest = serde_json::from_value(serde_json::json!({
        "spec": { "expirationSeconds": TOKEN_SECONDS },
    }))
    .expect("a TokenRequest decodes in every Kubernetes version");
    let token_err = |unsupported: bool, reason: String| Error::TokenRequest {
        namespace: namespace.to_string(),
        name: name.to_string(),
        unsupported,
        reason,
    };
    let answered = accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .map_err(|e| match &e {
            kube_client::Error::Api(status) if matches!(status.code, 404 | 405) => token_err(
                true,
                format!("{} {}: {}", status.code, status.reason, status.message),
            ),
            _ => token_err(false, e.to_string()),
        })?;
    let answered = serde_json::to_value(&answered).unwrap_or_default();
    let token = answered
        .pointer("/status/token")
        .and_then(serde_json::Value::as_str)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .ok_or_else(|| token_err(false, "the answer holds no token".into()))?;

    let auth_info: AuthInfo = serde_json::from_value(serde_json::json!({ "token": token }))
        .map_err(|e| token_err(false, format!("using the token: {e}")))?;
    let mut config = base.clone();
    config.auth_info = auth_info;
    config.default_namespace = namespace.to_string();
    Ok(config)
}

/// Creates `object`; one that exists already is fine.
async fn create_if_missing<K>(api: &Api<K>, object: &K) -> Result<(), kube_client::Error>
where
    K: kube_core::Resource
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    match api.create(&PostParams::default(), object).await {
        Ok(_) => Ok(()),
        Err(kube_client::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}
