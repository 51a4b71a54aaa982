//! CRDs for a test environment: read from files and directories (multi-document YAML or JSON),
//! installed (created, or updated when they exist), waited for until established and served,
//! and uninstalled.

use std::path::Path;
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{DeleteParams, PostParams};
use serde_json::Value;

use super::{Error, documents};

/// How often installs and uninstalls check on the server.
const POLL_INTERVAL: Duration = Duration::from_millis(50);
const CRD_API_VERSION: &str = "apiextensions.k8s.io/v1";
const CRD_KIND: &str = "CustomResourceDefinition";

/// Reads the CRDs of `path`: a file, or a directory whose `.yaml`, `.yml` and `.json` files are
/// read in name order (not its subdirectories, as envtest). Every document must be a CRD.
pub(crate) fn read_path(path: &Path) -> Result<Vec<CustomResourceDefinition>, Error> {
    let read_err = |path: &Path, source| Error::ReadCrds {
        path: path.to_path_buf(),
        source,
    };
    let mut crds = Vec::new();
    for file in documents::files(path).map_err(|e| read_err(path, e))? {
        let text = std::fs::read_to_string(&file).map_err(|e| read_err(&file, e))?;
        crds.extend(parse(&file, &text)?);
    }
    Ok(crds)
}

/// The CRDs `text` (the content of `path`) holds.
pub(crate) fn parse(path: &Path, text: &str) -> Result<Vec<CustomResourceDefinition>, Error> {
    let parse_err = |document: usize, source: documents::ParseError| Error::ParseCrd {
        path: path.to_path_buf(),
        document,
        source,
    };
    let mut crds = Vec::new();
    for (n, document) in documents::parse(path, text).map_err(|(n, e)| parse_err(n, e))? {
        let field = |name: &str| {
            document
                .get(name)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (api_version, kind) = (field("apiVersion"), field("kind"));
        if api_version != CRD_API_VERSION || kind != CRD_KIND {
            return Err(Error::NotACrd {
                path: path.to_path_buf(),
                document: n,
                api_version,
                kind,
            });
        }
        crds.push(serde_json::from_value(document).map_err(|e| parse_err(n, e.into()))?);
    }
    Ok(crds)
}

/// Creates `crd`, or updates it to this spec when it exists; answers its name.
pub(crate) async fn install(
    api: &Api<CustomResourceDefinition>,
    mut crd: CustomResourceDefinition,
) -> Result<String, Error> {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let err = |source| Error::InstallCrd {
        name: name.clone(),
        source,
    };
    // The real server defaults these (the embedded one on create only); an update without them
    // would be refused, so they are filled in as the server would.
    let names = &mut crd.spec.names;
    names
        .singular
        .get_or_insert_with(|| names.kind.to_ascii_lowercase());
    names
        .list_kind
        .get_or_insert_with(|| format!("{}List", names.kind));
    crd.metadata.resource_version = None;
    crd.status = None;
    match api.create(&PostParams::default(), &crd).await {
        Ok(_) => return Ok(name),
        Err(kube_client::Error::Api(status)) if status.code == 409 => {}
        Err(e) => return Err(err(e)),
    }
    let mut existing = api.get(&name).await.map_err(err)?;
    let conversion = existing.spec.conversion.take();
    existing.spec = crd.spec;
    existing.spec.conversion = existing.spec.conversion.or(conversion);
    existing.metadata.labels = crd.metadata.labels.or(existing.metadata.labels);
    existing.metadata.annotations = crd.metadata.annotations.or(existing.metadata.annotations);
    api.replace(&name, &PostParams::default(), &existing)
        .await
        .map_err(err)?;
    Ok(name)
}

/// Waits until the CRD `name` has its `Established` condition `True` and discovery lists its
/// resource in every version it serves, so that clients, caches and managers can use it at once.
pub(crate) async fn wait_ready(
    client: &kube_client::Client,
    name: &str,
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let last = match readiness(client, &api, name).await {
            Ok(()) => return Ok(()),
            Err(last) => last,
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(Error::CrdNotReady {
                name: name.to_string(),
                timeout,
                last,
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `Ok` when the CRD is established and served, else what is missing.
async fn readiness(
    client: &kube_client::Client,
    api: &Api<CustomResourceDefinition>,
    name: &str,
) -> Result<(), String> {
    let crd = api
        .get(name)
        .await
        .map_err(|e| format!("reading the CRD: {e}"))?;
    let established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
    if !established {
        return Err("no Established=True condition yet".to_string());
    }
    let plural = &crd.spec.names.plural;
    for version in crd.spec.versions.iter().filter(|v| v.served) {
        let group_version = format!("{}/{}", crd.spec.group, version.name);
        let listed = match client.list_api_group_resources(&group_version).await {
            Ok(list) => list.resources.iter().any(|r| &r.name == plural),
            Err(kube_client::Error::Api(status)) if status.code == 404 => false,
            Err(e) => return Err(format!("discovery of {group_version}: {e}")),
        };
        if !listed {
            return Err(format!(
                "discovery does not list {plural} in {group_version} yet"
            ));
        }
    }
    Ok(())
}

/// Deletes the CRDs `names` and waits until they are gone.
pub(crate) async fn uninstall(
    client: &kube_client::Client,
    names: &[String],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in names {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube_client::Error::Api(status)) if status.code == 404 => {}
            Err(source) => {
                return Err(Error::UninstallCrd {
                    name: name.clone(),
                    source,
                });
            }
        }
    }
    let deadline = tokio::time::Instant::now() + timeout;
    for name in names {
        loop {
            match api.get_opt(name).await {
                Ok(None) => break,
                Ok(Some(_)) if tokio::time::Instant::now() >= deadline => {
                    return Err(Error::CrdNotDeleted {
                        name: name.clone(),
                        timeout,
                    });
                }
                Ok(Some(_)) => tokio::time::sleep(POLL_INTERVAL).await,
                Err(source) => {
                    return Err(Error::UninstallCrd {
                        name: name.clone(),
                        source,
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_CRDS: &str = r#"
# a comment before the first document marker, which starts the first document
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: apples.fruit.example.com
spec:
  group: fruit.example.com
  scope: Namespaced
  names: {plural: apples, singular: apple, kind: Apple}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
---
# an empty document
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: pears.fruit.example.com
spec:
  group: fruit.example.com
  scope: Cluster
  names: {plural: pears, kind: Pear}
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
---
"#;

    fn names(crds: &[CustomResourceDefinition]) -> Vec<&str> {
        crds.iter()
            .map(|c| c.metadata.name.as_deref().unwrap())
            .collect()
    }

    #[test]
    fn multi_document_yaml_gives_every_crd_and_skips_empty_documents() {
        let crds = parse(Path::new("fruit.yaml"), TWO_CRDS).unwrap();
        assert_eq!(
            names(&crds),
            ["apples.fruit.example.com", "pears.fruit.example.com"]
        );
        assert_eq!(crds[1].spec.scope, "Cluster");
    }

    #[test]
    fn a_json_file_is_one_crd() {
        let json = serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "plums.fruit.example.com"},
            "spec": {
                "group": "fruit.example.com", "scope": "Namespaced",
                "names": {"plural": "plums", "kind": "Plum"},
                "versions": [{"name": "v1", "served": true, "storage": true}]
            }
        });
        let crds = parse(Path::new("plum.json"), &json.to_string()).unwrap();
        assert_eq!(names(&crds), ["plums.fruit.example.com"]);
    }

    #[test]
    fn a_document_of_another_kind_is_refused_naming_file_and_document() {
        let text = format!("{TWO_CRDS}apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: x}}\n");
        let err = parse(Path::new("dir/mixed.yaml"), &text).unwrap_err();
        assert!(
            matches!(&err, Error::NotACrd { document: 4, kind, .. } if kind == "ConfigMap"),
            "{err:?}"
        );
        let message = err.to_string();
        assert!(message.starts_with("dir/mixed.yaml: document 4 is \"ConfigMap\" of \"v1\""));
    }

    #[test]
    fn an_old_crd_version_is_refused() {
        let text = TWO_CRDS.replacen("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", 1);
        let err = parse(Path::new("old.yaml"), &text).unwrap_err();
        assert!(
            matches!(&err, Error::NotACrd { document: 1, api_version, .. } if api_version == "apiextensions.k8s.io/v1beta1"),
            "{err:?}"
        );
    }

    #[test]
    fn broken_yaml_and_broken_crds_name_the_document_and_keep_the_cause() {
        let err = parse(Path::new("bad.yaml"), "a: [unclosed\n").unwrap_err();
        assert!(
            matches!(err, Error::ParseCrd { document: 1, .. }),
            "{err:?}"
        );
        assert!(std::error::Error::source(&err).is_some());

        // A CRD whose spec is not a CRD's spec.
        let text = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: 3\n";
        let err = parse(Path::new("bad.yaml"), text).unwrap_err();
        assert!(
            matches!(err, Error::ParseCrd { document: 1, .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("bad.yaml: document 1"));
    }

    #[test]
    fn a_missing_path_is_an_error_naming_it() {
        let err = read_path(Path::new("/nonexistent/crds")).unwrap_err();
        assert!(matches!(err, Error::ReadCrds { .. }), "{err:?}");
        assert!(err.to_string().contains("/nonexistent/crds"));
    }
}
