//! Writes through admission webhooks: the async entries the HTTP layer takes for creates,
//! updates, patches (apply included), subresource writes (`status`, `scale`) and deletes
//! when any Mutating or ValidatingWebhookConfiguration is stored. Without one they are the
//! plain synchronous calls, after one map lookup per kind of configuration.
//!
//! A webhook call is a network round trip and never runs under the store's lock, so a write
//! is done as upstream's `GuaranteedUpdate` does it, optimistically:
//! 1. the write is computed as a dry run (decoding, defaulting, validation, policies), which
//!    answers the object as it would be stored, and, for an update, the stored object it was
//!    computed from is read with it (their resourceVersions must agree, else it starts again);
//! 2. the mutating webhooks are called on that object, outside the lock (their JSON patches
//!    applied in turn);
//! 3. when they changed it, the patched object is validated again (another dry run: the
//!    exact object, with the managed fields step 1 computed; fields a patch added that the
//!    kind does not declare are dropped silently, as upstream's decoding of the patched
//!    object drops them, whatever the request's `fieldValidation`);
//! 4. the validating webhooks are called on the final object;
//! 5. the final object is committed, exactly, with the resourceVersion step 1 read as its
//!    precondition; a conflict (another write came in between) starts again from step 1, up
//!    to [`ATTEMPTS`] times, as `GuaranteedUpdate` retries. A create conflicts only by name
//!    (409 AlreadyExists, answered as is).
//!
//! A delete reads the object, calls the webhooks with it as `oldObject`, and deletes it with
//! its resourceVersion as precondition (unless the request names one), retrying the same way.
//! A delete collection admits every selected object's delete before deleting the collection.
//! Warnings of every step are answered once each (upstream's warning recorder deduplicates
//! them too).

use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::admit::{self, Webhooks};
use super::handle::Storage;
use super::options::{DeleteOptions, FieldValidation, ListOptions, PatchType, WriteOptions};
use super::{commit, meta, scale};
use crate::admission::webhook::{self, Caller, Request};
use crate::admission::{Attributes, Operation};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::webhook_client;

/// How many times a write is tried before its conflict is answered.
const ATTEMPTS: usize = 8;

/// A write as the HTTP layer received it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Write<'a> {
    /// POST of `body`.
    Create(&'a Value),
    /// PUT of `body` to `name` (or its subresource).
    Update(&'a str, Option<&'a str>, &'a Value),
    /// PATCH (apply included) of `name` (or its subresource).
    Patch(&'a str, Option<&'a str>, PatchType, &'a [u8]),
}

impl Write<'_> {
    fn name(&self) -> Option<&str> {
        match self {
            Write::Create(_) => None,
            Write::Update(n, ..) | Write::Patch(n, ..) => Some(n),
        }
    }

    fn subresource(&self) -> Option<&str> {
        match self {
            Write::Create(_) => None,
            Write::Update(_, s, _) | Write::Patch(_, s, ..) => *s,
        }
    }
}

/// Calls webhooks through [`webhook_client`], resolving `service` references in `snapshot`.
struct Https<'a>(&'a admit::Snapshot);

impl Caller for Https<'_> {
    fn call<'a>(
        &'a self,
        client_config: &'a Value,
        body: &'a Value,
        timeout: Duration,
    ) -> BoxFuture<'a, Result<Value, String>> {
        Box::pin(async move {
            let target = webhook_client::resolve(client_config, self.0)?;
            webhook_client::post_json(&target, body, timeout)
                .await
                .map_err(|e| match e {
                    webhook_client::CallError::Timeout => {
                        format!("Post \"{}\": context deadline exceeded", target.url)
                    }
                    e => e.to_string(),
                })
        })
    }
}

/// Adds `warnings` to `to`, each once.
fn merge(to: &super::options::Warnings, seen: &mut Vec<String>, warnings: Vec<String>) {
    for w in warnings {
        if !seen.contains(&w) {
            seen.push(w.clone());
            to.push(w);
        }
    }
}

impl Storage {
    /// The admission webhooks configured now (`None` when there are none).
    pub(crate) fn webhooks(&self) -> Option<Webhooks> {
        admit::webhooks(&self.state.lock())
    }

    /// The write without webhooks.
    fn plain(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        write: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        match write {
            Write::Create(body) => self
                .create_shared(res, namespace, body.clone(), opts)
                .map(std::sync::Arc::unwrap_or_clone),
            Write::Update(name, sub, body) => {
                self.update(res, namespace, name, sub, body.clone(), opts)
            }
            Write::Patch(name, sub, patch_type, body) => {
                self.patch(res, namespace, name, sub, patch_type, body, opts)
            }
        }
    }

