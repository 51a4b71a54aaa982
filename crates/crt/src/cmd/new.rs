//! `crt new NAME`: writes a ready operator crate, the repository's operator template
//! (`templates/operator`, embedded into `crt` when it is built) under the name, API group and
//! kind given.
//!
//! The template is a complete operator for one custom resource, `Memo` in group `example.com`,
//! in a crate named `memo-operator` whose ServiceAccount runs in namespace
//! `memo-operator-system`. Writing
//! it under other names is one pass over every file (paths included) that replaces, at each
//! position, the longest of these words that starts there:
//!
//! | template | written |
//! | --- | --- |
//! | `memo-operator`, `memo_operator` | the crate's name (so `NAME-system` names the namespace), and its Rust form (`-` becomes `_`) |
//! | `example.com` | the API group |
//! | `Memos`, `memos` | the kind's plural (as `#[derive(CustomResource)]` forms it), and in lower case |
//! | `Memo`, `memo` | the kind, and in lower case |
//!
//! A word is replaced where it starts a word and does not go on in lower case: `MemoSpec` and
//! `memo_operator` are the template's, `memory` is not. One pass, so a replacement is never
//! replaced again (a crate named `memo-tools` keeps its name). The controller-runtime dependency is the one thing not taken from the template: a
//! path to the controller-runtime-rs checkout `crt` was built from (or `--path`), or a
//! published version (`--controller-runtime-version`).
//!
//! `crt new --api GROUP/VERSION/KIND [--dir DIR]` adds a kind to a crate `crt new` wrote
//! (DIR, default `.`), as kubebuilder's `create api` does: `src/KIND.rs` (the custom resource,
//! with a status, and a controller whose reconcile marks it ready: the place to write what it
//! should do), `tests/KIND.rs` (the controller on the test environment), and the lines that
//! wire them in: `pub mod KIND;` in `src/lib.rs`, its CRD in `manifests::crds`, its controller
//! in `src/main.rs`, and its rules in `config/rbac/role.yaml` (KIND in lower case). It refuses
//! a kind the crate has, and a crate it does not recognise, before writing anything.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

mod template {
    include!(concat!(env!("OUT_DIR"), "/template.rs"));
}

/// The template's dependency on controller-runtime, as its Cargo.toml writes it (twice: the
/// dependency and the dev-dependency with `envtest`).
const TEMPLATE_DEPENDENCY: &str = "path = \"../../crates/controller-runtime\"";

/// Arguments of `crt new`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The crate's name, also its binary's and its ServiceAccount's (its namespace is
    /// NAME-system): lowercase letters, digits and '-', starting with a letter.
    #[arg(required_unless_present = "api")]
    pub name: Option<String>,
    /// The directory to write the crate into (default: ./NAME); it must not exist or be empty.
    /// With --api, the crate to add the kind to (default: .).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Add a kind, GROUP/VERSION/KIND (acme.io/v1beta1/CronTab), with its controller and test
    /// to the crate `crt new` wrote in --dir, instead of writing a crate.
    #[arg(long, conflicts_with_all = ["name", "controller_runtime_version", "path"])]
    pub api: Option<String>,
    /// The custom resource's API group (a DNS subdomain with at least one dot).
    #[arg(long, default_value = "example.com")]
    pub group: String,
    /// The custom resource's kind (UpperCamelCase).
    #[arg(long, default_value = "Memo")]
    pub kind: String,
    /// Depend on this published version of controller-runtime instead of a path.
    #[arg(long, conflicts_with = "path")]
    pub controller_runtime_version: Option<String>,
    /// Depend on the controller-runtime crate at this path: a controller-runtime-rs checkout,
    /// or its `crates/controller-runtime` (default: the checkout this `crt` was built from).
    #[arg(long)]
    pub path: Option<PathBuf>,
}

/// Where the generated crate takes controller-runtime from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dependency {
    /// A path dependency on the crate at this (absolute) directory.
    Path(PathBuf),
    /// A registry dependency on this version.
    Version(String),
}

impl Dependency {
    /// The inline-table fields of the dependency, as Cargo.toml writes them.
    fn toml(&self) -> String {
        match self {
            Dependency::Path(path) => format!("path = {:?}", path.display().to_string()),
            Dependency::Version(version) => format!("version = {version:?}"),
        }
    }
}

