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
    /// Where to write the kubeconfig: the admin (`crt-admin`, in `system:masters`)
    /// authenticates with a client certificate, as kind's and k3d's kubeconfigs do.
    #[arg(long, default_value = "crt.kubeconfig")]
    pub kubeconfig_out: PathBuf,
    /// Where to write the kubeconfig whose admin authenticates with the bearer token
    /// (default: beside the other, `.token` before its extension: `crt.token.kubeconfig`).
    #[arg(long)]
    pub token_kubeconfig_out: Option<PathBuf>,
    /// The bearer token clients must send (random when unset).
    #[arg(long, env = "CRT_TOKEN")]
    pub token: Option<String>,
    /// How many simulated nodes the cluster has (`node-1` .. `node-N`): their kubelets run
    /// the pods a scheduler binds, and the workload controllers run (see `crt-cluster`).
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Serve the API only, as Go's envtest does: no nodes, no scheduler, no kubelets, no
    /// controllers (pods stay Pending, Deployments at 0 replicas).
    #[arg(long, conflicts_with = "nodes")]
    pub no_cluster: bool,
    /// Keep the cluster's state in DIR (created when missing) and restore it at start:
    /// every object, CRDs and their custom resources included, with its resourceVersion, uid,
    /// creation timestamp, generation and managed fields. Each write is in a write-ahead log
    /// synced to disk (fdatasync) before it is answered, so every write answered 2xx survives
    /// a crash (kill -9, power loss); snapshots keep the log short. The server's CAs,
    /// ServiceAccount signing key and token are kept there too, so kubeconfigs and tokens from
    /// before a restart keep working. Watches do not survive a restart: clients reconnect and
    /// relist (410 Gone for a resourceVersion from before it). Without it the state lives in
    /// memory only.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
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
        data_dir: args.data_dir.clone(),
        ..Config::default()
    };
    let server = Server::start(config)
        .await
        .context("starting the API server")?;
    let cluster = (!args.no_cluster).then(|| {
        crt_cluster::Cluster::start(
            server.storage(),
            crt_cluster::ClusterConfig::default().with_nodes(args.nodes),
        )
    });
    let token_path = args
        .token_kubeconfig_out
        .unwrap_or_else(|| token_kubeconfig_beside(&args.kubeconfig_out));
    server
        .write_kubeconfig(&token_path)
        .context("writing the token kubeconfig")?;
    server
        .write_certificate_kubeconfig(&args.kubeconfig_out)
        .context("writing the kubeconfig")?;
    let path = std::path::absolute(&args.kubeconfig_out).unwrap_or(args.kubeconfig_out);
    let token_path = std::path::absolute(&token_path).unwrap_or(token_path);
    println!("crt-apiserver listening on {}", server.url());
    match &cluster {
        Some(cluster) => println!(
            "simulated cluster: {} node(s), scheduler, kubelets and workload controllers",
            cluster.nodes().len()
        ),
        None => println!("no simulated cluster (--no-cluster): the API server only"),
    }
    if let Some(dir) = &args.data_dir {
        println!(
            "data kept in {} (each write synced before it is answered)",
            dir.display()
        );
    }
    println!("token kubeconfig written to {}", token_path.display());
    println!("kubeconfig written to {}", path.display());
    println!(
        "try: kubectl --kubeconfig {} get namespaces",
        path.display()
    );
    shutdown.wait().await?;
    println!("stopping");
    drop(cluster);
    server.stop().await;
    Ok(())
}

/// The token kubeconfig's default path: `kubeconfig`'s with `.token` before its extension
/// (`crt.kubeconfig` -> `crt.token.kubeconfig`), or after its name when it has none.
fn token_kubeconfig_beside(kubeconfig: &std::path::Path) -> PathBuf {
    let name = match (kubeconfig.file_stem(), kubeconfig.extension()) {
        (Some(stem), Some(ext)) => {
            format!("{}.token.{}", stem.to_string_lossy(), ext.to_string_lossy())
        }
        _ => format!(
            "{}.token",
            kubeconfig.file_name().unwrap_or_default().to_string_lossy()
        ),
    };
    kubeconfig.with_file_name(name)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_kubeconfig_sits_beside_the_kubeconfig() {
        let beside = |p: &str| token_kubeconfig_beside(std::path::Path::new(p));
        assert_eq!(
            beside("crt.kubeconfig"),
            PathBuf::from("crt.token.kubeconfig")
        );
        assert_eq!(
            beside("/tmp/x/config"),
            PathBuf::from("/tmp/x/config.token")
        );
        assert_eq!(beside("a/kc.yaml"), PathBuf::from("a/kc.token.yaml"));
    }
}
