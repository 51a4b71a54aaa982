//! End-to-end tests of the controller: Channel source -> predicates -> handler -> real workqueue
//! -> workers -> reconciler, on tokio's paused clock (no test depends on wall-clock speed).

mod harness;
mod lifecycle;
mod priority;
mod results;
mod watches;
