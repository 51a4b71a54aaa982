//! The scenario: what a user does to a Greeting through the API, step by step, and what each
//! step must lead to. Every step waits (bounded) for its outcome, read straight from the API
//! server, and fails with what it saw last if the outcome does not come.
//!
//! With the Greeting's webhooks installed (the embedded server), step 1 leaves the message to
//! the defaulting webhook, step 2 also tries a message the validating webhook refuses, and step
//! 6 shows the validating webhook's warning on delete.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use controller_runtime::manager::Manager;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube_client::core::{CustomResourceExt, Resource, ResourceExt};
use serde_json::json;

use super::NAMESPACE;
use super::crd::{Greeting, GreetingSpec};
use super::flow::Stats;
use super::operator::{FINALIZER, GREETING_LABEL};
use super::webhook;

/// How many steps [`play`] runs (for the summary).
pub const STEPS: usize = 6;
/// The longest a step waits for its outcome.
const STEP_TIMEOUT: Duration = Duration::from_secs(30);
/// The Greeting the scenario plays with.
const NAME: &str = "hello";
/// A message the validating webhook refuses (step 2).
const BAD_MESSAGE: &str = "goodbye, world";

/// Installs the CRD (or updates it when it exists) and the demo namespace, and waits until the
/// server serves Greetings.
pub async fn install(client: &kube_client::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut crd = Greeting::crd();
    // The derive leaves listKind to the server's defaulting; the embedded server defaults it on
    // create only, so an update of the CRD (a second run on one server) would be refused.
    crd.spec
        .names
        .list_kind
        .get_or_insert_with(|| "GreetingList".into());
    let name = crd.name_any();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube_client::Error::Api(e)) if e.code == 409 => {
            let mut existing = crds.get(&name).await?;
            existing.spec = crd.spec;
            crds.replace(&name, &PostParams::default(), &existing)
                .await
                .context("updating the existing CRD")?;
        }
        Err(e) => return Err(e).context("creating the CRD"),
    }
    wait_for("the CRD is Established", || async {
        let crd = crds.get(&name).await?;
        let established = crd
            .status
            .and_then(|s| s.conditions)
            .unwrap_or_default()
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True");
        Ok(if established {
            Ok(())
        } else {
            Err("no Established=True condition yet".to_string())
        })
    })
    .await?;

    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(NAMESPACE.into());
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube_client::Error::Api(e)) if e.code == 409 => {}
        Err(e) => return Err(e).context("creating the demo namespace"),
    }
    let greetings: Api<Greeting> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for("Greetings are served", || async {
        greetings.list(&ListParams::default()).await?;
        Ok(Ok(()))
    })
    .await?;
    // A Greeting left by an earlier run on the same cluster would blur the story.
    if greetings.get_opt(NAME).await?.is_some() {
        greetings.delete(NAME, &DeleteParams::default()).await?;
        say!("   (deleted the {NAME} Greeting an earlier run left)");
    }
    say!("   ok: CRD established, namespace {NAMESPACE} ready");
    Ok(())
}

/// Waits until the operator's cache has synced both its informers (Greetings, ConfigMaps).
pub async fn wait_started(mgr: &Manager) -> anyhow::Result<()> {
    wait_for("the operator's caches sync", || async {
        let cache = mgr.cache();
        if cache.informer_count() < 2 {
            return Ok(Err(format!("{} of 2 informers", cache.informer_count())));
        }
        let ctx = tokio_util::sync::CancellationToken::new();
        let synced =
            tokio::time::timeout(Duration::from_millis(200), cache.wait_for_cache_sync(&ctx)).await;
        Ok(match synced {
            Ok(true) => Ok(()),
            _ => Err("informers not synced".to_string()),
        })
    })
    .await
}

/// The scenario's view of the cluster: the Greeting and its children, read from the server.
struct World {
    greetings: Api<Greeting>,
    configmaps: Api<ConfigMap>,
}

impl World {
    /// The children as (name, message, uid), sorted by name.
    async fn children(&self) -> anyhow::Result<Vec<(String, String, String)>> {
        let params = ListParams::default().labels(&format!("{GREETING_LABEL}={NAME}"));
        let mut out: Vec<_> = self
            .configmaps
            .list(&params)
            .await?
            .items
            .into_iter()
            .filter(|cm| cm.metadata.deletion_timestamp.is_none())
            .map(|cm| {
                let message = cm
                    .data
                    .as_ref()
                    .and_then(|d| d.get("message").cloned())
                    .unwrap_or_default();
                (cm.name_any(), message, cm.uid().unwrap_or_default())
            })
            .collect();
        out.sort();
        Ok(out)
    }

