//! Who writes: the one type every field-management step takes. A leaf of `fieldmanager`.

/// Who writes, through what, and when.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    /// The field manager.
    pub manager: &'a str,
    /// `Some("status")` or `Some("scale")` for writes through a subresource.
    pub subresource: Option<&'a str>,
    /// The `apiVersion` the request spoke.
    pub api_version: &'a str,
    /// The time to stamp changed entries with (RFC 3339, seconds).
    pub now: &'a str,
}