/// The names a generated crate is written under.
#[derive(Debug, Clone)]
pub struct Names {
    /// The crate's name (`my-operator`).
    pub name: String,
    /// The API group (`example.com`).
    pub group: String,
    /// The kind (`Memo`).
    pub kind: String,
}

impl Names {
    /// Checks the names, saying what is wrong with the first bad one.
    pub fn validate(&self) -> anyhow::Result<()> {
        let name = &self.name;
        // A DNS label for the ServiceAccount and the namespace (NAME-system), and a Cargo
        // package name.
        let label = name.len() + "-system".len() <= 63
            && name.starts_with(|c: char| c.is_ascii_lowercase())
            && !name.ends_with('-')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !label {
            bail!(
                "invalid crate name {name:?}: lowercase letters, digits and '-', starting with a \
                 letter, not ending with '-', at most 56 characters"
            );
        }
        validate_group(&self.group)?;
        validate_kind(&self.kind)
    }
}

fn validate_group(group: &str) -> anyhow::Result<()> {
    {
        let subdomain = group.contains('.')
            && group.len() <= 253
            && group.split('.').all(|part| {
                !part.is_empty()
                    && !part.starts_with('-')
                    && !part.ends_with('-')
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            });
        if !subdomain {
            bail!(
                "invalid API group {group:?}: a lowercase DNS subdomain with at least one dot \
                 (example.com)"
            );
        }
    }
    Ok(())
}

fn validate_kind(kind: &str) -> anyhow::Result<()> {
    if !kind.starts_with(|c: char| c.is_ascii_uppercase())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        bail!("invalid kind {kind:?}: UpperCamelCase letters and digits (Memo, CronTab)");
    }
    let lower = kind.to_ascii_lowercase();
    if RUST_KEYWORDS.contains(&lower.as_str()) || TEMPLATE_NAMES.contains(&kind) {
        bail!(
            "invalid kind {kind:?}: the operator's code would not compile with it (a Rust \
             keyword, or a name the template already uses)"
        );
    }
    Ok(())
}

impl Names {
    /// The (template word, replacement) pairs, longest template word first.
    fn replacements(&self) -> Vec<(&'static str, String)> {
        let lower = self.kind.to_ascii_lowercase();
        vec![
            ("memo-operator", self.name.clone()),
            ("memo_operator", self.name.replace('-', "_")),
            ("example.com", self.group.clone()),
            ("Memos", plural(&self.kind)),
            ("memos", plural(&lower)),
            ("Memo", self.kind.clone()),
            ("memo", lower),
        ]
    }

