//! tls (in progress).
