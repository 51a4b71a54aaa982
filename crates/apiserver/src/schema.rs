//! schema (in progress).