    /// `text` with every template word replaced, in one pass.
    pub fn substitute(&self, text: &str) -> String {
        let replacements = self.replacements();
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        let mut previous: Option<char> = None;
        'outer: while !rest.is_empty() {
            if !previous.is_some_and(|c| c.is_ascii_alphanumeric()) {
                for (from, to) in &replacements {
                    if let Some(after) = rest.strip_prefix(from)
                        && !after.starts_with(|c: char| c.is_ascii_lowercase())
                    {
                        out.push_str(to);
                        previous = from.chars().last();
                        rest = after;
                        continue 'outer;
                    }
                }
            }
            let c = rest.chars().next().expect("not empty");
            out.push(c);
            previous = Some(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

/// The plural `#[derive(CustomResource)]` gives a kind (kube-derive's rule): `-es` after s, x,
/// z, ch and sh; `y` after a consonant becomes `ies`; otherwise `-s`.
pub fn plural(word: &str) -> String {
    if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|end| word.ends_with(end))
    {
        return format!("{word}es");
    }
    if let Some(stem) = word.strip_suffix('y')
        && stem
            .chars()
            .last()
            .is_some_and(|c| !matches!(c, 'a' | 'e' | 'i' | 'o' | 'u'))
    {
        return format!("{stem}ies");
    }
    format!("{word}s")
}

/// Rust's keywords, strict and reserved: a kind whose lower case is one of them cannot name
/// the template's variables.
const RUST_KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
    "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro", "override",
    "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Types the template's code already names: a kind of the same name would clash with them.
const TEMPLATE_NAMES: &[&str] = &[
    "Action",
    "Arc",
    "Client",
    "ConfigMap",
    "Context",
    "Error",
    "Event",
    "Manager",
    "ObjectKey",
    "ObjectMeta",
    "OperationResult",
];

/// The files of the crate `names` describes, depending on controller-runtime as `dependency`
/// says: (path relative to the crate's directory, contents), in the template's order.
pub fn render(names: &Names, dependency: &Dependency) -> anyhow::Result<Vec<(String, String)>> {
    if template::FILES.is_empty() {
        bail!(
            "this crt was built without the operator template: build it from a \
             controller-runtime-rs checkout (cargo install --path crates/crt)"
        );
    }
    let mut files = Vec::new();
    for (path, text) in template::FILES {
        // The lock file pins the path packages' versions; a registry dependency resolves anew.
        if *path == "Cargo.lock" && matches!(dependency, Dependency::Version(_)) {
            continue;
        }
        let mut text = names.substitute(text);
        if *path == "Cargo.toml" {
            if !text.contains(TEMPLATE_DEPENDENCY) {
                bail!("the template's Cargo.toml no longer has {TEMPLATE_DEPENDENCY}");
            }
            text = text.replace(TEMPLATE_DEPENDENCY, &dependency.toml());
        }
        files.push((names.substitute(path), text));
    }
    Ok(files)
}

/// The controller-runtime crate `crt new` depends on by default: the one of the checkout `crt`
/// was built from, when it is still there.
fn default_dependency() -> Dependency {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../controller-runtime");
    match here.join("Cargo.toml").canonicalize() {
        Ok(manifest) => Dependency::Path(manifest.parent().expect("a file's parent").into()),
        Err(_) => Dependency::Version(env!("CARGO_PKG_VERSION").into()),
    }
}

/// The controller-runtime crate at `path`: a checkout's root or the crate's own directory.
fn path_dependency(path: &Path) -> anyhow::Result<Dependency> {
    for dir in [path.join("crates/controller-runtime"), path.to_path_buf()] {
        let manifest = dir.join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest)
            && text.contains("name = \"controller-runtime\"")
        {
            let dir = dir
                .canonicalize()
                .with_context(|| format!("resolving {}", dir.display()))?;
            return Ok(Dependency::Path(dir));
        }
    }
    bail!(
        "{} is neither a controller-runtime-rs checkout nor the controller-runtime crate",
        path.display()
    )
}

/// Runs `crt new`.
pub async fn run(args: Args) -> anyhow::Result<()> {
    if let Some(api) = &args.api {
        let dir = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
        return add_api(&dir, &Api::parse(api)?);
    }
    let name = args.name.clone().expect("clap requires NAME without --api");
    let names = Names {
        name: name.clone(),
        group: args.group,
        kind: args.kind,
    };
    names.validate()?;
    let dependency = match (&args.controller_runtime_version, &args.path) {
        (Some(version), _) => Dependency::Version(version.clone()),
        (None, Some(path)) => path_dependency(path)?,
        (None, None) => default_dependency(),
    };
    let files = render(&names, &dependency)?;
    let dir = args.dir.unwrap_or_else(|| PathBuf::from(&name));
    if let Ok(mut entries) = std::fs::read_dir(&dir)
        && entries.next().is_some()
    {
        bail!("{} exists and is not empty", dir.display());
    }
    for (path, text) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "created the operator crate {} (kind {} in {}) in {}",
        names.name,
        names.kind,
        names.group,
        dir.display()
    );
    match &dependency {
        Dependency::Path(path) => println!("controller-runtime: path {}", path.display()),
        Dependency::Version(version) => println!("controller-runtime: version {version}"),
    }
    println!("next: cd {} && cargo test", dir.display());
    Ok(())
}

/// A kind `crt new --api` adds: `GROUP/VERSION/KIND`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api {
    /// The API group (`acme.io`).
    pub group: String,
    /// The version (`v1`, `v1beta1`).
    pub version: String,
    /// The kind (`CronTab`).
    pub kind: String,
}

