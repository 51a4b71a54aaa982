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
    // Listen for the signals before printing that the server is up: one that arrived between
    // those lines and the handlers would kill the process instead of stopping it cleanly.
    let shutdown = Shutdown::listen()?;
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
    shutdown.wait().await?;
    println!("stopping");
    server.stop().await;
    Ok(())
}

/// Ctrl-C (SIGINT) or, on Unix, SIGTERM, listened for from [`Shutdown::listen`] on.
struct Shutdown {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Shutdown {
    /// Installs the handlers: from now on the signals are caught, not fatal.
    fn listen() -> anyhow::Result<Shutdown> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Shutdown {
                interrupt: signal(SignalKind::interrupt())
                    .context("installing the SIGINT handler")?,
                terminate: signal(SignalKind::terminate())
                    .context("installing the SIGTERM handler")?,
            })
        }
        #[cfg(not(unix))]
        Ok(Shutdown {})
    }

    /// Waits for either signal.
    async fn wait(self) -> anyhow::Result<()> {
        #[cfg(unix)]
        {
            let Shutdown {
                mut interrupt,
                mut terminate,
            } = self;
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            Ok(())
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")
        }
    }
}
