//! `crt serve` end to end: it starts on a free port or the one `--addr` names, writes a
//! kubeconfig that kube-client accepts, and on SIGTERM or SIGINT (Ctrl-C) exits 0 and frees its
//! port.

use std::net::{SocketAddr, TcpListener};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `crt serve` (with `--addr addr` when given), checks its output and kubeconfig, lists
/// namespaces through kube-client, sends `signal` (a `kill` signal name: TERM, INT) and checks
/// it exits 0 within 10 s and leaves its port free. The address it listened on.
fn serve_then_signal(signal: &str, addr: Option<SocketAddr>) -> SocketAddr {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_crt"));
    cmd.args(["serve", "--kubeconfig-out"]).arg(&kubeconfig);
    if let Some(addr) = addr {
        cmd.arg("--addr").arg(addr.to_string());
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    // Kept open until the child exits: it prints "stopping" on its way out.
    let (seen, lines) = crate::until_serving(&mut child);
    // The kubeconfig's admin has a client certificate (clients that build their own TLS
    // stack authenticate with it); the token kubeconfig beside it has the bearer token.
    let yaml = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(yaml.contains("certificate-authority-data:"), "{yaml}");
    assert!(yaml.contains("client-certificate-data:") && yaml.contains("client-key-data:"));
    assert!(!yaml.contains("token:"), "{yaml}");
    let token_yaml = std::fs::read_to_string(dir.path().join("kubeconfig.token")).unwrap();
    assert!(token_yaml.contains("token:"), "{token_yaml}");
    let url = yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .unwrap_or_else(|| panic!("no server in the kubeconfig: {yaml}"));
    let listened: SocketAddr = url
        .strip_prefix("https://")
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("server {url:?} is not https://IP:PORT"));
    assert_ne!(listened.port(), 0);
    if let Some(addr) = addr {
        assert_eq!(listened, addr, "the kubeconfig names the --addr given");
    }
    assert!(
        seen.contains(&format!("crt-apiserver listening on {url}")),
        "{seen:?}"
    );

    let rt = tokio::runtime::Runtime::new().unwrap();
    let namespaces = |yaml: &str| {
        rt.block_on(async {
            let kc = kube_client::config::Kubeconfig::from_yaml(yaml).unwrap();
            let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
                .await
                .unwrap();
            let client = kube_client::Client::try_from(config).unwrap();
            let api: kube_client::Api<k8s_openapi::api::core::v1::Namespace> =
                kube_client::Api::all(client);
            api.list(&Default::default()).await.unwrap().items.len()
        })
    };
    assert_eq!(namespaces(&yaml), 4, "through the client certificate");
    assert_eq!(namespaces(&token_yaml), 4, "through the token");
    // Closes the client's connections.
    drop(rt);

    let killed = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("crt serve did not stop on SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status on SIG{signal}: {status:?}");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    assert_eq!(
        rest.last().map(String::as_str),
        Some("stopping"),
        "{rest:?}"
    );
    TcpListener::bind(listened)
        .unwrap_or_else(|e| panic!("port {listened} still taken after crt serve stopped: {e}"));
    listened
}

#[test]
fn serve_writes_a_kubeconfig_and_stops_on_sigterm() {
    serve_then_signal("TERM", None);
}

#[test]
fn serve_listens_on_addr_and_stops_on_ctrl_c() {
    // A port that was free a moment ago.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    assert_eq!(serve_then_signal("INT", Some(addr)), addr);
}
