//! patch (in progress).
