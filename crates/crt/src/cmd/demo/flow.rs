//! Printing the pipeline as it runs: one line per event (what arrived, what the predicate said,
//! what the handler put on the queue) and one line per reconcile (the key, what it did, its
//! result).
//!
//! The operator is built with the Builder, which wires the handlers itself; the demo sees the
//! stages through the three places the Builder lets it in:
//!
//! - its own [`Predicate`] on each watch ([`FlowPredicate`]): it sees every event first, so it
//!   describes the event and gives its verdict;
//! - the controller's queue (`ControllerOptions::new_queue`, [`FlowQueue`]): it sees what the
//!   handler enqueued;
//! - the reconciler ([`FlowReconciler`]): it sees the key taken and the result.
//!
//! The source delivers an event to the predicates and then the handler synchronously, on one
//! thread, and the handler enqueues right there; so the predicate leaves its half of the line in
//! a thread-local and the queue finishes and prints it. An event the handler enqueues nothing for
//! is printed by itself.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use controller_runtime::Request;
use controller_runtime::event::Event;
use controller_runtime::predicate::Predicate;
use controller_runtime::reconcile::{ReconcileContext, ReconcileResult, Reconciler};
use controller_runtime::workqueue::{AddOpts, Enqueue, Queue};
use futures::future::BoxFuture;
use kube_client::core::Resource;

/// What the demo counts, for the summary. Shared by the printing wrappers.
#[derive(Debug, Default)]
pub struct Stats {
    /// Events the sources delivered.
    pub events: AtomicU64,
    /// Events a predicate dropped.
    pub filtered: AtomicU64,
    /// Reconciles run.
    pub reconciles: AtomicU64,
    /// Reconciles that returned an error (and were retried with backoff).
    pub errors: AtomicU64,
    /// Objects the operator created.
    pub created: AtomicU64,
    /// Objects the operator updated (children and status).
    pub updated: AtomicU64,
    /// Objects the operator deleted.
    pub deleted: AtomicU64,
    /// Kubernetes Events the operator recorded.
    pub recorded: AtomicU64,
}