    /// `Ok(Ok(()))` once the Greeting has exactly `replicas` children with `message`, our
    /// finalizer, and a status that says so for its current generation; else what differs.
    async fn converged(
        &self,
        replicas: usize,
        message: &str,
    ) -> anyhow::Result<Result<(), String>> {
        let g = self.greetings.get(NAME).await?;
        let children = self.children().await?;
        let names: Vec<&str> = children.iter().map(|(n, _, _)| n.as_str()).collect();
        let wanted: Vec<String> = (0..replicas).map(|i| format!("{NAME}-{i}")).collect();
        if names != wanted {
            return Ok(Err(format!("children {names:?}, want {wanted:?}")));
        }
        if let Some((n, m, _)) = children.iter().find(|(_, m, _)| m != message) {
            return Ok(Err(format!("{n} says {m:?}, want {message:?}")));
        }
        if !g.finalizers().iter().any(|f| f == FINALIZER) {
            return Ok(Err(format!("no finalizer {FINALIZER}")));
        }
        let status = g.status.clone().unwrap_or_default();
        let ready = status
            .conditions
            .iter()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        if status.observed_generation != g.metadata.generation
            || status.ready_replicas != replicas as i32
            || status.replicas != replicas as i32
            || !ready
        {
            return Ok(Err(format!(
                "status {status:?} at generation {:?}",
                g.metadata.generation
            )));
        }
        Ok(Ok(()))
    }
}

/// The step running now, to name it when it fails.
static CURRENT: AtomicUsize = AtomicUsize::new(0);

/// Plays the scenario; each step prints its header, the flow it causes, and what was checked.
/// `webhooks`: the Greeting's webhooks are installed, and the steps that show them run. An
/// error names the step that failed.
pub async fn play(
    client: &kube_client::Client,
    stats: &Arc<Stats>,
    webhooks: bool,
) -> anyhow::Result<()> {
    steps(client, stats, webhooks).await.with_context(|| {
        format!(
            "scenario step {}/{STEPS} failed",
            CURRENT.load(Ordering::Relaxed)
        )
    })
}

