//! controller (in progress).
