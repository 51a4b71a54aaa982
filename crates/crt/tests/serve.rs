//! `crt serve` end to end: it starts, writes a kubeconfig that kube-client accepts, and exits 0
//! on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serve_writes_a_kubeconfig_and_stops_on_sigterm() {
    let dir = std::env::temp_dir().join(format!("crt-serve-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_crt"))
        .args(["serve", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Some(Ok(line)) = lines.next() {
        seen.push(line.clone());
        if line.starts_with("kubeconfig written to") {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l.contains("kubeconfig written to")),
        "{seen:?}"
    );
    let yaml = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(yaml.contains("certificate-authority-data:") && yaml.contains("token:"));

    let rt = tokio::runtime::Runtime::new().unwrap();
    let namespaces = rt.block_on(async {
        let kc = kube_client::config::Kubeconfig::from_yaml(&yaml).unwrap();
        let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube_client::Client::try_from(config).unwrap();
        let api: kube_client::Api<k8s_openapi::api::core::v1::Namespace> =
            kube_client::Api::all(client);
        api.list(&Default::default()).await.unwrap().items.len()
    });
    assert_eq!(namespaces, 4);

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
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
            panic!("crt serve did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