async fn steps(
    client: &kube_client::Client,
    stats: &Arc<Stats>,
    webhooks: bool,
) -> anyhow::Result<()> {
    let world = World {
        greetings: Api::namespaced(client.clone(), NAMESPACE),
        configmaps: Api::namespaced(client.clone(), NAMESPACE),
    };
    let pp = PostParams::default();

    // With webhooks, the message is left to the defaulting webhook.
    let (header, message) = if webhooks {
        (
            format!(
                "create Greeting hello (replicas 2, no message: the defaulting webhook sets {:?})",
                webhook::DEFAULT_MESSAGE
            ),
            "",
        )
    } else {
        (
            "create Greeting hello (replicas 2, message \"hello\")".to_string(),
            "hello",
        )
    };
    step(1, &header);
    let greeting = Greeting::new(
        NAME,
        GreetingSpec {
            replicas: 2,
            message: message.into(),
        },
    );
    let created = world.greetings.create(&pp, &greeting).await?;
    if created.spec.message != "hello" {
        bail!(
            "the created Greeting came back with message {:?}, want \"hello\"",
            created.spec.message
        );
    }
    let uid = created.uid();
    wait_for("2 ConfigMaps saying \"hello\", status Ready", || {
        world.converged(2, "hello")
    })
    .await?;
    let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    wait_for("an Event about hello's ConfigMaps", || async {
        let found = events
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .any(|e| {
                e.regarding.as_ref().and_then(|r| r.uid.clone()) == uid
                    && e.reason.as_deref() == Some("ConfigMapsSynced")
            });
        Ok(if found {
            Ok(())
        } else {
            Err("no Event yet".to_string())
        })
    })
    .await?;
    settle(stats).await;
    if webhooks {
        ok("the created Greeting came back with message \"hello\", set by the defaulting webhook");
    }
    ok(
        "hello-0 and hello-1 say \"hello\"; finalizer added; status 2/2 ready, Ready=True; \
        an Event ConfigMapsSynced recorded",
    );

    let header = "change the message to \"bonjour\" (a spec change: generation 2)";
    if webhooks {
        step(2, &format!("{header}, then try {BAD_MESSAGE:?}"));
    } else {
        step(2, header);
    }
    let patch = Patch::Merge(json!({ "spec": { "message": "bonjour" } }));
    world
        .greetings
        .patch(NAME, &PatchParams::default(), &patch)
        .await?;
    wait_for("every ConfigMap says \"bonjour\"", || {
        world.converged(2, "bonjour")
    })
    .await?;
    // Bad input never reaches the operator: the validating webhook refuses it.
    let refused = if webhooks {
        let patch = Patch::Merge(json!({ "spec": { "message": BAD_MESSAGE } }));
        let refused = match world
            .greetings
            .patch(NAME, &PatchParams::default(), &patch)
            .await
        {
            Ok(_) => {
                bail!("the message {BAD_MESSAGE:?} was accepted; the validating webhook refuses it")
            }
            Err(kube_client::Error::Api(status)) => status.message,
            Err(e) => return Err(e).context(format!("setting the message {BAD_MESSAGE:?}")),
        };
        let kept = world.greetings.get(NAME).await?.spec.message;
        if kept != "bonjour" {
            bail!("after the refused patch, the message is {kept:?}, want \"bonjour\"");
        }
        Some(refused)
    } else {
        None
    };
    settle(stats).await;
    ok("both ConfigMaps say \"bonjour\"; status observedGeneration 2");
    if let Some(refused) = refused {
        ok(&format!(
            "{BAD_MESSAGE:?} is refused by the validating webhook: {refused}"
        ));
    }

    step(
        3,
        "scale up to 4 through the scale subresource, then try 11",
    );
    scale(&world, 4).await?;
    wait_for("4 ConfigMaps", || world.converged(4, "bonjour")).await?;
    let read = world.greetings.get_scale(NAME).await?;
    let status_replicas = read.status.map(|s| s.replicas);
    if status_replicas != Some(4) {
        bail!("the scale subresource reports status.replicas {status_replicas:?}, want 4");
    }
    // Bad input never reaches the operator: the CRD's schema caps replicas at 10.
    let refused = match scale(&world, 11).await {
        Ok(()) => bail!("scaling to 11 was accepted; the schema's maximum is 10"),
        Err(e) => match e.downcast_ref::<kube_client::Error>() {
            Some(kube_client::Error::Api(status)) if status.code == 422 => status.message.clone(),
            _ => return Err(e.context("scaling to 11: want a 422 Invalid")),
        },
    };
    settle(stats).await;
    ok("hello-0..hello-3 exist; the scale subresource reads replicas 4/4");
    ok(&format!(
        "scaling to 11 is refused by the schema: {refused}"
    ));

    step(4, "scale down to 1 through the scale subresource");
    scale(&world, 1).await?;
    wait_for("1 ConfigMap", || world.converged(1, "bonjour")).await?;
    settle(stats).await;
    ok("hello-1..hello-3 deleted by the operator; hello-0 remains");

    step(
        5,
        "delete the child ConfigMap hello-0 (the operator must bring it back)",
    );
    let old_uid = world
        .children()
        .await?
        .first()
        .map(|c| c.2.clone())
        .unwrap_or_default();
    world
        .configmaps
        .delete(&format!("{NAME}-0"), &DeleteParams::default())
        .await?;
    wait_for("hello-0 re-created", || async {
        let children = world.children().await?;
        match children.first() {
            Some((_, _, uid)) if *uid != old_uid => world.converged(1, "bonjour").await,
            _ => Ok(Err("hello-0 not re-created yet".to_string())),
        }
    })
    .await?;
    settle(stats).await;
    ok("hello-0 is back (a new object: new uid)");

    step(
        6,
        "delete the Greeting (the finalizer's cleanup deletes its ConfigMaps)",
    );
    let deleted_before = Stats::get(&stats.deleted);
    let warnings = delete_greeting(client, NAME).await?;
    if webhooks && warnings.is_empty() {
        bail!("deleting the Greeting got no warning; the validating webhook gives one");
    }
    wait_for("the Greeting and its ConfigMaps gone", || async {
        let left = world.children().await?;
        if !left.is_empty() {
            return Ok(Err(format!("{} ConfigMaps left", left.len())));
        }
        Ok(match world.greetings.get_opt(NAME).await? {
            None => Ok(()),
            Some(g) => Err(format!(
                "Greeting still there, finalizers {:?}",
                g.finalizers()
            )),
        })
    })
    .await?;
    if Stats::get(&stats.deleted) == deleted_before {
        bail!("the ConfigMaps went, but not through the operator's finalizer cleanup");
    }
    settle(stats).await;
    ok("cleanup deleted hello-0, the finalizer was removed, the Greeting is gone");
    for warning in warnings {
        ok(&format!(
            "the delete came back with the validating webhook's warning: {warning}"
        ));
    }
    Ok(())
}

