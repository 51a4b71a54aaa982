//! Fault injection for client tests (in progress).

/// A handle to inject faults into a running server.
#[derive(Clone, Debug, Default)]
pub struct Faults {}