impl Api {
    /// Parses and checks `GROUP/VERSION/KIND`.
    pub fn parse(spec: &str) -> anyhow::Result<Api> {
        let parts: Vec<&str> = spec.split('/').collect();
        let [group, version, kind] = parts[..] else {
            bail!("invalid --api {spec:?}: GROUP/VERSION/KIND (acme.io/v1/CronTab)");
        };
        validate_group(group)?;
        // Kubernetes' version names: v1, v2beta3, v1alpha1.
        let version_ok = version.strip_prefix('v').is_some_and(|rest| {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let (major, level) = rest.split_at(digits);
            !major.is_empty()
                && !major.starts_with('0')
                && (level.is_empty()
                    || ["alpha", "beta"].iter().any(|l| {
                        level.strip_prefix(l).is_some_and(|n| {
                            !n.is_empty()
                                && !n.starts_with('0')
                                && n.chars().all(|c| c.is_ascii_digit())
                        })
                    }))
        });
        if !version_ok {
            bail!("invalid version {version:?}: v1, v2beta1, v1alpha1, ...");
        }
        validate_kind(kind)?;
        Ok(Api {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        })
    }

    /// The kind's module, file and variable name: the kind in lower case.
    pub fn module(&self) -> String {
        self.kind.to_ascii_lowercase()
    }

    /// `text` with the kind template's placeholders filled in.
    fn fill(&self, text: &str, krate: &str) -> String {
        text.replace("__CRATE__", &krate.replace('-', "_"))
            .replace("__GROUP__", &self.group)
            .replace("__VERSION__", &self.version)
            .replace("__PLURAL__", &plural(&self.module()))
            .replace("__KIND__", &self.kind)
            .replace("__MODULE__", &self.module())
    }
}

/// The module `crt new --api` writes for a kind.
const API_MODULE: &str = r#"//! The `__KIND__` custom resource (`__GROUP__/__VERSION__`) and its controller, added by
//! `crt new --api`. The reconcile marks a __KIND__ ready once it has seen its generation:
//! write what a __KIND__ should make happen in [`reconcile`].

use controller_runtime::controller::ControllerOptions;
use controller_runtime::prelude::*;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What a user asks of a __KIND__ (its fields are yours to write).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "__GROUP__",
    version = "__VERSION__",
    kind = "__KIND__",
    namespaced,
    status = "__KIND__Status"
)]
pub struct __KIND__Spec {
    /// An example field.
    pub message: String,
}

/// What the operator reports back.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct __KIND__Status {
    /// The `metadata.generation` this status describes.
    pub observed_generation: Option<i64>,
    /// Whether the __KIND__ is in the state its spec asks for.
    pub ready: bool,
}

/// Registers the __KIND__ controller with `mgr`.
pub async fn add_controller(mgr: &Manager) -> Result<(), controller_runtime::builder::Error> {
    ControllerBuilder::new(mgr)
        .for_(Input::<__KIND__>::new())
        .with_options(ControllerOptions::default().with_operations_annotations(true))
        .complete(Arc::new(mgr.client().clone()), reconcile)
        .await
}

/// Drives one __KIND__ towards its spec; the context derefs to the manager's client.
pub async fn reconcile(
    object: Arc<__KIND__>,
    ctx: ReconcileContext<Client>,
) -> Result<Action, ReconcileError> {
    let status = __KIND__Status {
        observed_generation: object.metadata.generation,
        ready: true,
    };
    if object.status.as_ref() != Some(&status) {
        let mut object = (*object).clone();
        object.status = Some(status);
        ctx.objects::<__KIND__>()
            .update_status(&object)
            .await
            .map_err(ReconcileError::new)?;
    }
    Ok(Action::done())
}
"#;

/// The test `crt new --api` writes for a kind.
const API_TEST: &str = r#"//! The __KIND__ controller on the test environment (an embedded API server with the CRD
//! installed, or with `USE_EXISTING_CLUSTER=true` the cluster `$KUBECONFIG` names).

use controller_runtime::cache::{Cache, CacheOptions};
use controller_runtime::envtest::{Environment, eventually};
use controller_runtime::prelude::*;
use __CRATE__::__MODULE__::{__KIND__, __KIND__Spec};

