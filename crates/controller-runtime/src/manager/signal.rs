//! [`signal_handler`]: a stop token for `main`, as controller-runtime's `SetupSignalHandler`.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGINT (Ctrl-C) or SIGTERM; a second signal exits the
/// process with code 1 (controller-runtime's `SetupSignalHandler`), so an operator stuck in
/// shutdown can still be stopped.
///
/// Call it from inside a tokio runtime. The handler is installed once per process: later
/// calls return the same token.
///
/// ```no_run
/// # async fn run() {
/// let stop = controller_runtime::manager::signal_handler();
/// stop.cancelled().await; // Ctrl-C
/// # }
/// ```
pub fn signal_handler() -> CancellationToken {
    static TOKEN: OnceLock<CancellationToken> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let token = CancellationToken::new();
            let cancel = token.clone();
            // Installed before returning: a signal sent right after this call is seen.
            let mut signals = Signals::new();
            tokio::spawn(async move {
                signals.recv().await;
                tracing::info!("signal received: stopping (send another to exit at once)");
                cancel.cancel();
                signals.recv().await;
                tracing::warn!("second signal received: exiting");
                std::process::exit(1);
            });
            token
        })
        .clone()
}

/// SIGINT and SIGTERM, listened to for the life of the process (so that no signal between
/// the first and the second is missed).
#[cfg(unix)]
struct Signals {
    streams: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

#[cfg(unix)]
impl Signals {
    fn new() -> Self {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(interrupt), Ok(terminate)) => Signals {
                streams: Some((interrupt, terminate)),
            },
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, "cannot install the signal handlers; Ctrl-C only");
                Signals { streams: None }
            }
        }
    }

    /// Waits for the next SIGINT or SIGTERM.
    async fn recv(&mut self) {
        match &mut self.streams {
            Some((interrupt, terminate)) => {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
}

/// Ctrl-C, where there are no Unix signals.
#[cfg(not(unix))]
struct Signals;

#[cfg(not(unix))]
impl Signals {
    fn new() -> Self {
        Signals
    }

    async fn recv(&mut self) {
        let _ = tokio::signal::ctrl_c().await;
    }
}
