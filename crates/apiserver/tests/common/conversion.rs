//! A CRD conversion webhook for the tests: HTTPS on 127.0.0.1 with a fresh CA, converting
//! `conv.example.com` Gadgets between `v1` (`spec.size`) and `v2` (`spec.replicas`), counting
//! the reviews it answers; and the CRD that points at it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};

/// A running conversion webhook.
pub struct ConversionWebhook {
    /// `https://127.0.0.1:PORT/convert`.
    pub url: String,
    /// The CA its serving certificate is signed by, PEM.
    pub ca_pem: String,
    reviews: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// `v1`'s `spec.size` is `v2`'s `spec.replicas`.
fn convert(mut obj: Value, desired: &str) -> Value {
    let (from, to) = if desired.ends_with("/v2") {
        ("size", "replicas")
    } else {
        ("replicas", "size")
    };
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut)
        && let Some(v) = spec.remove(from)
    {
        spec.insert(to.to_string(), v);
    }
    obj["apiVersion"] = Value::from(desired);
    obj
}

fn answer(review: &Value) -> Value {
    let request = &review["request"];
    let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
    let objects: Vec<Value> = request["objects"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|o| convert(o, desired))
        .collect();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "response": {"uid": request["uid"], "result": {"status": "Success"}, "convertedObjects": objects},
    })
}

impl ConversionWebhook {
    /// Starts the webhook on a free port.
    pub async fn start() -> ConversionWebhook {
        let certs = crt_apiserver::tls::Certificates::generate(&[]).unwrap();
        let tls = tokio_rustls::TlsAcceptor::from(certs.server_config().unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let reviews = Arc::new(AtomicUsize::new(0));
        let counted = reviews.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let (tls, counted) = (tls.clone(), counted.clone());
                tokio::spawn(async move {
                    let Ok(stream) = tls.accept(tcp).await else {
                        return;
                    };
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let counted = counted.clone();
                        async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value = serde_json::from_slice(&body).unwrap_or_default();
                            counted.fetch_add(1, Ordering::SeqCst);
                            let out = serde_json::to_vec(&answer(&review)).unwrap();
                            Ok::<_, hyper::Error>(hyper::Response::new(Full::new(
                                bytes::Bytes::from(out),
                            )))
                        }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        ConversionWebhook {
            url: format!("https://127.0.0.1:{port}/convert"),
            ca_pem: certs.ca_pem.clone(),
            reviews,
            task,
        }
    }

    /// How many reviews it answered.
    pub fn reviews(&self) -> usize {
        self.reviews.load(Ordering::SeqCst)
    }

    /// Stops listening: later calls are refused.
    pub async fn stop(&self) {
        self.task.abort();
        while !self.task.is_finished() {
            tokio::task::yield_now().await;
        }
    }

    /// The CRD of `gadgets.conv.example.com`: `v1` and `v2` served, `v2` stored, converted
    /// by this webhook.
    pub fn crd(&self) -> Value {
        let schema = |field: &str| {
            json!({"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
        };
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.conv.example.com"},
            "spec": {
                "group": "conv.example.com",
                "scope": "Namespaced",
                "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
                "versions": [
                    {"name": "v1", "served": true, "storage": false, "schema": schema("size")},
                    {"name": "v2", "served": true, "storage": true, "schema": schema("replicas")},
                ],
                "conversion": {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": self.url,
                        "caBundle": base64::engine::general_purpose::STANDARD.encode(&self.ca_pem),
                    },
                }},
            },
        })
    }
}

impl Drop for ConversionWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}
