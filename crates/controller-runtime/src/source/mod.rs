//! Sources of events (in progress).
