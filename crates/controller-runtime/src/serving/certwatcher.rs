//! [`CertWatcher`]: the serving certificate and key, read from PEM files and read again when
//! they change, so a certificate rotated on disk (by cert-manager, say) is served without a
//! restart (controller-runtime's `pkg/certwatcher`).
//!
//! The watcher is a rustls [`ResolvesServerCert`]: every TLS handshake asks it for the current
//! certificate, so connections opened after a reload get the new one while open connections
//! keep theirs. [`CertWatcher::watch`] polls the files on an interval (controller-runtime's
//! polling fallback; there is no file-system notification here): when either file's
//! modification time, size or content changed, the pair is read, parsed and checked (the key
//! must match the certificate) before it replaces the served one. A half-written rotation (the
//! new certificate beside the old key) fails that check, is logged, and is retried on the next
//! tick while the old pair is still served.
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//! use controller_runtime::serving::CertWatcher;
//! use controller_runtime::CancellationToken;
//!
//! # async fn f() -> Result<(), controller_runtime::serving::Error> {
//! let watcher = Arc::new(CertWatcher::new("/certs/tls.crt", "/certs/tls.key")?);
//! let ctx = CancellationToken::new();
//! tokio::spawn({
//!     let watcher = watcher.clone();
//!     async move { watcher.watch(ctx, Duration::from_secs(10)).await }
//! });
//! // rustls::ServerConfig::builder()...with_cert_resolver(watcher)
//! # Ok(()) }
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_util::sync::CancellationToken;

use super::error::Error;

/// What was last read from disk: a change in any of it triggers a reload.
#[derive(Clone, PartialEq, Eq, Default)]
struct Seen {
    cert: FileStamp,
    key: FileStamp,
}

#[derive(Clone, PartialEq, Eq, Default)]
struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
    content: Vec<u8>,
}

/// See the [module docs](self).
pub struct CertWatcher {
    cert_path: PathBuf,
    key_path: PathBuf,
    provider: Arc<CryptoProvider>,
    current: RwLock<Arc<CertifiedKey>>,
    seen: Mutex<Seen>,
}

impl fmt::Debug for CertWatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertWatcher")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .finish_non_exhaustive()
    }
}

impl CertWatcher {
    /// Reads the certificate chain (PEM, leaf first) and its private key (PEM: PKCS#8, PKCS#1
    /// or SEC1); fails when either is missing, unreadable, or they do not match.
    pub fn new(cert_path: impl Into<PathBuf>, key_path: impl Into<PathBuf>) -> Result<Self, Error> {
        let cert_path = cert_path.into();
        let key_path = key_path.into();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let seen = Seen {
            cert: stamp(&cert_path)?,
            key: stamp(&key_path)?,
        };
        let current = parse(&seen, &cert_path, &key_path, &provider)?;
        Ok(CertWatcher {
            cert_path,
            key_path,
            provider,
            current: RwLock::new(Arc::new(current)),
            seen: Mutex::new(seen),
        })
    }

    /// The certificate file's path.
    pub fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// The key file's path.
    pub fn key_path(&self) -> &Path {
        &self.key_path
    }

    /// The certificate and key served now.
    pub fn current(&self) -> Arc<CertifiedKey> {
        self.current.read().clone()
    }

    /// Reads the files again: `Ok(true)` when they changed and the new pair is now served,
    /// `Ok(false)` when nothing changed, an error (the old pair still served) when the new
    /// files cannot be read or parsed, or do not match.
    pub fn reload(&self) -> Result<bool, Error> {
        let seen = Seen {
            cert: stamp(&self.cert_path)?,
            key: stamp(&self.key_path)?,
        };
        if *self.seen.lock() == seen {
            return Ok(false);
        }
        let key = parse(&seen, &self.cert_path, &self.key_path, &self.provider)?;
        *self.current.write() = Arc::new(key);
        *self.seen.lock() = seen;
        tracing::info!(cert = %self.cert_path.display(), "serving certificate reloaded");
        Ok(true)
    }

    /// Calls [`reload`](Self::reload) every `interval` until `ctx` is cancelled; failures are
    /// logged and retried on the next tick.
    pub async fn watch(&self, ctx: CancellationToken, interval: Duration) {
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
            if let Err(e) = self.reload() {
                tracing::warn!(error = %e, "reloading the serving certificate failed: keeping the current one");
            }
        }
    }
}

impl ResolvesServerCert for CertWatcher {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn stamp(path: &Path) -> Result<FileStamp, Error> {
    let read = |e: std::io::Error| Error::Certificate(format!("reading {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(read)?;
    Ok(FileStamp {
        modified: meta.modified().ok(),
        len: meta.len(),
        content: std::fs::read(path).map_err(read)?,
    })
}

fn parse(
    seen: &Seen,
    cert_path: &Path,
    key_path: &Path,
    provider: &CryptoProvider,
) -> Result<CertifiedKey, Error> {
    let certs = CertificateDer::pem_slice_iter(&seen.cert.content)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Certificate(format!("parsing {}: {e}", cert_path.display())))?;
    if certs.is_empty() {
        return Err(Error::Certificate(format!(
            "{}: no certificate found",
            cert_path.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_slice(&seen.key.content)
        .map_err(|e| Error::Certificate(format!("parsing {}: {e}", key_path.display())))?;
    CertifiedKey::from_der(certs, key, provider).map_err(|e| {
        Error::Certificate(format!(
            "{} and {}: {e}",
            cert_path.display(),
            key_path.display()
        ))
    })
}
