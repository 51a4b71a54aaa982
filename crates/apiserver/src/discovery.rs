//! discovery (in progress).
