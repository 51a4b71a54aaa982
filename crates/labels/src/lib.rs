//! Kubernetes label and field selectors (in progress).
