//! Webhooks through both halves at once: this process's webhook server (a
//! [`Manager`] with a [`WebhookBuilder`]: a defaulter, a validator and a hub-and-spoke
//! conversion) installed into the test environment's embedded API server with
//! [`Running::install_webhooks`](controller_runtime::envtest::Running::install_webhooks), and
//! the real `kubectl` as the client.
//!
//! The kind, `Book` in `e2e.crt.dev`, is served at `v1` and `v2`; `v2` is stored and is the hub.
//! `v1` calls the book's title `title`, `v2` calls it `name`, so a conversion shows in what
//! each version reads. The admission webhooks are registered for the hub (`v2`); the API
//! server's `matchPolicy: Equivalent` sends them writes made at `v1` too, converted.
//!
//! kubectl must be on PATH: without it the test fails, unless `CRT_SKIP_KUBECTL=1` asks to skip
//! it explicitly (as the API server's kubectl tests).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::CancellationToken;
use controller_runtime::builder::WebhookBuilder;
use controller_runtime::envtest::Environment;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::webhook::BoxError;
use controller_runtime::webhook::admission::{
    Defaulter, Denial, Request, ValidationResult, Validator,
};
use controller_runtime::webhook::conversion::{Conversion, Convertible, Hub};
use kube_core::CustomResourceExt;
use kube_derive::CustomResource;
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

const GROUP: &str = "e2e.crt.dev";

mod v1 {
    use super::*;
    /// `v1`: the title is `title`.
    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "e2e.crt.dev",
        version = "v1",
        kind = "Book",
        namespaced,
        crates(kube_core = "::kube_core")
    )]
    pub struct BookSpec {
        pub title: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub copies: Option<i32>,
    }
}

mod v2 {
    use super::*;
    /// `v2`, stored and the hub: the title is `name`.
    #[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "e2e.crt.dev",
        version = "v2",
        kind = "Book",
        namespaced,
        crates(kube_core = "::kube_core")
    )]
    pub struct BookSpec {
        pub name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub copies: Option<i32>,
    }
}

impl Hub for v2::Book {}

impl Convertible<v2::Book> for v1::Book {
    fn convert_to(&self) -> Result<v2::Book, BoxError> {
        Ok(v2::Book {
            metadata: self.metadata.clone(),
            spec: v2::BookSpec {
                name: self.spec.title.clone(),
                copies: self.spec.copies,
            },
        })
    }

    fn convert_from(hub: &v2::Book) -> Result<Self, BoxError> {
        Ok(v1::Book {
            metadata: hub.metadata.clone(),
            spec: v1::BookSpec {
                title: hub.spec.name.clone(),
                copies: hub.spec.copies,
            },
        })
    }
}

/// Defaults a book's `copies` to 1; refuses a nameless book, warns about large print runs.
struct Books;

impl Defaulter<v2::Book> for Books {
    async fn default(&self, book: &mut v2::Book, _: &Request) -> Result<(), Denial> {
        book.spec.copies.get_or_insert(1);
        Ok(())
    }
}

impl Books {
    fn check(book: &v2::Book) -> ValidationResult {
        if book.spec.name.trim().is_empty() {
            return Err(Denial::new("a book needs a name").with_code(422));
        }
        if book.spec.copies.unwrap_or(0) > 100 {
            return Ok(vec![format!(
                "{} copies of {} is a large print run",
                book.spec.copies.unwrap_or(0),
                book.spec.name
            )]);
        }
        Ok(vec![])
    }
}

impl Validator<v2::Book> for Books {
    async fn validate_create(&self, book: &v2::Book, _: &Request) -> ValidationResult {
        Self::check(book)
    }

    async fn validate_update(
        &self,
        _: &v2::Book,
        book: &v2::Book,
        _: &Request,
    ) -> ValidationResult {
        Self::check(book)
    }

    async fn validate_delete(&self, book: &v2::Book, _: &Request) -> ValidationResult {
        if book.spec.copies.unwrap_or(0) > 100 {
            return Err(Denial::new(format!(
                "{} is a best seller: keep it",
                book.spec.name
            )));
        }
        Ok(vec![])
    }
}

