//! Table tests of predicates and handlers, and the sources' delivery through the dispatcher.
//!
//! A recording queue stands in for the workqueue, so each test sees exactly which items a
//! handler added and at which priority.

mod handlers;
mod predicates;
mod sources;
mod support;
