//! [`Manager::start`](super::Manager::start): the start sequence, leader election, and the
//! ordered, time-bounded stop.
//!
//! Start: bind the HTTP servers, then start the groups in order (HTTP servers, webhooks,
//! caches and their sync, others), warm up the leader-election group, and either campaign for
//! the lease (starting the group once leading) or start the group at once. The sequence runs
//! in its own task while `start` waits for the first of: its token (or the base context)
//! cancelled, a runnable failure, the lease lost.
//!
//! Stop: the leader-election group first (so reconcilers finish while this process still
//! holds the lease), then the elector (releasing the lease if configured), then others,
//! caches, webhooks and HTTP servers, all within `graceful_shutdown_timeout`. Whatever has not
//! returned by then is cancelled and abandoned. Losing the lease skips the wait, as
//! controller-runtime does: another process may already lead.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Inner;
use super::error::Error;
use super::groups::{Groups, ReadyCheck};
use super::healthz::probe_handler;
use super::http::{self, HttpServer};
use super::profiling;
use super::runnable::{CacheRunnable, RunnableGroup};

/// Runs the manager; see the module docs.
pub(super) async fn start(inner: &Arc<Inner>, ctx: CancellationToken) -> Result<(), Error> {
    if inner.started.swap(true, Ordering::AcqRel) {
        return Err(Error::AlreadyStarted);
    }
    let mut failures = inner
        .failures_rx
        .lock()
        .take()
        .ok_or(Error::AlreadyStarted)?;

    if let Err(e) = add_http_servers(inner).await {
        // Drops the servers already bound: their ports are free again.
        for kind in Groups::ORDER {
            inner.groups.get(kind).cancel();
        }
        return Err(e);
    }
    let cache = inner.client.cache().clone();
    let synced: ReadyCheck = Box::new(move |ctx: CancellationToken| {
        Box::pin(async move { cache.wait_for_cache_sync(&ctx).await })
    });
    inner.groups.add(
        Arc::new(CacheRunnable(inner.client.cache().clone())),
        Some(synced),
    )?;

    // The elector runs under its own token, cancelled only after the leader-election group
    // has stopped.
    let election = Election {
        ctx: CancellationToken::new(),
        tasks: TaskTracker::new(),
    };
    let sequence = tokio::spawn({
        let (inner, election) = (inner.clone(), election.clone());
        async move {
            if let Err(e) = start_sequence(&inner, &election).await {
                let _ = inner.failures.send(e);
            }
        }
    });

    // Without a base context, one never cancelled.
    let base = inner.options.base_context.clone().unwrap_or_default();
    let result = tokio::select! {
        _ = ctx.cancelled() => Ok(()),
        _ = base.cancelled() => Ok(()),
        Some(failure) = failures.recv() => Err(failure),
    };
    sequence.abort();
    let _ = sequence.await;

    let timeout = match &result {
        // Someone else may lead already: do not wait for anything.
        Err(Error::LeaderElectionLost) => Duration::ZERO,
        _ => inner.options.graceful_shutdown_timeout,
    };
    match &result {
        Ok(()) => tracing::info!("stopping the manager"),
        Err(e) => tracing::error!(error = %e, "stopping the manager"),
    }
    let clean = stop(inner, &election, timeout).await;
    match result {
        Ok(()) if !clean && !timeout.is_zero() => Err(Error::ShutdownTimeout(timeout)),
        result => result,
    }
}

/// The elector's token and task.
#[derive(Clone)]
struct Election {
    ctx: CancellationToken,
    tasks: TaskTracker,
}