/// kubectl against the environment, with its own kubeconfig and discovery cache.
struct Kubectl {
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    /// `None` when kubectl is absent and `CRT_SKIP_KUBECTL` asks to skip.
    fn new(server: &crt_apiserver::Server) -> Option<Kubectl> {
        if std::process::Command::new("kubectl")
            .args(["version", "--client"])
            .output()
            .is_err()
        {
            if std::env::var_os("CRT_SKIP_KUBECTL").is_some() {
                eprintln!("kubectl not found on PATH: skipped, as CRT_SKIP_KUBECTL asks");
                return None;
            }
            panic!(
                "kubectl is not on PATH: this test drives the environment with the real kubectl \
                 (install kubectl, or set CRT_SKIP_KUBECTL=1 to skip it explicitly)"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        server.write_kubeconfig(&kubeconfig).unwrap();
        Some(Kubectl { kubeconfig, dir })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env_remove("KUBECONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str], stdin: Option<&str>) -> Out {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).await.unwrap();
        }
        drop(input);
        // A bound against a hang, not a speed assertion.
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} timed out"))
            .unwrap();
        Out {
            ok: output.status.success(),
            stdout: String::from_utf8_lossy(&output.stdout).into(),
            stderr: String::from_utf8_lossy(&output.stderr).into(),
        }
    }

    /// Runs kubectl and asserts success; the stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args, None).await;
        assert!(
            out.ok,
            "kubectl {args:?} failed: {}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }

    async fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all).await).unwrap()
    }

    /// Starts a long-running kubectl whose stdout accumulates in the returned buffer.
    fn spawn(&self, args: &[&str]) -> (Child, Arc<Mutex<String>>) {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let mut stdout = child.stdout.take().unwrap();
        let buffer = Arc::new(Mutex::new(String::new()));
        let sink = buffer.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                sink.lock().push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        (child, buffer)
    }
}

/// Waits until `buffer` satisfies `done` (a bound against a hang, not a speed assertion).
async fn wait_for(buffer: &Mutex<String>, what: &str, done: impl Fn(&str) -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(60), async {
        while !done(&buffer.lock()) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "{what}: saw {}", buffer.lock());
}

/// A book's manifest at `version`, its title in that version's field.
fn book(version: &str, name: &str, title: &str, copies: Option<i32>) -> String {
    let field = if version == "v1" { "title" } else { "name" };
    let copies = copies
        .map(|c| format!("\n  copies: {c}"))
        .unwrap_or_default();
    format!(
        "apiVersion: {GROUP}/{version}\nkind: Book\nmetadata:\n  name: {name}\n  \
         namespace: default\nspec:\n  {field}: {title:?}{copies}\n"
    )
}

