//! The operator's binary.
//!
//! - `memo-operator [--metrics-bind-address ADDR] [--health-probe-bind-address ADDR]`: connects
//!   to the cluster `$KUBECONFIG` (or the in-cluster service account) names and runs the Memo
//!   controller until Ctrl-C or SIGTERM, which stop it gracefully: no new work is taken, running
//!   reconciles finish, the leader-election Lease is given up, then it exits. Replicas elect a
//!   leader through a Lease in `$POD_NAMESPACE` (default: the manifests' namespace). `/metrics` is served on ADDR (default `127.0.0.1:8080`),
//!   `/healthz` and `/readyz` on the probe address (default: none); `:PORT` is every interface.
//! - `memo-operator manifests [--out DIR] [--image IMAGE]`: writes the deployment manifests
//!   (`DIR/config/`, a kustomize tree, and `DIR/chart/memo-operator/`, a Helm chart; DIR
//!   defaults to `.`), see the `manifests` module.

use std::path::PathBuf;

use controller_runtime::kube_client::Client;
use controller_runtime::prelude::*;
use memo_operator::manifests::{Manifests, NAMESPACE};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("manifests") {
        args.next();
        let (mut out, mut manifests) = (PathBuf::from("."), Manifests::default());
        while let Some(arg) = args.next() {
            match (arg.as_str(), args.next()) {
                ("--out", Some(dir)) => out = dir.into(),
                ("--image", Some(image)) => manifests.image = image,
                _ => {
                    return Err(
                        format!("usage: manifests [--out DIR] [--image IMAGE]; got {arg}").into(),
                    );
                }
            }
        }
        for path in manifests.write(&out)? {
            println!("{}", path.display());
        }
        return Ok(());
    }
    let namespace = std::env::var("POD_NAMESPACE").unwrap_or_else(|_| NAMESPACE.to_string());
    let mut options =
        ManagerOptions::default().with_leader_election(memo_operator::leader_election(&namespace));
    while let Some(arg) = args.next() {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), args.next()),
        };
        let addr: BindAddress = match value {
            Some(value) => value.parse()?,
            None => return Err(format!("{flag} needs a value").into()),
        };
        options = match flag.as_str() {
            "--metrics-bind-address" => options.with_metrics_bind_address(addr),
            "--health-probe-bind-address" => options.with_health_probe_bind_address(addr),
            _ => return Err(format!("unknown flag {flag}").into()),
        };
    }
    tracing_subscriber::fmt().with_env_filter("info").init();
    let mgr = Manager::new(Client::try_default().await?, options)?;
    memo_operator::add_controller(&mgr).await?;
    mgr.start(signal_handler()).await?;
    Ok(())
}
