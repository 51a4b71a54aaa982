//! Field paths as upstream's `field.Path` prints them: `spec.ports[0].port`,
//! `metadata.labels[app]`.

use std::fmt;

/// A field path under construction; cheap enough for error paths only (build a child when an
/// error is reported, or once per list item).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Path(String);

// The group validators are being ported from upstream; until they all print paths through
// this type, some helpers are only used by tests.
#[allow(dead_code)]
impl Path {
    /// A root field, e.g. `spec`.
    pub(crate) fn new(root: &str) -> Self {
        Path(root.to_string())
    }

    /// `self.name`.
    pub(crate) fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            return Path::new(name);
        }
        Path(format!("{}.{name}", self.0))
    }

    /// `self[i]`.
    pub(crate) fn index(&self, i: usize) -> Self {
        Path(format!("{}[{i}]", self.0))
    }

    /// `self[key]` (a map entry).
    pub(crate) fn key(&self, key: &str) -> Self {
        Path(format!("{}[{key}]", self.0))
    }

    /// The path as printed.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<Path> for String {
    fn from(p: Path) -> String {
        p.0
    }
}

impl From<&Path> for String {
    fn from(p: &Path) -> String {
        p.0.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::Path;

    #[test]
    fn prints_as_upstream() {
        let p = Path::new("spec").child("ports").index(0).child("port");
        assert_eq!(p.as_str(), "spec.ports[0].port");
        assert_eq!(
            Path::new("metadata").child("labels").key("app").to_string(),
            "metadata.labels[app]"
        );
        assert_eq!(Path::default().child("data").as_str(), "data");
    }
}