    /// Stores `obj` exactly as computed (its managed fields included): a create when `old`
    /// is `None`, else an update of `name`'s `sub` with `old`'s resourceVersion as
    /// precondition.
    #[allow(clippy::too_many_arguments)]
    fn commit_exact(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        sub: Option<&str>,
        mut obj: Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let managed = obj
            .pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Null);
        match old {
            None => {
                meta::set_meta(&mut obj, "resourceVersion", Value::Null);
                self.with(res, |st, res| {
                    commit::create_with(st, res, namespace, obj, opts, Some(managed))
                        .map(std::sync::Arc::unwrap_or_clone)
                })
            }
            Some(old) => {
                let rv = meta::resource_version(old).to_string();
                meta::set_meta(&mut obj, "resourceVersion", Value::from(rv));
                self.with(res, |st, res| match sub {
                    Some("scale") => scale::update(st, res, namespace, name, obj, opts, None),
                    _ => {
                        commit::update_with(st, res, namespace, name, sub, obj, opts, Some(managed))
                    }
                })
            }
        }
    }

    /// A create, update or patch through the admission webhooks (see the module docs).
    pub(crate) async fn write_hooked(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        write: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<Value, ApiError> {
        let mut seen = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(hooks) = self.webhooks() else {
                return self.plain(res, namespace, write, opts);
            };
            let name = write.name();
            let sub = write.subresource();
            let old = match name {
                Some(n) => match self.get(res, namespace, n, sub) {
                    Ok(o) => Some(o),
                    // An apply creates what does not exist; other writes answer the 404.
                    Err(e) if e.code == 404 => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            let dry = WriteOptions {
                dry_run: true,
                warnings: Default::default(),
                ..opts.clone()
            };
            let first = self.plain(res, namespace, write, &dry)?;
            merge(&opts.warnings, &mut seen, dry.warnings.take());
            if let Some(old) = &old
                && meta::resource_version(old) != meta::resource_version(&first)
            {
                // Written in between: computed from another version than the one read.
                if attempt < ATTEMPTS {
                    continue;
                }
                return Err(ApiError::conflict(
                    &res.group_resource(),
                    meta::name(old),
                    "the object has been modified; please apply your changes to the latest version and try again",
                ));
            }
            let operation = if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            };
            let obj_name = meta::name(&first).to_string();
            let obj_ns = meta::meta_str(&first, "namespace")
                .or(namespace)
                .unwrap_or("")
                .to_string();
            let options =
                webhook::options(operation, opts.dry_run, opts.field_manager.as_deref(), None);
            let kind = if sub == Some("scale") {
                "Scale"
            } else {
                res.kind.as_str()
            };
            let req = Request {
                attrs: Attributes {
                    operation,
                    group: &res.group,
                    version: &res.version,
                    kind,
                    resource: &res.plural,
                    subresource: sub.unwrap_or(""),
                    namespaced: res.namespaced,
                    namespace: if res.namespaced { &obj_ns } else { "" },
                    name: &obj_name,
                    object: None,
                    old_object: None,
                    dry_run: opts.dry_run,
                    user: opts.user.as_deref().unwrap_or(&crate::admission::ADMIN),
                },
                options: &options,
            };
            if req.attrs.is_exempt() {
                return self.plain(res, namespace, write, opts);
            }
            let caller = Https(&hooks.snapshot);
            let mut object = Some(first);
            let (warnings, changed) = webhook::mutate(
                &hooks.mutating,
                req,
                &mut object,
                old.as_ref(),
                &hooks.snapshot,
                &caller,
            )
            .await?;
            merge(&opts.warnings, &mut seen, warnings);
            let mut object = object.unwrap_or_default();
            let target = name.unwrap_or(&obj_name);
            if changed {
                // The patched object is validated (and admitted by policies) again.
                let check = WriteOptions {
                    dry_run: true,
                    warnings: Default::default(),
                    field_validation: FieldValidation::Ignore,
                    ..opts.clone()
                };
                object =
                    self.commit_exact(res, namespace, target, sub, object, old.as_ref(), &check)?;
                merge(&opts.warnings, &mut seen, check.warnings.take());
            }
            let warnings = webhook::validate(
                &hooks.validating,
                req,
                Some(&object),
                old.as_ref(),
                &hooks.snapshot,
                &caller,
            )
            .await?;
            merge(&opts.warnings, &mut seen, warnings);
            if opts.dry_run {
                return Ok(object);
            }
            let done = WriteOptions {
                warnings: Default::default(),
                field_validation: FieldValidation::Ignore,
                ..opts.clone()
            };
            match self.commit_exact(res, namespace, target, sub, object, old.as_ref(), &done) {
                Err(e) if e.code == 409 && e.reason == "Conflict" && attempt < ATTEMPTS => continue,
                answer => {
                    merge(&opts.warnings, &mut seen, done.warnings.take());
                    return answer;
                }
            }
        }
    }

    /// A delete through the admission webhooks (see the module docs).
    pub(crate) async fn delete_hooked(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let mut seen = Vec::new();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(hooks) = self.webhooks() else {
                return self.delete(res, namespace, name, opts);
            };
            let old = self.get(res, namespace, name, None)?;
            // Refused before any webhook is called when the delete itself cannot be done.
            let dry = DeleteOptions {
                dry_run: true,
                warnings: Default::default(),
                ..opts.clone()
            };
            self.delete(res, namespace, name, &dry)?;
            self.admit_delete(&hooks, res, name, &old, opts, &mut seen)
                .await?;
            let mut done = DeleteOptions {
                warnings: Default::default(),
                ..opts.clone()
            };
            let ours = done
                .precondition_resource_version
                .as_deref()
                .is_none_or(str::is_empty);
            if ours {
                done.precondition_resource_version = Some(meta::resource_version(&old).to_string());
            }
            match self.delete(res, namespace, name, &done) {
                Err(e) if ours && e.code == 409 && attempt < ATTEMPTS => continue,
                answer => {
                    merge(&opts.warnings, &mut seen, done.warnings.take());
                    return answer;
                }
            }
        }
    }
    /// Runs the webhooks on the delete of `old` (`name`); the error refuses it.
    async fn admit_delete(
        &self,
        hooks: &Webhooks,
        res: &ResourceInfo,
        name: &str,
        old: &Value,
        opts: &DeleteOptions,
        seen: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let obj_ns = meta::meta_str(old, "namespace").unwrap_or("").to_string();
        let options = webhook::options(
            Operation::Delete,
            opts.dry_run,
            None,
            opts.propagation_policy.as_deref(),
        );
        let req = Request {
            attrs: Attributes {
                operation: Operation::Delete,
                group: &res.group,
                version: &res.version,
                kind: &res.kind,
                resource: &res.plural,
                subresource: "",
                namespaced: res.namespaced,
                namespace: &obj_ns,
                name,
                object: None,
                old_object: None,
                dry_run: opts.dry_run,
                user: opts.user.as_deref().unwrap_or(&crate::admission::ADMIN),
            },
            options: &options,
        };
        if req.attrs.is_exempt() {
            return Ok(());
        }
        let caller = Https(&hooks.snapshot);
        let mut none = None;
        let (warnings, _) = webhook::mutate(
            &hooks.mutating,
            req,
            &mut none,
            Some(old),
            &hooks.snapshot,
            &caller,
        )
        .await?;
        merge(&opts.warnings, seen, warnings);
        let warnings = webhook::validate(
            &hooks.validating,
            req,
            None,
            Some(old),
            &hooks.snapshot,
            &caller,
        )
        .await?;
        merge(&opts.warnings, seen, warnings);
        Ok(())
    }

    /// A delete collection through the admission webhooks: every selected object's delete
    /// is admitted (the stored object as `oldObject`) before any is deleted, as the plain
    /// delete collection admits policies; then the collection is deleted. An object that
    /// comes into the selection while the webhooks are called is deleted without them.
    pub(crate) async fn delete_collection_hooked(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Value, ApiError> {
        let Some(hooks) = self.webhooks() else {
            return self.delete_collection(res, namespace, list, opts);
        };
        let all = ListOptions {
            limit: None,
            continue_token: None,
            ..list.clone()
        };
        let selected = self.list(res, namespace, &all)?;
        let mut seen = Vec::new();
        for old in selected["items"].as_array().into_iter().flatten() {
            let name = meta::name(old).to_string();
            self.admit_delete(&hooks, res, &name, old, opts, &mut seen)
                .await?;
        }
        self.delete_collection(res, namespace, list, opts)
    }
}
