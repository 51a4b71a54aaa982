//! The state of a builder before its kind is chosen, shared by the controller and webhook
//! builders. A leaf of `builder`.

/// The state of a builder without a `for` type yet (see [`ControllerBuilder::for_`](super::ControllerBuilder::for_)).
#[derive(Debug)]
pub struct NoFor(pub(super) ());
