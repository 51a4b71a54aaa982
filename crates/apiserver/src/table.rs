//! table (in progress).