impl Stats {
    /// Adds one to a counter.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

thread_local! {
    /// The event line a predicate let through, waiting for the handler's enqueue.
    static PENDING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Prints an event line left without an enqueue (the handler found nothing to enqueue).
fn flush_pending() {
    if let Some(line) = PENDING.with(|p| p.borrow_mut().take()) {
        say!("{line} | handler: nothing to enqueue");
    }
}

/// The column every flow line starts with, so a reader can scan the stages.
fn stage(name: &str) -> String {
    format!("  {name:<9} ")
}

/// The demo's predicate, asked for every event of one watch: it describes the event, decides,
/// and counts.
///
/// The rule is controller-runtime's `GenerationChangedPredicate`, made safe for kinds without a
/// generation: an update passes when `metadata.generation` moved (a spec change), when deletion
/// started, or when the kind keeps no generation at all (a ConfigMap's data change must reach
/// the operator). So the operator's own status writes do not wake it up again.
pub struct FlowPredicate {
    stats: Arc<Stats>,
}

impl FlowPredicate {
    /// A predicate counting into `stats`.
    pub fn new(stats: Arc<Stats>) -> Self {
        FlowPredicate { stats }
    }

    fn describe<K: Resource<DynamicType = ()>>(&self, what: &str, obj: &K) -> String {
        Stats::bump(&self.stats.events);
        flush_pending();
        let meta = obj.meta();
        let key = format!(
            "{}/{}",
            meta.namespace.as_deref().unwrap_or(""),
            meta.name.as_deref().unwrap_or("")
        );
        format!("{}{what} {} {key}", stage("event"), K::kind(&()))
    }

    /// Leaves a passing event's line for the queue, or prints a dropped one; answers `pass`.
    fn verdict(&self, line: String, pass: bool, why: &str) -> bool {
        if pass {
            PENDING.with(|p| *p.borrow_mut() = Some(format!("{line} | predicate: pass ({why})")));
        } else {
            Stats::bump(&self.stats.filtered);
            say!("{line} | predicate: drop ({why})");
        }
        pass
    }
}

impl<K: Resource<DynamicType = ()>> Predicate<K> for FlowPredicate {
    fn filter(&self, event: &Event<K>) -> bool {
        match event {
            Event::Create(e) => {
                let what = if e.is_in_initial_list {
                    "Create (initial list)"
                } else {
                    "Create"
                };
                let line = self.describe(what, &*e.object);
                self.verdict(line, true, "new object")
            }
            Event::Update(e) => {
                let line = self.describe("Update", &*e.new);
                let (old, new) = (e.old.meta(), e.new.meta());
                if new.deletion_timestamp.is_some() && old.deletion_timestamp.is_none() {
                    return self.verdict(line, true, "deletion started");
                }
                match (old.generation, new.generation) {
                    (_, None) => self.verdict(line, true, "kind has no generation"),
                    (Some(a), Some(b)) if a != b => self.verdict(line, true, "generation changed"),
                    _ => self.verdict(line, false, "generation unchanged: status or metadata only"),
                }
            }
            Event::Delete(e) => {
                let line = self.describe("Delete", &*e.object);
                self.verdict(line, true, "gone")
            }
            Event::Generic(e) => {
                let line = self.describe("Generic", &*e.object);
                self.verdict(line, true, "generic")
            }
        }
    }
}

/// The controller's queue with a window on it: every add prints the event line the predicate
/// left (if any) with the key the handler enqueued.
pub struct FlowQueue {
    inner: Arc<dyn Queue<Request>>,
    /// Keys handed to a worker and not done yet: an add of one of them is held until done.
    processing: Mutex<HashSet<Request>>,
}

impl FlowQueue {
    /// Wraps `inner`.
    pub fn wrap(inner: Arc<dyn Queue<Request>>) -> Arc<dyn Queue<Request>> {
        Arc::new(FlowQueue {
            inner,
            processing: Mutex::default(),
        })
    }

    /// Prints the pending event line with what the handler enqueued, and where the key is now.
    fn show(&self, item: &Request, how: &str) {
        if let Some(line) = PENDING.with(|p| p.borrow_mut().take()) {
            let state = if lock(&self.processing).contains(item) {
                "being reconciled: it runs again after".to_string()
            } else {
                format!("{} ready", self.inner.len())
            };
            say!("{line} | handler: enqueue {item}{how} | queue: {state}");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Enqueue<Request> for FlowQueue {
    fn add_with_opts(&self, opts: AddOpts, item: Request) {
        self.inner.add_with_opts(opts, item.clone());
        let how = match opts.priority {
            Some(p) if p < 0 => " (low priority)",
            _ => "",
        };
        self.show(&item, how);
    }
}

impl Queue<Request> for FlowQueue {
    fn get_with_priority(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
        Box::pin(async move {
            let got = self.inner.get_with_priority().await?;
            lock(&self.processing).insert(got.0.clone());
            Some(got)
        })
    }
    fn done(&self, item: &Request) {
        lock(&self.processing).remove(item);
        self.inner.done(item)
    }
    fn forget(&self, item: &Request) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &Request) -> u32 {
        self.inner.num_requeues(item)
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn shut_down(&self) {
        self.inner.shut_down()
    }
    fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
        self.inner.shut_down_with_drain()
    }
    fn is_shutting_down(&self) -> bool {
        self.inner.is_shutting_down()
    }
}

/// Notes a reconcile takes of what it did ("created hello-1"), printed on its result line.
#[derive(Debug, Default)]
pub struct Notes(Mutex<Vec<String>>);

impl Notes {
    /// Records one thing the reconcile did.
    pub fn add(&self, note: impl Into<String>) {
        if let Ok(mut notes) = self.0.lock() {
            notes.push(note.into());
        }
    }

    fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut n| std::mem::take(&mut *n))
            .unwrap_or_default()
    }
}

/// The reconciler with a window on it: a line when a key is taken, and one with what the
/// reconcile did (the notes the inner reconciler took) and its result. Events the reconcile
/// causes print in between, as they happen.
pub struct FlowReconciler<R> {
    inner: R,
    notes: Arc<Notes>,
    stats: Arc<Stats>,
}

impl<R> FlowReconciler<R> {
    /// Wraps `inner`, which records what it does in `notes`.
    pub fn new(inner: R, notes: Arc<Notes>, stats: Arc<Stats>) -> Self {
        FlowReconciler {
            inner,
            notes,
            stats,
        }
    }
}

impl<R: Reconciler> Reconciler for FlowReconciler<R> {
    fn reconcile(&self, req: Request, ctx: ReconcileContext) -> BoxFuture<'_, ReconcileResult> {
        Box::pin(async move {
            Stats::bump(&self.stats.reconciles);
            let n = Stats::get(&self.stats.reconciles);
            say!("{}{req} (#{n}) taken from the queue", stage("reconcile"));
            let started = Instant::now();
            let result = self.inner.reconcile(req.clone(), ctx).await;
            let notes = self.notes.take();
            let mut line = format!("{}{req} (#{n})", stage("result"));
            if notes.is_empty() {
                line.push_str(" | nothing to do");
            } else {
                let _ = write!(line, " | {}", notes.join(", "));
            }
            let took = started.elapsed().as_millis();
            match &result {
                Ok(action) => match action.requeue_after_duration() {
                    Some(d) => {
                        let _ = write!(line, " | requeue after {d:?} ({took} ms)");
                    }
                    None => {
                        let _ = write!(line, " | done ({took} ms)");
                    }
                },
                Err(e) => {
                    Stats::bump(&self.stats.errors);
                    let _ = write!(line, " | error, retried with backoff: {e}");
                    if is_conflict(e) {
                        line.push_str(
                            " (a write based on a cached object the server had moved past: \
                             the retry reads the newer one)",
                        );
                    }
                }
            }
            say!("{line}");
            result
        })
    }
}

/// Whether a reconcile error is a `409 Conflict` somewhere in its source chain.
fn is_conflict(e: &controller_runtime::reconcile::ReconcileError) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e.source_error());
    while let Some(err) = source {
        if let Some(controller_runtime::client::Error::Conflict(_)) = err.downcast_ref() {
            return true;
        }
        source = err.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use controller_runtime::client;
    use controller_runtime::reconcile::ReconcileError;
    use kube_client::core::Status;

    #[test]
    fn a_conflict_is_found_under_the_finalizer_error() {
        let conflict = client::Error::Conflict(Box::new(Status::failure("modified", "Conflict")));
        let wrapped: controller_runtime::finalizer::Error<ReconcileError> =
            controller_runtime::finalizer::Error::AddFinalizer {
                finalizer: "f".into(),
                object: "ns/x".into(),
                source: conflict,
            };
        assert!(super::is_conflict(&ReconcileError::from(wrapped)));
        assert!(!super::is_conflict(&ReconcileError::msg("boom")));
        let not_found = client::Error::NotFound(Box::new(Status::failure("gone", "NotFound")));
        assert!(!super::is_conflict(&ReconcileError::new(not_found)));
    }
}