#[tokio::test]
async fn a___MODULE___becomes_ready() {
    let env = Environment::new()
        .crd::<__KIND__>()
        .start()
        .await
        .expect("test environment");
    let mgr = Manager::new(
        env.client(),
        ManagerOptions::default().with_metrics_bind_address(BindAddress::Disabled),
    )
    .unwrap();
    __CRATE__::__MODULE__::add_controller(&mgr).await.unwrap();
    let stop = CancellationToken::new();
    let token = stop.clone();
    tokio::spawn(async move { mgr.start(token).await });
    let _stop = stop.drop_guard();

    let client = Client::new(Cache::new(env.client(), CacheOptions::default()));
    let mut object = __KIND__::new("first", __KIND__Spec { message: "hello".into() });
    object.metadata.namespace = Some("default".into());
    client.objects::<__KIND__>().create(&object).await.unwrap();
    eventually(env.client())
        .until_object(&ObjectKey::new("default", "first"), |o: &__KIND__| {
            o.status.as_ref().is_some_and(|s| s.ready)
        })
        .await
        .unwrap();
}
"#;

/// The RBAC rules a kind's controller needs, appended to `config/rbac/role.yaml`.
const API_RULES: &str = "- apiGroups: [__GROUP__]
  resources: [__PLURAL__]
  verbs: [get, list, watch, patch]
- apiGroups: [__GROUP__]
  resources: [__PLURAL__/status]
  verbs: [update]
";

/// `text` with `insert` put right after the first `anchor`, or an error naming `file`.
fn insert_after(text: &str, anchor: &str, insert: &str, file: &str) -> anyhow::Result<String> {
    let Some(at) = text.find(anchor) else {
        bail!("{file} has no {anchor:?}: not a crate `crt new` wrote, or edited past recognition");
    };
    let at = at + anchor.len();
    Ok(format!("{}{insert}{}", &text[..at], &text[at..]))
}

/// The files `crt new --api` writes into the crate whose files `read` gives: (path, contents),
/// new and changed.
pub fn api_files(
    api: &Api,
    read: impl Fn(&str) -> anyhow::Result<String>,
) -> anyhow::Result<Vec<(String, String)>> {
    let toml = read("Cargo.toml")?;
    let krate = toml
        .lines()
        .find_map(|l| l.strip_prefix("name = \""))
        .and_then(|l| l.strip_suffix('"'))
        .context("Cargo.toml names no package")?
        .to_string();
    let module = api.module();
    let lib = read("src/lib.rs")?;
    let (module_file, test_file) = (format!("src/{module}.rs"), format!("tests/{module}.rs"));
    if read(&module_file).is_ok()
        || lib.contains(&format!("pub mod {module};"))
        || lib.contains(&format!("kind = \"{}\"", api.kind))
    {
        bail!("the crate already has a kind {} ({module_file})", api.kind);
    }
    let lib = insert_after(
        &lib,
        "pub mod manifests;\n",
        &format!("pub mod {module};\n"),
        "src/lib.rs",
    )?;
    let manifests = insert_after(
        &read("src/manifests.rs")?,
        "pub fn crds() -> Vec<CustomResourceDefinition> {\n    vec![",
        &format!("crate::{module}::{}::crd(), ", api.kind),
        "src/manifests.rs",
    )?;
    let main = read("src/main.rs")?;
    let anchor = "::add_controller(&mgr).await?;\n";
    let main = insert_after(
        &main,
        anchor,
        &format!(
            "    {}::{module}::add_controller(&mgr).await?;\n",
            krate.replace('-', "_")
        ),
        "src/main.rs",
    )?;
    let mut role = read("config/rbac/role.yaml")?;
    if !role.contains("\nrules:\n") {
        bail!("config/rbac/role.yaml has no rules: not a crate `crt new` wrote");
    }
    if !role.ends_with('\n') {
        role.push('\n');
    }
    role.push_str(&api.fill(API_RULES, &krate));
    Ok(vec![
        (module_file, api.fill(API_MODULE, &krate)),
        (test_file, api.fill(API_TEST, &krate)),
        ("src/lib.rs".into(), lib),
        ("src/manifests.rs".into(), manifests),
        ("src/main.rs".into(), main),
        ("config/rbac/role.yaml".into(), role),
    ])
}

