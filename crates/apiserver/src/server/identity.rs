//! The server's own secrets: its serving CA, client CA, ServiceAccount signing key and admin
//! token. A server without a data directory makes new ones at every start. One with a data
//! directory keeps them there, in `identity.json` (readable by its owner only), so that what it
//! handed out before a restart still works after it: kubeconfigs (the CA they trust, the
//! token), client certificates, ServiceAccount tokens. Only the serving certificate is new at
//! each start, signed by the kept CA, for the names of that start.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde::{Deserialize, Serialize};

use crate::auth::serviceaccount::TokenSigner;
use crate::auth::x509::ClientCa;
use crate::error::Error;
use crate::tls::Certificates;

/// The file, in the data directory.
const FILE: &str = "identity.json";

/// What is kept, as written.
#[derive(Serialize, Deserialize)]
struct Kept {
    ca_cert: String,
    ca_key: String,
    client_ca_cert: String,
    client_ca_key: String,
    service_account_key: String,
    token: String,
}

/// A server's secrets.
pub(crate) struct Identity {
    /// The serving CA and certificate.
    pub(crate) certs: Certificates,
    /// The CA of the client certificates it accepts.
    pub(crate) client_ca: ClientCa,
    /// The ServiceAccount token signer.
    pub(crate) token_signer: TokenSigner,
    /// The admin's bearer token.
    pub(crate) token: String,
}

/// New secrets for the names `hosts`, with the admin token `token`.
pub(crate) fn fresh(hosts: &[String], token: String) -> Result<Identity, Error> {
    Ok(Identity {
        certs: Certificates::generate(hosts)?,
        client_ca: ClientCa::generate()?,
        token_signer: TokenSigner::generate()?,
        token,
    })
}

/// The secrets kept in `dir`, or new ones (then kept there). `token` (when given) is the admin
/// token of this start, whatever was kept; `random` the one a new identity gets otherwise.
pub(crate) fn kept(
    dir: &Path,
    hosts: &[String],
    token: Option<String>,
    random: String,
) -> Result<Identity, Error> {
    let path = dir.join(FILE);
    let fail = |message: String| Error::DataDir {
        path: dir.display().to_string(),
        message,
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let identity = fresh(hosts, token.unwrap_or(random))?;
            write(&path, &identity).map_err(|e| fail(format!("writing {FILE}: {e}")))?;
            return Ok(identity);
        }
        Err(e) => return Err(fail(format!("reading {FILE}: {e}"))),
    };
    let kept: Kept =
        serde_json::from_slice(&bytes).map_err(|e| fail(format!("reading {FILE}: {e}")))?;
    let key = |name: &str, b64: &str| {
        B64.decode(b64)
            .map_err(|e| fail(format!("{FILE}: {name}: {e}")))
    };
    Ok(Identity {
        certs: Certificates::from_ca(hosts, &kept.ca_cert, &key("ca_key", &kept.ca_key)?)?,
        client_ca: ClientCa::from_kept(
            &key("client_ca_key", &kept.client_ca_key)?,
            &kept.client_ca_cert,
        )?,
        token_signer: TokenSigner::from_pkcs8(&key(
            "service_account_key",
            &kept.service_account_key,
        )?)?,
        token: token.unwrap_or(kept.token),
    })
}

/// Writes `identity` to `path` (through a temporary file, synced, owner-only on Unix).
fn write(path: &Path, identity: &Identity) -> std::io::Result<()> {
    use std::io::Write;
    let kept = Kept {
        ca_cert: identity.certs.ca_pem.clone(),
        ca_key: B64.encode(identity.certs.ca_key_der()),
        client_ca_cert: identity.client_ca.ca_pem().to_string(),
        client_ca_key: B64.encode(identity.client_ca.key_der()),
        service_account_key: B64.encode(identity.token_signer.pkcs8()),
        token: identity.token.clone(),
    };
    let tmp = path.with_extension("json.tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp)?;
    file.write_all(&serde_json::to_vec_pretty(&kept).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
