//! Webhooks in a test environment (envtest's `WebhookInstallOptions`): a local serving
//! certificate and a free port for the process's webhook server, and the installation of its
//! configuration objects pointing at `https://127.0.0.1:<port>/<path>` with the CA bundle.

use std::path::Path;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::Api;
use kube_client::api::{Patch, PatchParams};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};

use super::Error;
use crate::webhook::{self, ClientConfig};

/// The names of the configuration objects [`Running::install_webhooks`](super::Running::install_webhooks)
/// writes.
pub const MUTATING_CONFIGURATION: &str = "envtest-mutating-webhook-configuration";
/// See [`MUTATING_CONFIGURATION`].
pub const VALIDATING_CONFIGURATION: &str = "envtest-validating-webhook-configuration";

/// The field manager of the environment's writes.
const FIELD_MANAGER: &str = "envtest";

/// Where the process's webhook server serves in the test environment.
#[derive(Debug)]
pub(crate) struct LocalServing {
    /// The certificate directory (`tls.crt`, `tls.key`), removed with the environment.
    pub(crate) dir: tempfile_dir::Dir,
    pub(crate) port: u16,
    pub(crate) ca_pem: String,
}

/// A temporary directory removed on drop (std only: no dependency for one directory).
pub(crate) mod tempfile_dir {
    use std::path::{Path, PathBuf};

    /// See the [module docs](self).
    #[derive(Debug)]
    pub(crate) struct Dir(PathBuf);

    impl Dir {
        pub(crate) fn new() -> std::io::Result<Dir> {
            let path = std::env::temp_dir().join(format!(
                "envtest-webhook-{}-{:016x}",
                std::process::id(),
                rand::random::<u64>()
            ));
            std::fs::create_dir_all(&path)?;
            Ok(Dir(path))
        }

        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn cert_error(e: rcgen::Error) -> Error {
    Error::Webhook(format!("generating the serving certificate: {e}"))
}

/// Generates a CA and a serving certificate for `127.0.0.1` and `localhost` into a new
/// directory, and picks a free local port.
pub(crate) fn local_serving() -> Result<LocalServing, Error> {
    let ca_key = KeyPair::generate().map_err(cert_error)?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(cert_error)?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "envtest-webhook-ca");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(cert_error)?;
    let key = KeyPair::generate().map_err(cert_error)?;
    let mut params = CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
        .map_err(cert_error)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "envtest-webhook");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &ca).map_err(cert_error)?;

    let io = |what: &str, e: std::io::Error| Error::Webhook(format!("{what}: {e}"));
    let dir = tempfile_dir::Dir::new().map_err(|e| io("creating the certificate directory", e))?;
    write(dir.path(), "tls.crt", &cert.pem()).map_err(|e| io("writing tls.crt", e))?;
    write(dir.path(), "tls.key", &key.serialize_pem()).map_err(|e| io("writing tls.key", e))?;
    // As envtest: a port free now, for the webhook server to bind when it starts.
    let port = std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map_err(|e| io("finding a free port", e))?
        .port();
    Ok(LocalServing {
        dir,
        port,
        ca_pem: ca.pem(),
    })
}

fn write(dir: &Path, name: &str, content: &str) -> std::io::Result<()> {
    std::fs::write(dir.join(name), content)
}

impl LocalServing {
    /// The webhook server options that serve here.
    pub(crate) fn options(&self) -> webhook::Options {
        webhook::Options::default()
            .with_host([127, 0, 0, 1].into())
            .with_port(self.port)
            .with_tls(crate::serving::TlsOptions::default().with_cert_dir(self.dir.path()))
    }

    /// How the API server reaches the webhook server: its URL and the CA.
    pub(crate) fn client_config(&self) -> ClientConfig {
        ClientConfig::url(
            format!("https://127.0.0.1:{}", self.port),
            self.ca_pem.as_bytes(),
        )
    }
}

/// Applies `server`'s configuration objects, and the conversion stanza of every installed CRD
/// whose kind has a registered conversion.
pub(crate) async fn install(
    client: &kube_client::Client,
    serving: &LocalServing,
    server: &webhook::Server,
    crds: &[String],
) -> Result<(), Error> {
    let client_config = serving.client_config();
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let failed = |what: String| move |e: kube_client::Error| Error::Webhook(format!("{what}: {e}"));

    let mutating = server.mutating_webhook_configuration(MUTATING_CONFIGURATION, &client_config);
    if mutating.webhooks.as_ref().is_some_and(|w| !w.is_empty()) {
        Api::<MutatingWebhookConfiguration>::all(client.clone())
            .patch(MUTATING_CONFIGURATION, &params, &Patch::Apply(&mutating))
            .await
            .map_err(failed(format!("installing {MUTATING_CONFIGURATION}")))?;
    }
    let validating =
        server.validating_webhook_configuration(VALIDATING_CONFIGURATION, &client_config);
    if validating.webhooks.as_ref().is_some_and(|w| !w.is_empty()) {
        Api::<ValidatingWebhookConfiguration>::all(client.clone())
            .patch(
                VALIDATING_CONFIGURATION,
                &params,
                &Patch::Apply(&validating),
            )
            .await
            .map_err(failed(format!("installing {VALIDATING_CONFIGURATION}")))?;
    }
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    for name in crds {
        let mut crd = api
            .get(name)
            .await
            .map_err(failed(format!("reading CRD {name}")))?;
        let Some(conversion) =
            server.crd_conversion(&crd.spec.group, &crd.spec.names.kind, &client_config)
        else {
            continue;
        };
        crd.spec.conversion = Some(conversion);
        crd.status = None;
        api.replace(name, &Default::default(), &crd)
            .await
            .map_err(failed(format!(
                "setting the conversion webhook of CRD {name}"
            )))?;
    }
    Ok(())
}
