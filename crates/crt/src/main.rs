//! `crt`: the controller-runtime-rs command line.
//!
//! - `crt demo`: an operator end to end (CRD, Builder, Manager, finalizer), with its flow
//!   printed, on an embedded API server or a cluster.
//! - `crt new NAME`: a ready operator crate (the repository's operator template, renamed).
//! - `crt serve`: run the embedded Kubernetes API server in the foreground.
//! - `crt watch RESOURCE`: print what a Kind source delivers for a resource.
//!
//! Each subcommand lives in its own module under `cmd/`.

mod cmd;

use clap::{Parser, Subcommand};

/// mimalloc, not the system allocator: the API server allocates and frees a few dozen small
/// maps and strings per request, and glibc's malloc was a fifth of its CPU; with mimalloc a
/// create costs 15% fewer instructions and runs 20-25% faster (BENCHMARKS.md). A program that
/// embeds `crt-apiserver` chooses its own allocator the same way.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// controller-runtime-rs command line.
#[derive(Debug, Parser)]
#[command(name = "crt", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a sample operator through a scripted scenario, printing each event's path through
    /// the pipeline (on an embedded API server unless --kubeconfig is given).
    Demo(cmd::demo::Args),
    /// Write a new operator crate: a custom resource, its reconciler, RBAC manifests and tests
    /// on an embedded API server, ready for `cargo test`.
    New(cmd::new::Args),
    /// Run the embedded Kubernetes API server in the foreground until Ctrl-C or SIGTERM.
    Serve(cmd::serve::Args),
    /// Print the events and queue items a Kind source gives for a resource (debugging a
    /// controller's inputs).
    Watch(cmd::watch::Args),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // Without RUST_LOG: warnings and errors. The demo prints every reconcile's result itself
    // (errors included), so the worker's own error log would say each one twice.
    let default_filter = match cli.command {
        Command::Demo(_) => "warn,controller_runtime::controller::worker=off",
        _ => "warn",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| default_filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match cli.command {
        Command::Demo(args) => cmd::demo::run(args).await,
        Command::New(args) => cmd::new::run(args).await,
        Command::Serve(args) => cmd::serve::run(args).await,
        Command::Watch(args) => cmd::watch::run(args).await,
    }
}
