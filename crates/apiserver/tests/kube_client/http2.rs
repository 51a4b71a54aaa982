//! Requests over HTTP/2 (what client-go negotiates): a body over the limit gets the same 413
//! `Status` HTTP/1.1 gets, not a reset stream.

use std::sync::Arc;

use bytes::Bytes;
use crt_apiserver::{Config, Server};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// An HTTP/2 connection to `server`, negotiated by ALPN over TLS as client-go does.
async fn h2(
    server: &Server,
) -> hyper::client::conn::http2::SendRequest<
    http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(server.ca_pem().as_bytes()).expect("CA PEM");
    roots.add(ca).expect("CA accepted");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let tcp = TcpStream::connect(("127.0.0.1", server.port()))
        .await
        .unwrap();
    let tls = TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .expect("TLS handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("HTTP/2 handshake");
    tokio::spawn(conn);
    send
}

/// Sends `body` as a POST of a ConfigMap; answers the status code and the body as JSON.
async fn post(
    send: &mut hyper::client::conn::http2::SendRequest<
        http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
    >,
    server: &Server,
    length: Option<usize>,
    body: http_body_util::combinators::BoxBody<Bytes, std::io::Error>,
) -> (u16, Value) {
    let mut req = http::Request::builder()
        .method("POST")
        .uri(format!(
            "{}/api/v1/namespaces/default/configmaps",
            server.url()
        ))
        .header("authorization", format!("Bearer {}", server.token()))
        .header("content-type", "application/json");
    if let Some(len) = length {
        req = req.header("content-length", len);
    }
    let resp = send
        .send_request(req.body(body).unwrap())
        .await
        .expect("an answer, not a reset stream");
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .expect("the whole answer")
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).expect("a JSON Status"),
    )
}

fn config_map(size: usize) -> Bytes {
    Bytes::from(format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
        "x".repeat(size)
    ))
}

fn assert_413(status: u16, body: &Value, limit: usize) {
    assert_eq!(status, 413);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "RequestEntityTooLarge");
    assert_eq!(body["code"], 413);
    assert_eq!(
        body["message"],
        format!("Request entity too large: limit is {limit}")
    );
}

#[tokio::test]
async fn bodies_over_the_limit_get_a_413_status_over_http2() {
    let limit = 3 * 1024 * 1024;
    let server = Server::start(Config::default()).await.unwrap();
    let mut send = h2(&server).await;

    // Declared too large by Content-Length (answered before the body is read).
    let big = config_map(4 * limit);
    let len = big.len();
    let body = Full::new(big).map_err(|never| match never {}).boxed();
    let (status, json) = post(&mut send, &server, Some(len), body).await;
    assert_413(status, &json, limit);

    // No Content-Length: found too large while reading, in several DATA frames.
    let chunks: Vec<Result<Frame<Bytes>, std::io::Error>> = config_map(4 * limit)
        .chunks(16 * 1024)
        .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
        .collect();
    let body = StreamBody::new(futures::stream::iter(chunks)).boxed();
    let (status, json) = post(&mut send, &server, None, body).await;
    assert_413(status, &json, limit);

    // The connection still serves: a small create succeeds on it.
    let small = config_map(10);
    let len = small.len();
    let body = Full::new(small).map_err(|never| match never {}).boxed();
    let (status, json) = post(&mut send, &server, Some(len), body).await;
    assert_eq!(status, 201, "{json}");
    assert_eq!(json["metadata"]["name"], "big");
    server.stop().await;
}

/// curl (nghttp2) reports a reset stream as a framing error and drops the answer: it must get
/// the 413 while it is still sending a body whose `Content-Length` is over the limit, in both
/// protocols. Skipped when curl is not installed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_reads_the_413_while_still_sending() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("curl not installed: skipped");
        return;
    }
    let server = Server::start(Config::default()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, server.ca_pem()).unwrap();
    let body = dir.path().join("body.json");
    std::fs::write(&body, config_map(3 * 1024 * 1024 + 1)).unwrap();
    for protocol in ["--http2", "--http1.1"] {
        let out = tokio::process::Command::new("curl")
            .args(["-sS", protocol, "--cacert"])
            .arg(&ca)
            .args(["-H", &format!("Authorization: Bearer {}", server.token())])
            .args([
                "-H",
                "Content-Type: application/json",
                "-w",
                "\n%{http_code}",
            ])
            .arg("--data-binary")
            .arg(format!("@{}", body.display()))
            .arg(format!(
                "{}/api/v1/namespaces/default/configmaps",
                server.url()
            ))
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "curl {protocol}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (json, code) = stdout.rsplit_once('\n').unwrap();
        assert_eq!(code, "413", "curl {protocol}");
        assert_413(413, &serde_json::from_str(json).unwrap(), 3 * 1024 * 1024);
    }
    server.stop().await;
}
