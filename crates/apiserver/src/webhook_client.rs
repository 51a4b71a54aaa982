//! The HTTPS caller of webhooks (admission and CRD conversion): where a `clientConfig` points
//! ([`resolve`]) and one JSON POST to it ([`post_json`]), verified against the `caBundle`.
//!
//! One connection per call, HTTP/1.1 over rustls with the `ring` provider passed explicitly
//! (the process-wide default provider is never used), as the real server's webhook client
//! verifies the webhook's certificate against the `caBundle` (or, without one, fails: this
//! server has no system roots to offer).

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

/// Where a webhook is reached (`clientConfig`): `url`, or `service` resolved through the store.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    /// The URL posted to.
    pub(crate) url: http::Uri,
    /// The name the serving certificate must carry.
    pub(crate) server_name: String,
    /// The CA bundle (PEM) the serving certificate is verified against.
    pub(crate) ca_bundle: Option<Vec<u8>>,
}

/// Why a webhook call failed.
#[derive(Debug)]
pub(crate) enum CallError {
    /// The call did not finish within its timeout.
    Timeout,
    /// No connection (refused, TLS handshake failed, bad address).
    Connect(String),
    /// The webhook answered with a status other than 200.
    Status(u16, String),
    /// The answer was not a JSON document.
    Decode(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Timeout => f.write_str("context deadline exceeded"),
            CallError::Connect(e) => f.write_str(e),
            CallError::Status(code, body) => {
                write!(
                    f,
                    "the server responded with the status code {code} but did not return more information: {body}"
                )
            }
            CallError::Decode(e) => write!(f, "decoding the webhook's answer: {e}"),
        }
    }
}

/// POSTs `body` as JSON to `target` and decodes the JSON answer, all within `timeout`.
pub(crate) async fn post_json(
    target: &Target,
    body: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    match tokio::time::timeout(timeout, post(target, body)).await {
        Ok(answer) => answer,
        Err(_) => Err(CallError::Timeout),
    }
}

async fn post(target: &Target, body: &Value) -> Result<Value, CallError> {
    let url = &target.url;
    let post_err = |e: &dyn std::fmt::Display| CallError::Connect(format!("Post \"{url}\": {e}"));
    let host = url.host().ok_or_else(|| post_err(&"no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let port = url.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(target.ca_bundle.as_deref().unwrap_or(&[])) {
        let cert = cert.map_err(|e| post_err(&format!("invalid caBundle: {e}")))?;
        roots.add(cert).map_err(|e| post_err(&e))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| post_err(&e))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(target.server_name.clone()).map_err(|e| post_err(&e))?;
    let tcp = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| post_err(&format!("dial tcp {host}:{port}: {e}")))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| post_err(&format!("tls: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| post_err(&e))?;
    tokio::spawn(conn);
    let path = url.path_and_query().map_or("/", |p| p.as_str());
    let authority = url.authority().map_or(host, |a| a.as_str());
    let req = http::Request::post(path)
        .header(http::header::HOST, authority)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .map_err(|e| post_err(&e))?;
    let resp = sender.send_request(req).await.map_err(|e| post_err(&e))?;
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| post_err(&e))?
        .to_bytes();
    if status != 200 {
        return Err(CallError::Status(
            status,
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| CallError::Decode(e.to_string()))
}

/// Resolves a `clientConfig` object; `service` refs go through `lookup` (Service + its Endpoints/EndpointSlices to a local address; the TLS name is `<name>.<namespace>.svc`), `path` appended.
pub(crate) fn resolve(
    client_config: &Value,
    lookup: &dyn crate::admission::Lookup,
) -> Result<Target, String> {
    let ca_bundle = match client_config.get("caBundle").and_then(Value::as_str) {
        Some(b) if !b.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("invalid caBundle: {e}"))?,
        ),
        _ => None,
    };
    if let Some(url) = client_config.get("url").and_then(Value::as_str) {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("invalid url {url:?}: {e}"))?;
        let host = uri
            .host()
            .ok_or_else(|| format!("invalid url {url:?}: no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        return Ok(Target {
            url: uri,
            server_name: host,
            ca_bundle,
        });
    }
    let Some(svc) = client_config.get("service") else {
        return Err("neither service nor url set in the webhook's clientConfig".into());
    };
    let s = |f: &str| svc.get(f).and_then(Value::as_str).unwrap_or("");
    let (name, namespace) = (s("name"), s("namespace"));
    let port = svc.get("port").and_then(Value::as_i64).unwrap_or(443);
    let service = lookup
        .get("v1", "Service", namespace, name)
        .ok_or_else(|| format!("service \"{name}\" not found"))?;
    let target_port = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .and_then(|ports| {
            ports
                .iter()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
        })
        .and_then(|p| p.get("targetPort").and_then(Value::as_i64))
        .unwrap_or(port);
    let endpoints = lookup
        .get("v1", "Endpoints", namespace, name)
        .ok_or_else(|| format!("no endpoints for service \"{name}\""))?;
    let ip = endpoints
        .pointer("/subsets/0/addresses/0/ip")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no endpoints available for service \"{name}\""))?;
    let host = if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_string()
    };
    let path = s("path");
    let url = format!("https://{host}:{target_port}{path}");
    Ok(Target {
        url: url
            .parse()
            .map_err(|e| format!("invalid service address {url:?}: {e}"))?,
        server_name: format!("{name}.{namespace}.svc"),
        ca_bundle,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;

    /// A store holding one Service and its Endpoints.
    struct Store;

    impl crate::admission::Lookup for Store {
        fn namespace(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn policy(&self, _: &str) -> Option<Arc<Value>> {
            None
        }
        fn kind_scope(&self, _: &str, _: &str) -> Option<bool> {
            Some(true)
        }
        fn get(&self, _: &str, kind: &str, namespace: &str, name: &str) -> Option<Arc<Value>> {
            if (namespace, name) != ("system", "hooks") {
                return None;
            }
            Some(Arc::new(match kind {
                "Service" => json!({"spec": {"ports": [{"port": 443, "targetPort": 9443}]}}),
                "Endpoints" => json!({"subsets": [{"addresses": [{"ip": "127.0.0.1"}]}]}),
                _ => return None,
            }))
        }
        fn list(&self, _: &str, _: &str, _: Option<&str>) -> Vec<Arc<Value>> {
            Vec::new()
        }
    }

    #[test]
    fn urls_and_services_resolve_to_a_target() {
        let t = resolve(
            &json!({"url": "https://hooks.example:8443/convert", "caBundle": "cGVt"}),
            &Store,
        )
        .unwrap();
        assert_eq!(t.url.to_string(), "https://hooks.example:8443/convert");
        assert_eq!(t.server_name, "hooks.example");
        assert_eq!(t.ca_bundle.as_deref(), Some(&b"pem"[..]));

        let t = resolve(
            &json!({"service": {"namespace": "system", "name": "hooks", "path": "/convert"}}),
            &Store,
        )
        .unwrap();
        assert_eq!(t.url.to_string(), "https://127.0.0.1:9443/convert");
        assert_eq!(t.server_name, "hooks.system.svc");
        assert_eq!(t.ca_bundle, None);

        let missing = json!({"service": {"namespace": "system", "name": "gone"}});
        assert_eq!(
            resolve(&missing, &Store).unwrap_err(),
            "service \"gone\" not found"
        );
        assert!(resolve(&json!({"caBundle": "%%"}), &Store).is_err());
    }
}