/// Binds the metrics, probe and profiling servers and adds them to the HTTP servers group.
async fn add_http_servers(inner: &Arc<Inner>) -> Result<(), Error> {
    let options = &inner.options;
    if let Some(addr) = options.metrics_bind_address.addr() {
        // Certificates first: a bad one fails the start before anything is bound.
        let server = crate::metrics::server::Server::new(
            inner.registry.clone(),
            &options.metrics_server,
            inner.client.cache().client().clone(),
        )
        .map_err(Error::MetricsServer)?;
        let listener = http::bind(addr).await?;
        *inner.metrics_addr.lock() = listener.local_addr().ok();
        inner
            .groups
            .add(Arc::new(http::MetricsServer::new(server, listener)), None)?;
    }
    if let Some(addr) = options.health_probe_bind_address.addr() {
        let listener = http::bind(addr).await?;
        *inner.health_probe_addr.lock() = listener.local_addr().ok();
        let handler = probe_handler(inner.healthz.clone(), inner.readyz.clone());
        inner.groups.add(
            Arc::new(HttpServer::new("health probe", listener, handler)),
            None,
        )?;
    }
    if let Some(addr) = options.pprof_bind_address.addr() {
        let listener = http::bind(addr).await?;
        *inner.pprof_addr.lock() = listener.local_addr().ok();
        let handler = profiling::handler(tokio::runtime::Handle::current());
        inner.groups.add(
            Arc::new(HttpServer::new("profiling", listener, handler)),
            None,
        )?;
    }
    Ok(())
}

/// Starts the groups in order; then leader election and its group.
async fn start_sequence(inner: &Arc<Inner>, election: &Election) -> Result<(), Error> {
    let groups = &inner.groups;
    groups.get(RunnableGroup::HttpServers).start().await?;
    groups.get(RunnableGroup::Webhooks).start().await?;
    groups.get(RunnableGroup::Caches).start().await?;
    inner.caches_synced.store(true, Ordering::Release);
    tracing::info!("caches synced");
    groups.get(RunnableGroup::Others).start().await?;
    let leader_group = groups.get(RunnableGroup::LeaderElection);
    leader_group.warm_up();

    let Some(elector) = inner.elector.clone() else {
        // Without leader election, this process is the leader.
        leader_group.start().await?;
        inner.elected.send_replace(true);
        return Ok(());
    };
    let mut status = elector.leader_status();
    election.tasks.spawn({
        let (ctx, failures) = (election.ctx.clone(), inner.failures.clone());
        async move {
            if let Err(e) = elector.run(ctx).await {
                tracing::error!(error = %e, "leader election lost");
                let _ = failures.send(Error::LeaderElectionLost);
            }
        }
    });
    tracing::info!("campaigning for leadership");
    if status.wait_for(|leading| *leading).await.is_err() {
        return Ok(());
    }
    tracing::info!("elected leader: starting the leader election runnables");
    set_gauge(inner, 1);
    leader_group.start().await?;
    inner.elected.send_replace(true);
    if status.wait_for(|leading| !*leading).await.is_ok() {
        set_gauge(inner, 0);
    }
    Ok(())
}

fn set_gauge(inner: &Inner, value: i64) {
    if let Some(gauge) = &inner.leader_gauge {
        gauge.set(value);
    }
}

/// Stops the groups in reverse order, the elector right after the leader-election group, within
/// `timeout`; then cancels whatever is left. Returns whether everything stopped in time.
async fn stop(inner: &Inner, election: &Election, timeout: Duration) -> bool {
    let groups: &Groups = &inner.groups;
    let ordered = async {
        for (i, kind) in Groups::ORDER.iter().rev().enumerate() {
            tracing::debug!(group = ?kind, "stopping runnables");
            groups.get(*kind).stop().await;
            if i == 0 {
                election.ctx.cancel();
                election.tasks.close();
                election.tasks.wait().await;
            }
        }
    };
    let clean = tokio::time::timeout(timeout, ordered).await.is_ok();
    if !clean {
        if !timeout.is_zero() {
            tracing::warn!(
                ?timeout,
                "runnables did not stop within the graceful shutdown timeout: abandoning them"
            );
        }
        for kind in Groups::ORDER.iter().rev() {
            groups.get(*kind).cancel();
        }
        election.ctx.cancel();
    }
    set_gauge(inner, 0);
    clean
}
