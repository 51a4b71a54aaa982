//! metrics (in progress).
