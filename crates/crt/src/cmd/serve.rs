//! `crt serve`: the embedded API server in the foreground.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use crt_apiserver::{Config, Server};

/// Arguments of `crt serve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub addr: SocketAddr,
    /// Where to write the kubeconfig.
    #[arg(long, default_value = "crt.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// The bearer token clients must send (random when unset).
    #[arg(long, env = "CRT_TOKEN")]
    pub token: Option<String>,
}

/// Runs the server until Ctrl-C or SIGTERM, then stops it cleanly.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let config = Config {
        addr: args.addr.ip(),
        port: args.addr.port(),
        token: args.token,
        kubeconfig_path: Some(args.kubeconfig_out.clone()),
        ..Config::default()
    };
    let server = Server::start(config)
        .await
        .context("starting the API server")?;
    let path = std::path::absolute(&args.kubeconfig_out).unwrap_or(args.kubeconfig_out);
    println!("crt-apiserver listening on {}", server.url());
    println!("kubeconfig written to {}", path.display());
    println!(
        "try: kubectl --kubeconfig {} get namespaces",
        path.display()
    );
    shutdown_signal().await?;
    println!("stopping");
    server.stop().await;
    Ok(())
}

/// Waits for Ctrl-C (SIGINT) or, on Unix, SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
        Ok(())
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")
    }
}
