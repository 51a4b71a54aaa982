//! Manifests beside the CRDs: any objects (RBAC above all: ServiceAccounts, Roles,
//! ClusterRoles, RoleBindings, ClusterRoleBindings), read from files and directories or given
//! as objects, and installed with server-side apply (created, or updated to the manifest when
//! they exist).

use std::path::Path;

use kube_client::Api;
use kube_client::api::{DynamicObject, Patch, PatchParams};
use kube_client::core::GroupVersionKind;
use kube_client::discovery::{self, Scope};
use serde_json::Value;

use super::{Error, documents};

/// The field manager of the environment's writes.
const FIELD_MANAGER: &str = "envtest";

/// One object to install, and where it came from (for errors).
#[derive(Clone, Debug)]
pub(crate) struct Manifest {
    /// `path: document N`, or `manifest object N`.
    pub(crate) origin: String,
    pub(crate) object: Value,
}

/// Reads the manifests of `path`: a file, or a directory whose `.yaml`, `.yml` and `.json`
/// files are read in name order (not its subdirectories). Each document must be an object
/// with `apiVersion`, `kind` and `metadata.name`.
pub(crate) fn read_path(path: &Path) -> Result<Vec<Manifest>, Error> {
    let read_err = |path: &Path, source| Error::ReadManifests {
        path: path.to_path_buf(),
        source,
    };
    let mut manifests = Vec::new();
    for file in documents::files(path).map_err(|e| read_err(path, e))? {
        let text = std::fs::read_to_string(&file).map_err(|e| read_err(&file, e))?;
        manifests.extend(parse(&file, &text)?);
    }
    Ok(manifests)
}

/// The manifests `text` (the content of `path`) holds: JSON when the file ends in `.json`
/// (one document), else YAML (any number of documents; empty ones are skipped).
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<Manifest>, Error> {
    let parse_err = |document: usize, reason: String| Error::ParseManifest {
        path: path.to_path_buf(),
        document,
        reason,
    };
    let mut manifests = Vec::new();
    for (n, object) in documents::parse(path, text).map_err(|(n, e)| parse_err(n, e.to_string()))? {
        check(&object).map_err(|reason| parse_err(n, reason))?;
        manifests.push(Manifest {
            origin: format!("{}: document {n}", path.display()),
            object,
        });
    }
    Ok(manifests)
}

/// Whether `object` can be installed: an object with `apiVersion`, `kind`, `metadata.name`.
pub(crate) fn check(object: &Value) -> Result<(), String> {
    if !object.is_object() {
        return Err("not an object".into());
    }
    for (what, pointer) in [
        ("apiVersion", "/apiVersion"),
        ("kind", "/kind"),
        ("metadata.name", "/metadata/name"),
    ] {
        if object
            .pointer(pointer)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("no {what}"));
        }
    }
    Ok(())
}

/// Installs `manifests`: Namespaces first, then the others in order, each created or updated
/// by a forced server-side apply (field manager `envtest`). A namespaced object without a
/// namespace goes to `default`.
pub(crate) async fn install(
    client: &kube_client::Client,
    manifests: &[Manifest],
) -> Result<(), Error> {
    let (namespaces, others): (Vec<&Manifest>, Vec<&Manifest>) = manifests
        .iter()
        .partition(|m| m.object["kind"] == "Namespace" && m.object["apiVersion"] == "v1");
    for manifest in namespaces.into_iter().chain(others) {
        install_one(client, manifest).await?;
    }
    Ok(())
}

async fn install_one(client: &kube_client::Client, manifest: &Manifest) -> Result<(), Error> {
    let object = &manifest.object;
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (api_version, kind, name) = (text("/apiVersion"), text("/kind"), text("/metadata/name"));
    let err = |reason: String| Error::InstallManifest {
        origin: manifest.origin.clone(),
        kind: kind.clone(),
        name: name.clone(),
        reason,
    };
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let gvk = GroupVersionKind::gvk(&group, &version, &kind);
    let (resource, capabilities) = discovery::pinned_kind(client, &gvk).await.map_err(|e| {
        err(format!(
            "the API server does not serve {kind} in {api_version}: {e}"
        ))
    })?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => {
            let namespace = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .unwrap_or("default");
            Api::namespaced_with(client.clone(), namespace, &resource)
        }
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let mut body = object.clone();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        // Apply configurations carry neither: the server's values stand.
        meta.remove("resourceVersion");
        meta.remove("uid");
    }
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(&body),
    )
    .await
    .map_err(|e| err(e.to_string()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const RBAC: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: op, namespace: system}
---
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: op}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [get, list, watch]}
"#;

    #[test]
    fn every_document_is_read_naming_its_file_and_position() {
        let manifests = parse(Path::new("config/rbac.yaml"), RBAC).unwrap();
        assert_eq!(manifests.len(), 2);
        assert_eq!(manifests[0].object["kind"], "ServiceAccount");
        assert_eq!(manifests[1].origin, "config/rbac.yaml: document 3");
    }

    #[test]
    fn a_document_without_kind_or_name_is_refused_naming_it() {
        let text = format!("{RBAC}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{}}\n");
        let err = parse(Path::new("rbac.yaml"), &text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "rbac.yaml: document 4: not an installable manifest: no metadata.name"
        );
        let err = parse(Path::new("x.yaml"), "- a\n- b\n").unwrap_err();
        assert!(err.to_string().ends_with("not an object"), "{err}");
        let err = parse(Path::new("x.json"), "{").unwrap_err();
        assert!(
            matches!(err, Error::ParseManifest { document: 1, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_missing_path_is_an_error_naming_it() {
        let err = read_path(Path::new("/nonexistent/rbac")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/rbac"), "{err}");
    }
}
