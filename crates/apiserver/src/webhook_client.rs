//! The HTTPS caller of webhooks (admission and CRD conversion): where a webhook's
//! `clientConfig` points ([`resolve`]), and one JSON POST to it ([`post_json`]), as
//! kube-apiserver's `webhook.ClientManager` makes them.
//!
//! - A `url` is used as written; a `service` reference is resolved through the store to a
//!   local address: the Service's port (`service.port`, 443 by default) is mapped to its
//!   `targetPort` on the first ready address of the Service's Endpoints (or its
//!   EndpointSlices). The TLS server name stays `<name>.<namespace>.svc`, as upstream
//!   verifies it, so a serving certificate for the Service works unchanged.
//! - TLS is verified against `caBundle` (PEM) alone. A webhook without a `caBundle` gets no
//!   root at all (the system roots are of no use to an in-process test server) and fails
//!   to connect with a clear error.
//! - One HTTP/1.1 connection per call (hyper's client over tokio-rustls), bounded as a whole
//!   by the webhook's timeout, which is also sent as the `?timeout=` query, as upstream does.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Uri, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

use crate::admission::Lookup;

/// Where a webhook is reached (`clientConfig`): `url`, or `service` resolved through the
/// store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The address called (`https://host:port/path`).
    pub(crate) url: Uri,
    /// The name the server's certificate must carry.
    pub(crate) server_name: String,
    /// `caBundle`, PEM: the only roots trusted.
    pub(crate) ca_bundle: Option<Vec<u8>>,
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CallError {
    /// The webhook did not answer within its timeout.
    Timeout,
    /// No connection, or the TLS handshake failed, or the request could not be sent.
    Connect(String),
    /// The webhook answered with a status other than 200: the code and the body's message.
    Status(u16, String),
    /// The answer was not JSON.
    Decode(String),
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout => f.write_str("context deadline exceeded"),
            CallError::Connect(why) => f.write_str(why),
            CallError::Status(code, body) if body.trim().is_empty() => write!(
                f,
                "the server responded with the status code {code} but did not return more information"
            ),
            CallError::Status(_, body) => f.write_str(body.trim()),
            CallError::Decode(why) => write!(f, "unable to decode the response: {why}"),
        }
    }
}

impl std::error::Error for CallError {}

/// POSTs `body` as JSON to the webhook and decodes its JSON answer, all within `timeout`.
pub(crate) async fn post_json(
    target: &Target,
    body: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    match tokio::time::timeout(timeout, call(target, body, timeout)).await {
        Ok(answer) => answer,
        Err(_) => Err(CallError::Timeout),
    }
}

