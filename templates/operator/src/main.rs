//! The operator's binary: connects to the cluster `$KUBECONFIG` (or the in-cluster service
//! account) names, runs the Memo controller until Ctrl-C or SIGTERM.

use controller_runtime::kube_client::Client;
use controller_runtime::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt().with_env_filter("info").init();
    let mgr = Manager::new(Client::try_default().await?, ManagerOptions::default())?;
    memo_operator::add_controller(&mgr).await?;
    mgr.start(signal_handler()).await?;
    Ok(())
}
