//! What can go wrong while a test environment starts, installs its CRDs or stops.

use std::path::PathBuf;
use std::time::Duration;

use kube_client::config::KubeconfigError;

/// Why a test environment could not start or stop cleanly. Each variant names what it was doing
/// (the file, the CRD); the cause, where there is one, is its [`source`](std::error::Error::source).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `USE_EXISTING_CLUSTER` holds something other than `true`, `1`, `false`, `0` or nothing.
    #[error("USE_EXISTING_CLUSTER is {value:?}: expected true, 1, false, 0 or unset")]
    InvalidUseExistingCluster {
        /// The variable's value.
        value: String,
    },
    /// The embedded API server did not start.
    #[error("starting the embedded API server")]
    StartServer(#[source] crt_apiserver::Error),
    /// The kubeconfig (the embedded server's, or the one `$KUBECONFIG` names for an existing
    /// cluster) could not be read or turned into a client configuration.
    #[error("loading the kubeconfig ({what})")]
    Kubeconfig {
        /// Which kubeconfig.
        what: &'static str,
        /// The cause.
        #[source]
        source: KubeconfigError,
    },
    /// The kube-client could not be built from its configuration.
    #[error("building the kube-client")]
    Client(#[source] kube_client::Error),
    /// A CRD file or directory could not be read.
    #[error("reading CRDs from {}", path.display())]
    ReadCrds {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A document of a CRD file is not valid YAML or JSON, or not a valid
    /// CustomResourceDefinition.
    #[error("{}: document {document}: not a valid CustomResourceDefinition", path.display())]
    ParseCrd {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        document: usize,
        /// The parser's complaint.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A document of a CRD file is something else than an `apiextensions.k8s.io/v1`
    /// CustomResourceDefinition.
    #[error(
        "{}: document {document} is {kind:?} of {api_version:?}, not a CustomResourceDefinition of apiextensions.k8s.io/v1",
        path.display()
    )]
    NotACrd {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        document: usize,
        /// The document's `apiVersion` (empty when it has none).
        api_version: String,
        /// The document's `kind` (empty when it has none).
        kind: String,
    },
    /// A CRD could not be created or updated.
    #[error("installing CRD {name}")]
    InstallCrd {
        /// The CRD's name.
        name: String,
        /// The cause.
        #[source]
        source: kube_client::Error,
    },
    /// A CRD was not `Established` and served within the install timeout.
    #[error("CRD {name} is not established and served after {timeout:?}: {last}")]
    CrdNotReady {
        /// The CRD's name.
        name: String,
        /// How long the environment waited.
        timeout: Duration,
        /// What the last check saw.
        last: String,
    },
    /// A CRD installed by the environment could not be deleted when it stopped.
    #[error("uninstalling CRD {name}")]
    UninstallCrd {
        /// The CRD's name.
        name: String,
        /// The cause.
        #[source]
        source: kube_client::Error,
    },
    /// A CRD deleted when the environment stopped still existed after the install timeout.
    #[error("CRD {name} still exists {timeout:?} after its deletion")]
    CrdNotDeleted {
        /// The CRD's name.
        name: String,
        /// How long the environment waited.
        timeout: Duration,
    },
    /// The webhooks' local serving certificate could not be made, or their configuration
    /// objects not installed.
    #[error("webhooks: {0}")]
    Webhook(String),
    /// A manifest file or directory could not be read.
    #[error("reading manifests from {}", path.display())]
    ReadManifests {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A document of a manifest file is not valid YAML or JSON, or not an object with
    /// `apiVersion`, `kind` and `metadata.name`.
    #[error("{}: document {document}: not an installable manifest: {reason}", path.display())]
    ParseManifest {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        document: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An object given with [`manifest_object`](super::Environment::manifest_object) could not
    /// be serialized, or is not an object with `apiVersion`, `kind` and `metadata.name`.
    #[error("manifest object {index}: not an installable manifest: {reason}")]
    InvalidManifestObject {
        /// Its position among the objects given, from 1.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A manifest could not be installed: its kind is not served, or the API server refused it.
    #[error("installing {kind} {name} ({origin}): {reason}")]
    InstallManifest {
        /// Where it came from: `file: document N`, or `manifest object N`.
        origin: String,
        /// Its kind.
        kind: String,
        /// Its name.
        name: String,
        /// Why it was not installed (the API server's message).
        reason: String,
    },
    /// A ServiceAccount, or its namespace, could not be read or created.
    #[error("preparing ServiceAccount {namespace}/{name}")]
    ServiceAccount {
        /// Its namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// The cause.
        #[source]
        source: kube_client::Error,
    },
    /// The API server issued no token for a ServiceAccount through its TokenRequest
    /// subresource (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`).
    #[error(
        "requesting a token for ServiceAccount {namespace}/{name}: {}{reason}",
        if *unsupported { "the API server does not serve the TokenRequest subresource (serviceaccounts/token): " } else { "" }
    )]
    TokenRequest {
        /// The ServiceAccount's namespace.
        namespace: String,
        /// Its name.
        name: String,
        /// Whether the API server does not serve the subresource at all (404 or 405): it
        /// cannot issue ServiceAccount tokens.
        unsupported: bool,
        /// The API server's answer.
        reason: String,
    },
}
