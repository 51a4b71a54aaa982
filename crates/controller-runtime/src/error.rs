//! The boxed error type the crate's extension points take: what a [`Runnable`](crate::manager::Runnable),
//! a [`Func`](crate::source::Func) source or a reconcile error carries from user code.

/// Any error, boxed: what user code hands back through the crate's extension points.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