/// The call itself, without its deadline.
async fn call(target: &Target, body: &Value, timeout: Duration) -> Result<Value, CallError> {
    let url = &target.url;
    let post = |why: String| CallError::Connect(format!("Post \"{url}\": {why}"));
    if url.scheme_str() != Some("https") {
        return Err(post(
            "unsupported protocol scheme, only https is allowed".into(),
        ));
    }
    let host = url
        .host()
        .ok_or_else(|| post("no host in the URL".into()))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = url.port_u16().unwrap_or(443);
    let config = client_config(target.ca_bundle.as_deref()).map_err(&post)?;
    let server_name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| post(format!("invalid server name: {e}")))?;
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| post(format!("dial tcp {host}:{port}: {e}")))?;
    let tls = tokio_rustls::TlsConnector::from(config)
        .connect(server_name, tcp)
        .await
        .map_err(|e| post(format!("tls: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| post(e.to_string()))?;
    // The connection is driven until the answer is read; it ends with this call.
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    let sep = if path.contains('?') { '&' } else { '?' };
    let path = format!("{path}{sep}timeout={}s", timeout.as_secs().max(1));
    let bytes = serde_json::to_vec(body).map_err(|e| post(e.to_string()))?;
    let authority = url
        .authority()
        .map_or_else(|| host.to_string(), |a| a.to_string());
    let request = Request::post(path)
        .header(header::HOST, authority)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, */*")
        .body(Full::new(bytes::Bytes::from(bytes)))
        .map_err(|e| post(e.to_string()))?;
    let answer = sender
        .send_request(request)
        .await
        .map_err(|e| post(e.to_string()));
    let answer = match answer {
        Ok(a) => a,
        Err(e) => {
            driver.abort();
            return Err(e);
        }
    };
    let status = answer.status().as_u16();
    let body = answer.into_body().collect().await;
    driver.abort();
    let body = body.map_err(|e| post(e.to_string()))?.to_bytes();
    if status != 200 {
        // A `Status` answer is worded by its message, anything else by its text.
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        return Err(CallError::Status(status, message));
    }
    serde_json::from_slice(&body).map_err(|e| CallError::Decode(e.to_string()))
}

/// A rustls client trusting the PEM `ca_bundle` alone, speaking HTTP/1.1.
fn client_config(ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    if let Some(pem) = ca_bundle {
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("invalid caBundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("invalid caBundle: {e}"))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Resolves a `clientConfig` object; `service` refs go through `lookup` (Service + its
/// Endpoints/EndpointSlices to a local address; the TLS name is `<name>.<namespace>.svc`),
/// `path` appended.
pub(crate) fn resolve(client_config: &Value, lookup: &dyn Lookup) -> Result<Target, String> {
    let ca_bundle = match client_config.get("caBundle").and_then(Value::as_str) {
        Some(b64) if !b64.is_empty() => {
            use base64::Engine as _;
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("invalid caBundle: {e}"))?,
            )
        }
        _ => None,
    };
    if let Some(url) = client_config.get("url").and_then(Value::as_str) {
        let url: Uri = url
            .parse()
            .map_err(|e| format!("invalid url {url:?}: {e}"))?;
        let server_name = url
            .host()
            .ok_or_else(|| format!("invalid url \"{url}\": no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        return Ok(Target {
            url,
            server_name,
            ca_bundle,
        });
    }
    let Some(svc) = client_config.get("service").filter(|s| s.is_object()) else {
        return Err("neither url nor service is set in clientConfig".into());
    };
    let (name, namespace) = (str_of(svc, "name"), str_of(svc, "namespace"));
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let (ip, target_port) = service_address(lookup, namespace, name, port)?;
    let path = str_of(svc, "path");
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip
    };
    let url: Uri = format!("https://{host}:{target_port}{path}")
        .parse()
        .map_err(|e| format!("invalid service path {path:?}: {e}"))?;
    Ok(Target {
        url,
        server_name: format!("{name}.{namespace}.svc"),
        ca_bundle,
    })
}

/// The local address of `namespace/name`'s `port`: an address of its Endpoints (or
/// EndpointSlices) and the endpoint port the Service port targets.
fn service_address(
    lookup: &dyn Lookup,
    namespace: &str,
    name: &str,
    port: i64,
) -> Result<(String, i64), String> {
    let service = lookup
        .get("v1", "Service", namespace, name)
        .ok_or_else(|| format!("service \"{name}\" not found"))?;
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let sp = ports
        .iter()
        .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        .ok_or_else(|| format!("service \"{name}\" does not have port {port}"))?;
    let port_name = str_of(sp, "name");
    // A numeric targetPort is the endpoint port; a named one (or none) is found in the
    // endpoints by the service port's name.
    let numeric = match sp.get("targetPort") {
        Some(Value::Number(n)) => n.as_i64(),
        None => Some(port),
        _ => None,
    };
    let pick = |ports: Option<&Value>| -> Option<i64> {
        let ports = ports?.as_array()?;
        let by_name = ports
            .iter()
            .find(|p| str_of(p, "name") == port_name)
            .or_else(|| (ports.len() == 1).then(|| &ports[0]))?;
        by_name.get("port").and_then(Value::as_i64)
    };
    if let Some(eps) = lookup.get("v1", "Endpoints", namespace, name) {
        for subset in eps
            .get("subsets")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ip = subset
                .get("addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .map(|a| str_of(a, "ip").to_string())
                .filter(|ip| !ip.is_empty());
            let p = numeric.or_else(|| pick(subset.get("ports")));
            if let (Some(ip), Some(p)) = (ip, p) {
                return Ok((ip, p));
            }
        }
    }
    for slice in lookup.list("discovery.k8s.io/v1", "EndpointSlice", Some(namespace)) {
        let owner = slice
            .pointer("/metadata/labels/kubernetes.io~1service-name")
            .and_then(Value::as_str);
        if owner != Some(name) {
            continue;
        }
        let ip = slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|e| e.pointer("/conditions/ready") != Some(&Value::Bool(false)))
            .find_map(|e| {
                e.get("addresses")
                    .and_then(Value::as_array)?
                    .first()?
                    .as_str()
                    .map(str::to_string)
            });
        let p = numeric.or_else(|| pick(slice.get("ports")));
        if let (Some(ip), Some(p)) = (ip, p) {
            return Ok((ip, p));
        }
    }
    Err(format!(
        "service \"{name}\" in namespace \"{namespace}\" has no endpoints"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A store holding a few objects, by kind.
    struct Objects(Vec<Value>);

    impl Lookup for Objects {
        fn namespace(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn policy(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn kind_scope(&self, _: &str, _: &str) -> Option<bool> {
            Some(true)
        }
        fn get(&self, _: &str, kind: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
            self.0
                .iter()
                .find(|o| {
                    o["kind"] == kind
                        && o["metadata"]["namespace"] == ns
                        && o["metadata"]["name"] == name
                })
                .cloned()
                .map(Arc::new)
        }
        fn list(&self, _: &str, kind: &str, _: Option<&str>) -> Vec<Arc<Value>> {
            self.0
                .iter()
                .filter(|o| o["kind"] == kind)
                .cloned()
                .map(Arc::new)
                .collect()
        }
    }

    #[test]
    fn urls_are_used_as_written() {
        let t = resolve(
            &json!({"url": "https://127.0.0.1:8443/validate", "caBundle": "Zm9v"}),
            &Objects(vec![]),
        )
        .unwrap();
        assert_eq!(t.url.to_string(), "https://127.0.0.1:8443/validate");
        assert_eq!(t.server_name, "127.0.0.1");
        assert_eq!(t.ca_bundle.as_deref(), Some(&b"foo"[..]));
        assert!(resolve(&json!({}), &Objects(vec![])).is_err());
    }

    #[test]
    fn services_resolve_through_endpoints_and_slices() {
        let svc = json!({"kind": "Service", "metadata": {"namespace": "sys", "name": "hook"},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": "web"}]}});
        let eps = json!({"kind": "Endpoints", "metadata": {"namespace": "sys", "name": "hook"},
            "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                         "ports": [{"name": "https", "port": 9443}]}]});
        let cc = json!({"service": {"namespace": "sys", "name": "hook", "path": "/mutate"}});
        let t = resolve(&cc, &Objects(vec![svc.clone(), eps])).unwrap();
        assert_eq!(t.url.to_string(), "https://127.0.0.1:9443/mutate");
        assert_eq!(t.server_name, "hook.sys.svc");
        let slice = json!({"kind": "EndpointSlice",
            "metadata": {"namespace": "sys", "name": "hook-x",
                         "labels": {"kubernetes.io/service-name": "hook"}},
            "endpoints": [{"addresses": ["127.0.0.2"]}],
            "ports": [{"name": "https", "port": 9444}]});
        let t = resolve(&cc, &Objects(vec![svc.clone(), slice])).unwrap();
        assert_eq!(t.url.to_string(), "https://127.0.0.2:9444/mutate");
        let err = resolve(&cc, &Objects(vec![svc])).unwrap_err();
        assert!(err.contains("has no endpoints"), "{err}");
        let err = resolve(&cc, &Objects(vec![])).unwrap_err();
        assert_eq!(err, "service \"hook\" not found");
    }

    #[tokio::test]
    async fn a_closed_port_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let target = Target {
            url: format!("https://127.0.0.1:{port}/x").parse().unwrap(),
            server_name: "127.0.0.1".into(),
            ca_bundle: None,
        };
        let err = post_json(&target, &json!({}), Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(err, CallError::Connect(_)), "{err:?}");
        assert!(
            err.to_string().starts_with("Post \"https://127.0.0.1:"),
            "{err}"
        );
    }
}