/// The value of the counter `controller_runtime_webhook_requests_total{webhook, code}` in the
/// manager's registry (0 when absent).
fn requests_total(mgr: &Manager, webhook: &str, code: u16) -> u64 {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &mgr.registry().lock()).unwrap();
    let series = format!(
        "controller_runtime_webhook_requests_total{{webhook=\"{webhook}\",code=\"{code}\"}} "
    );
    text.lines()
        .find_map(|line| line.strip_prefix(&series))
        .map_or(0, |value| value.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_goes_through_the_managers_webhooks_for_admission_and_conversion() {
    let crd = kube_core::crd::merge_crds(vec![v1::Book::crd(), v2::Book::crd()], "v2").unwrap();
    let env = Environment::new()
        .use_existing_cluster(false)
        .crd_object(crd)
        .start()
        .await
        .unwrap();
    let Some(k) = Kubectl::new(env.server().unwrap()) else {
        return;
    };
    let mgr = Manager::new(
        env.client(),
        ManagerOptions::default()
            .with_metrics_bind_address(BindAddress::Disabled)
            .with_webhook_server(env.webhook_options().unwrap()),
    )
    .unwrap();
    WebhookBuilder::new(&mgr)
        .for_::<v2::Book>()
        .with_defaulter(Books)
        .with_validator(Books)
        .with_conversion(Conversion::new().with_spoke::<v1::Book>())
        .complete()
        .unwrap();
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    let _stop = ctx.clone().drop_guard();
    mgr.webhook_server().listening().await.unwrap();
    env.install_webhooks(mgr.webhook_server()).await.unwrap();
    let (mutate, validate) = (
        "/mutate-e2e-crt-dev-v2-book",
        "/validate-e2e-crt-dev-v2-book",
    );
    assert_eq!(
        mgr.webhook_server().paths(),
        ["/convert", mutate, validate],
        "the paths the configurations name"
    );

    // The validator's denial reaches kubectl with its message, and kubectl fails.
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v2", "nameless", " ", None)),
        )
        .await;
    assert!(!out.ok, "a nameless book is refused: {}", out.stdout);
    assert!(
        out.stderr
            .contains("denied the request: a book needs a name"),
        "{}",
        out.stderr
    );
    // At v1 too: the API server converts the object to v2 through /convert for the webhook.
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v1", "nameless", "", None)),
        )
        .await;
    assert!(!out.ok, "a nameless book is refused at v1: {}", out.stdout);
    assert!(
        out.stderr
            .contains("denied the request: a book needs a name"),
        "{}",
        out.stderr
    );
    let out = k
        .run(&["get", "books.v2.e2e.crt.dev", "nameless"], None)
        .await;
    assert!(!out.ok && out.stderr.contains("NotFound"), "{}", out.stderr);

    // A warning of the validator is printed by kubectl; the write goes through.
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v2", "atlas", "Atlas", Some(500))),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("book.e2e.crt.dev/atlas created"),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr
            .contains("Warning: 500 copies of Atlas is a large print run"),
        "{}",
        out.stderr
    );

    // The defaulter's field shows in `kubectl get -o yaml`, at the version applied (v1, so
    // the mutation went v1 → v2 → patched → v1 and was stored at v2).
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v1", "dune", "Dune", None)),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    let yaml = k
        .ok(&["get", "books.v1.e2e.crt.dev", "dune", "-o", "yaml"])
        .await;
    assert!(yaml.contains("copies: 1"), "{yaml}");
    assert!(yaml.contains("title: Dune"), "{yaml}");

    // Each version reads the object in its own shape.
    let at_v1 = k.json(&["get", "books.v1.e2e.crt.dev", "dune"]).await;
    assert_eq!(at_v1["apiVersion"], "e2e.crt.dev/v1");
    assert_eq!(
        at_v1["spec"],
        serde_json::json!({"title": "Dune", "copies": 1})
    );
    let at_v2 = k.json(&["get", "books.v2.e2e.crt.dev", "dune"]).await;
    assert_eq!(at_v2["apiVersion"], "e2e.crt.dev/v2");
    assert_eq!(
        at_v2["spec"],
        serde_json::json!({"name": "Dune", "copies": 1})
    );
    // Lists too.
    let list = k.json(&["get", "books.v1.e2e.crt.dev"]).await;
    let titles: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["spec"]["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Atlas", "Dune"]);

    // A watch at v1 sees a change made at v2, in v1's shape.
    let (mut watch, seen) = k.spawn(&[
        "get",
        "books.v1.e2e.crt.dev",
        "dune",
        "--watch",
        "-o",
        "jsonpath={.spec.title}{\"\\n\"}",
    ]);
    wait_for(&seen, "the watch lists dune first", |s| {
        s.contains("Dune\n")
    })
    .await;
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v2", "dune", "Dune Messiah", Some(2))),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    wait_for(&seen, "the watch at v1 sees the change at v2", |s| {
        s.contains("Dune Messiah\n")
    })
    .await;
    watch.kill().await.unwrap();

    // An update at v1 round-trips: read back at v2, in v2's field.
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v1", "dune", "Children of Dune", Some(3))),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    let at_v2 = k.json(&["get", "books.v2.e2e.crt.dev", "dune"]).await;
    assert_eq!(
        at_v2["spec"],
        serde_json::json!({"name": "Children of Dune", "copies": 3})
    );
    // An update at v1 is validated too, after conversion.
    let out = k
        .run(
            &[
                "patch",
                "books.v1.e2e.crt.dev",
                "dune",
                "--type=merge",
                "-p",
                r#"{"spec":{"title":""}}"#,
            ],
            None,
        )
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(out.stderr.contains("a book needs a name"), "{}", out.stderr);

    // Server-side apply at v1 goes through the same webhooks: defaulted, stored at v2.
    let out = k
        .run(
            &["apply", "--server-side", "-f", "-"],
            Some(&book("v1", "emma", "Emma", None)),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    let at_v2 = k.json(&["get", "books.v2.e2e.crt.dev", "emma"]).await;
    assert_eq!(
        at_v2["spec"],
        serde_json::json!({"name": "Emma", "copies": 1})
    );
    // A server-side dry run is admitted (the webhooks declare no side effects): refused when
    // invalid, nothing stored when valid.
    let out = k
        .run(
            &["apply", "--dry-run=server", "-f", "-"],
            Some(&book("v1", "ghost", "", None)),
        )
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(out.stderr.contains("a book needs a name"), "{}", out.stderr);
    let out = k
        .run(
            &["apply", "--dry-run=server", "-o", "json", "-f", "-"],
            Some(&book("v1", "ghost", "Ghost", None)),
        )
        .await;
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    let dry: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        dry["spec"],
        serde_json::json!({"title": "Ghost", "copies": 1})
    );
    let out = k.run(&["get", "books.v2.e2e.crt.dev", "ghost"], None).await;
    assert!(!out.ok && out.stderr.contains("NotFound"), "{}", out.stderr);

    // A delete at v1 is validated with the object deleted, converted to v2.
    let out = k
        .run(&["delete", "books.v1.e2e.crt.dev", "atlas"], None)
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains("Atlas is a best seller: keep it"),
        "{}",
        out.stderr
    );
    k.ok(&["delete", "books.v1.e2e.crt.dev", "emma"]).await;
    let list = k.json(&["get", "books.v2.e2e.crt.dev"]).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["atlas", "dune"]);

    // The runtime's webhook metrics counted the calls, in the manager's registry.
    for path in [mutate, validate, "/convert"] {
        assert!(requests_total(&mgr, path, 200) > 0, "{path} counted");
    }

    ctx.cancel();
    running.await.unwrap().unwrap();

    // The webhook server is down: the generated failurePolicy `Fail` refuses the write, and a
    // read at the version not stored cannot be converted.
    let out = k
        .run(
            &["apply", "-f", "-"],
            Some(&book("v2", "ulysses", "Ulysses", None)),
        )
        .await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains("failed calling webhook"),
        "{}",
        out.stderr
    );
    let out = k.run(&["get", "books.v1.e2e.crt.dev", "dune"], None).await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(out.stderr.contains("conversion webhook"), "{}", out.stderr);
    env.stop().await.unwrap();
}
