//! Where a walk over an object is, kept on the call stack and rendered only when something is
//! reported: the unknown-field walkers of built-in objects ([`super::decode`]) and of custom
//! objects ([`super::prune`]) share it, so neither allocates while the object is valid.

use std::fmt::Write as _;

/// A position in an object, as a chain of borrowed steps from the root.
pub(crate) enum Path<'p> {
    /// The object itself.
    Root,
    /// A struct field (a property): `.name`.
    Field(&'p Path<'p>, &'p str),
    /// A Go map's key, as the strict decoder names it: `.key` (not part of Go's
    /// `UnmarshalTypeError.Field`).
    Key(&'p Path<'p>, &'p str),
    /// An `additionalProperties` key, as apiextensions' pruning names it: `[key]`.
    Entry(&'p Path<'p>, &'p str),
    /// An array index: `[i]`.
    Index(&'p Path<'p>, usize),
}

impl Path<'_> {
    /// The path as upstream's strict decoder and pruning print it:
    /// `spec.template.spec.containers[0].foo`, `spec.map[key].bar`.
    pub(crate) fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        out
    }

    fn render_into(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Field(p, n) | Path::Key(p, n) => {
                p.render_into(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Path::Entry(p, k) => {
                p.render_into(out);
                out.push('[');
                out.push_str(k);
                out.push(']');
            }
            Path::Index(p, i) => {
                p.render_into(out);
                let _ = write!(out, "[{i}]");
            }
        }
    }

    /// Go's `UnmarshalTypeError.Field`: the struct fields only, dotted.
    pub(crate) fn go(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Field(p, n) => {
                p.go(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(n);
            }
            Path::Key(p, _) | Path::Entry(p, _) | Path::Index(p, _) => p.go(out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Path;

    #[test]
    fn renders_as_upstream_prints_paths() {
        let spec = Path::Field(&Path::Root, "spec");
        let containers = Path::Field(&spec, "containers");
        let first = Path::Index(&containers, 0);
        let foo = Path::Field(&first, "foo");
        assert_eq!(foo.render(), "spec.containers[0].foo");
        let mut go = String::new();
        foo.go(&mut go);
        assert_eq!(go, "spec.containers.foo");
        let labels = Path::Key(&spec, "app");
        assert_eq!(labels.render(), "spec.app");
        let entry = Path::Field(&Path::Entry(&spec, "k"), "bar");
        assert_eq!(entry.render(), "spec[k].bar");
        assert_eq!(Path::Index(&Path::Root, 2).render(), "[2]");
        assert_eq!(Path::Root.render(), "");
    }
}