/// Runs `crt new --api`: adds `api` to the crate in `dir`.
fn add_api(dir: &Path, api: &Api) -> anyhow::Result<()> {
    let read = |path: &str| {
        std::fs::read_to_string(dir.join(path))
            .with_context(|| format!("reading {}", dir.join(path).display()))
    };
    let files = api_files(api, read)?;
    for (path, text) in &files {
        let path = dir.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    println!(
        "added the kind {} ({}/{}) in {}",
        api.kind,
        api.group,
        api.version,
        dir.display()
    );
    println!("next: cd {} && cargo test", dir.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_specs_are_checked() {
        let api = Api::parse("acme.io/v1beta1/CronTab").unwrap();
        assert_eq!(
            (api.group.as_str(), api.version.as_str(), api.kind.as_str()),
            ("acme.io", "v1beta1", "CronTab")
        );
        assert_eq!(api.module(), "crontab");
        for (spec, why) in [
            ("acme.io/v1", "GROUP/VERSION/KIND"),
            ("acme/v1/CronTab", "invalid API group"),
            ("acme.io/1/CronTab", "invalid version"),
            ("acme.io/v0/CronTab", "invalid version"),
            ("acme.io/v1gamma1/CronTab", "invalid version"),
            ("acme.io/v1beta/CronTab", "invalid version"),
            ("acme.io/v1/cronTab", "invalid kind"),
            ("acme.io/v1/Type", "invalid kind"),
        ] {
            let err = Api::parse(spec).unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
        }
    }

    fn names(name: &str, group: &str, kind: &str) -> Names {
        Names {
            name: name.into(),
            group: group.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn plurals_follow_the_derive() {
        for (kind, want) in [
            ("memo", "memos"),
            ("policy", "policies"),
            ("day", "days"),
            ("box", "boxes"),
            ("bus", "buses"),
            ("match", "matches"),
            ("Policy", "Policies"),
        ] {
            assert_eq!(plural(kind), want, "{kind}");
        }
    }

    #[test]
    fn one_pass_never_replaces_a_replacement() {
        let n = names("memo-tools", "memo.example.com", "Policy");
        assert_eq!(
            n.substitute("memo-operator memo_operator memo-operator-system example.com"),
            "memo-tools memo_tools memo-tools-system memo.example.com"
        );
        assert_eq!(
            n.substitute("Memos memos Memo memo MemoSpec memos.example.com/index"),
            "Policies policies Policy policy PolicySpec policies.memo.example.com/index"
        );
        // Other words that start like the template's are left alone.
        assert_eq!(
            n.substitute("memory: 64Mi, memorandum, remember, a_memo_is"),
            "memory: 64Mi, memorandum, remember, a_policy_is"
        );
    }

    #[test]
    fn the_template_names_are_the_identity() {
        let n = names("memo-operator", "example.com", "Memo");
        for (_, text) in template::FILES {
            assert_eq!(&n.substitute(text), text);
        }
    }

    #[test]
    fn bad_names_are_refused_with_the_rule() {
        for (n, what) in [
            (names("My-Op", "example.com", "Memo"), "invalid crate name"),
            (names("op-", "example.com", "Memo"), "invalid crate name"),
            (names("1op", "example.com", "Memo"), "invalid crate name"),
            (names("op", "example", "Memo"), "invalid API group"),
            (names("op", "Example.com", "Memo"), "invalid API group"),
            (names("op", "example.com", "memo"), "invalid kind"),
            (names("op", "example.com", "Type"), "a Rust keyword"),
            (names("op", "example.com", "Event"), "a name the template"),
        ] {
            let err = n.validate().unwrap_err().to_string();
            assert!(err.contains(what), "{n:?}: {err}");
        }
        names("my-op2", "acme.io", "CronTab").validate().unwrap();
    }

    #[test]
    fn the_dependency_replaces_the_template_path() {
        let n = names("op", "acme.io", "Widget");
        let files = render(&n, &Dependency::Version("0.1".into())).unwrap();
        let toml = &files.iter().find(|(p, _)| p == "Cargo.toml").unwrap().1;
        assert!(
            toml.contains("controller-runtime = { version = \"0.1\" }"),
            "{toml}"
        );
        assert!(
            toml.contains("controller-runtime = { version = \"0.1\", features = [\"envtest\"] }"),
            "{toml}"
        );
        assert!(!toml.contains("path ="), "{toml}");
        assert!(files.iter().all(|(p, _)| p != "Cargo.lock"));
    }
}