/// Deletes the Greeting `name` as `kubectl delete` does, and returns the warnings of the answer
/// (its `Warning` headers, which kubectl prints; kube's `Api` does not surface them).
async fn delete_greeting(client: &kube_client::Client, name: &str) -> anyhow::Result<Vec<String>> {
    let request = kube_client::core::Request::new(Greeting::url_path(&(), Some(NAMESPACE)))
        .delete(name, &DeleteParams::default())
        .context("building the delete request")?;
    let response = client
        .send(request.map(kube_client::client::Body::from))
        .await
        .context("deleting the Greeting")?;
    let status = response.status();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(warning_text)
        .collect();
    if !status.is_success() {
        let body = response
            .into_body()
            .collect_bytes()
            .await
            .unwrap_or_default();
        bail!(
            "deleting the Greeting: HTTP {status}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    Ok(warnings)
}

/// The text of a `Warning` header (`299 - "text"`, RFC 7234's warn-code, agent and quoted
/// text), or the whole value when it is not shaped so.
fn warning_text(header: &str) -> String {
    let mut parts = header.splitn(3, ' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(_code), Some(_agent), Some(text))
            if text.len() >= 2 && text.starts_with('"') && text.ends_with('"') =>
        {
            text[1..text.len() - 1].replace("\\\"", "\"")
        }
        _ => header.to_string(),
    }
}

/// For `--serve`: a Greeting to play with from kubectl.
pub async fn create_for_kubectl(client: &kube_client::Client) -> anyhow::Result<()> {
    let greetings: Api<Greeting> = Api::namespaced(client.clone(), NAMESPACE);
    let greeting = Greeting::new(
        NAME,
        GreetingSpec {
            replicas: 2,
            message: "hello from crt demo".into(),
        },
    );
    greetings.create(&PostParams::default(), &greeting).await?;
    Ok(())
}

/// Sets `spec.replicas` the way `kubectl scale` does: a patch of the scale subresource.
async fn scale(world: &World, replicas: i32) -> anyhow::Result<()> {
    let patch = Patch::Merge(json!({ "spec": { "replicas": replicas } }));
    world
        .greetings
        .patch_scale(NAME, &PatchParams::default(), &patch)
        .await
        .context("patching the scale subresource")?;
    Ok(())
}

fn step(n: usize, what: &str) {
    CURRENT.store(n, Ordering::Relaxed);
    say!("== step {n}/{STEPS}: {what}");
}

fn ok(what: &str) {
    say!("   ok: {what}");
}

/// Waits until `check` says the outcome is reached (`Ok(Ok(v))`); `Ok(Err(state))` and API
/// errors mean not yet. Fails after [`STEP_TIMEOUT`] with the last state seen.
async fn wait_for<T, F, Fut>(what: &str, mut check: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Result<T, String>>>,
{
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let last = match check().await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(state)) => state,
            Err(e) => format!("error: {e:#}"),
        };
        if Instant::now() >= deadline {
            bail!("not reached within {STEP_TIMEOUT:?}: {what}; last seen: {last}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Lets the events that trail a step (the operator's own status writes, mostly) print before
/// the next step's header: waits until the pipeline has been quiet for a moment (at most 2 s).
pub async fn settle(stats: &Stats) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut seen = (Stats::get(&stats.events), Stats::get(&stats.reconciles));
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(150)).await;
        let now = (Stats::get(&stats.events), Stats::get(&stats.reconciles));
        if now == seen {
            return;
        }
        seen = now;
    }
}

#[cfg(test)]
mod tests {
    use super::warning_text;

    #[test]
    fn a_warning_header_reads_as_its_text() {
        assert_eq!(
            warning_text(r#"299 - "its 1 ConfigMap(s) go""#),
            "its 1 ConfigMap(s) go"
        );
        assert_eq!(warning_text(r#"299 - "say \"hi\"""#), r#"say "hi""#);
        assert_eq!(warning_text("not a warning"), "not a warning");
    }
}
