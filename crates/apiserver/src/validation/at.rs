//! A field path kept on the stack while validating and printed (as [`super::Path`] prints
//! paths, `spec.containers[0].ports[1].name`) only when an error is reported: validators run on
//! every write, and a valid object should cost no allocation for paths it never prints.

use std::fmt::{self, Write};

/// One step of a path.
#[derive(Clone, Copy, Debug)]
enum Step<'a> {
    /// A struct field: `.name`.
    Field(&'a str),
    /// A list item: `[3]`.
    Index(usize),
    /// A map entry: `[cpu]`.
    Key(&'a str),
}

/// A path under validation: a step and the path it extends.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    parent: Option<&'a At<'a>>,
    step: Step<'a>,
}

impl<'a> At<'a> {
    /// A root field, e.g. `spec`.
    pub(crate) const fn root(name: &'a str) -> Self {
        At {
            parent: None,
            step: Step::Field(name),
        }
    }

    /// `self.name`.
    pub(crate) fn child(&'a self, name: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Field(name),
        }
    }

    /// `self[i]`.
    pub(crate) fn index(&'a self, i: usize) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Index(i),
        }
    }

    /// `self[key]`.
    pub(crate) fn key(&'a self, key: &'a str) -> At<'a> {
        At {
            parent: Some(self),
            step: Step::Key(key),
        }
    }

    /// The path as upstream prints it.
    pub(crate) fn path(&self) -> String {
        let mut out = String::new();
        let _ = self.write_to(&mut out);
        out
    }

    fn write_to(&self, out: &mut String) -> fmt::Result {
        if let Some(p) = self.parent {
            p.write_to(out)?;
        }
        match self.step {
            Step::Field(name) if out.is_empty() => out.push_str(name),
            Step::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Step::Index(i) => write!(out, "[{i}]")?,
            Step::Key(k) => write!(out, "[{k}]")?,
        }
        Ok(())
    }
}

impl From<&At<'_>> for String {
    fn from(at: &At<'_>) -> String {
        at.path()
    }
}

impl From<At<'_>> for String {
    fn from(at: At<'_>) -> String {
        at.path()
    }
}

#[cfg(test)]
mod tests {
    use super::At;

    #[test]
    fn prints_as_field_path() {
        let spec = At::root("spec");
        let cs = spec.child("containers");
        let c = cs.index(0);
        let res = c.child("resources");
        let lim = res.child("limits");
        assert_eq!(
            lim.key("cpu").path(),
            "spec.containers[0].resources.limits[cpu]"
        );
        assert_eq!(At::root("").child("data").path(), "data");
    }
}
