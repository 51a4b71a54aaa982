//! The server: configuration, start, the TLS listener (HTTP/2 and HTTP/1.1), the kubeconfig it
//! hands out, the credentials it mints (client certificates, ServiceAccount tokens), stop, and
//! stopping/restarting the listener on the same port for fault injection.
//!
//! ## Durability
//! By default the server keeps everything in memory. With [`Config::data_dir`] it keeps a
//! write-ahead log and snapshots there ([`Storage::open`]): every object (built-in kinds, CRDs
//! and their custom resources) with its resourceVersion, uid, creationTimestamp, generation and
//! managedFields survives a restart, and a write is answered only once its log record is
//! synced to disk (`fdatasync`, shared by concurrent writers), so every write answered 2xx is
//! there after a crash, even `kill -9` or a power loss. At start the server restores the
//! directory's state and does not recreate or overwrite what it restored (namespaces, RBAC
//! defaults, flow control configuration, the ServiceCIDR; the `kubernetes` Service and its
//! endpoints are only updated to the new address). The server's secrets are kept there too
//! (its CA, client CA, ServiceAccount signing key and admin token; a new serving certificate is
//! signed by the kept CA at each start), so kubeconfigs, client certificates and ServiceAccount
//! tokens handed out before a restart still work after it. Watches do not survive: clients reconnect,
//! and resuming from a resourceVersion of before the restart gets 410 Gone, after which they
//! relist, as after an etcd compaction.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use parking_lot::Mutex;
use rand::Rng;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{JoinHandle, JoinSet};
use tokio_rustls::TlsAcceptor;

use crate::auth::authn::{Authenticator, StaticUser};
use crate::auth::authz::Authorizer;
use crate::auth::serviceaccount::{Claims, ObjectClaim, TokenSigner, new_token_id};
use crate::auth::x509::{ClientCa, ClientCertificateParams, PeerCertificates};
use crate::error::Error;
use crate::faults::{Fault, Faults};
use crate::http::{self, AppState};
use crate::storage::{Storage, StorageConfig};

mod identity;

/// Server configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The address to listen on (default `127.0.0.1`).
    pub addr: IpAddr,
    /// The port; `0` (the default) picks a free one.
    pub port: u16,
    /// The admin's bearer token (user `crt-admin` in `system:masters`, the kubeconfig's
    /// user); a random one when `None`.
    pub token: Option<String>,
    /// More users known by bearer tokens, as kube-apiserver's `--token-auth-file` lists them
    /// (none by default). Client certificates ([`Server::client_certificate`]) and
    /// ServiceAccount tokens are always accepted too.
    pub users: Vec<StaticUser>,
    /// Tunables of the object store.
    pub storage: StorageConfig,
    /// Where to write the kubeconfig at start, if anywhere.
    pub kubeconfig_path: Option<PathBuf>,
    /// The largest request body accepted; larger ones get 413 (default 3 MiB, as the real
    /// server).
    pub max_body_bytes: usize,
    /// How often the history is compacted, as kube-apiserver's `--etcd-compaction-interval`
    /// (default 5 minutes; `Duration::ZERO` never compacts): each compaction forgets what
    /// came before the previous one, after which a watch from an older resourceVersion, or
    /// the continue token of an older list, gets 410 Gone (see
    /// [`Storage::compactor`](crate::storage::Storage::compactor)).
    pub compaction_interval: std::time::Duration,
    /// Where the data is kept across restarts (`None`, the default: in memory only): a
    /// directory, created when missing, holding a write-ahead log and snapshots, and the
    /// server's secrets (CAs, signing key, the admin token when [`Config::token`] is `None`).
    /// Each write is synced to disk before it is answered, and a server started on the same
    /// directory restores everything (see the module docs). One server at a time uses a
    /// directory.
    pub data_dir: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            addr: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            token: None,
            users: Vec::new(),
            storage: StorageConfig::default(),
            kubeconfig_path: None,
            max_body_bytes: 3 * 1024 * 1024,
            compaction_interval: std::time::Duration::from_secs(5 * 60),
            data_dir: None,
        }
    }
}

struct Listening {
    shutdown: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// A running embedded API server. Dropping it (or [`Server::stop`]) closes the listener and
/// every connection.
pub struct Server {
    state: Arc<AppState>,
    acceptor: TlsAcceptor,
    addr: SocketAddr,
    ca_pem: String,
    client_ca: Arc<ClientCa>,
    token_signer: Arc<TokenSigner>,
    listening: Mutex<Option<Listening>>,
    /// The history compactor, stopped with the server.
    compactor: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn random_token() -> String {
    let bytes: [u8; 24] = rand::rng().random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn bind(addr: SocketAddr) -> Result<TcpListener, Error> {
    let err = |source| Error::Listen {
        addr: addr.to_string(),
        source,
    };
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(err)?;
    socket.set_reuseaddr(true).map_err(err)?;
    socket.bind(addr).map_err(err)?;
    socket.listen(1024).map_err(err)
}

impl Server {
    /// Starts a server: generates its certificates, binds the port and serves in the
    /// background on the current tokio runtime.
    pub async fn start(config: Config) -> Result<Server, Error> {
        let host = config.addr.to_string();
        // A data directory is opened (and locked) first: it also keeps the server's secrets.
        let storage = match &config.data_dir {
            Some(dir) => Storage::open(config.storage.clone(), dir)?,
            None => Storage::new(config.storage.clone()),
        };
        let hosts = std::slice::from_ref(&host);
        let identity::Identity {
            certs,
            client_ca,
            token_signer,
            token,
        } = match &config.data_dir {
            Some(dir) => identity::kept(dir, hosts, config.token.clone(), random_token())?,
            None => identity::fresh(hosts, config.token.clone().unwrap_or_else(random_token))?,
        };
        let acceptor = TlsAcceptor::from(certs.server_config_requesting_client_certificates()?);
        let client_ca = Arc::new(client_ca);
        let token_signer = Arc::new(token_signer);
        let listener = bind(SocketAddr::new(config.addr, config.port))?;
        let addr = listener
            .local_addr()
            .map_err(|source| Error::Listen { addr: host, source })?;
        crate::auth::bootstrap::install(&storage);
        crate::http::flowcontrol::install(&storage);
        storage.install_kubernetes_service(addr);
        let state = Arc::new(AppState {
            faults: Faults::new(storage.clone()),
            authz: Authorizer::new(storage.clone()),
            storage: storage.clone(),
            authn: Authenticator::new(token)
                .with_users(&config.users)
                .with_client_ca(client_ca.clone())
                .with_service_accounts(token_signer.clone(), Arc::new(storage.clone())),
            max_body_bytes: config.max_body_bytes,
            server_address: addr.to_string(),
            apf: Default::default(),
        });
        let server = Server {
            state,
            acceptor,
            addr,
            ca_pem: certs.ca_pem.clone(),
            client_ca,
            token_signer,
            listening: Mutex::new(None),
            compactor: (!config.compaction_interval.is_zero())
                .then(|| tokio::spawn(storage.compactor(config.compaction_interval))),
        };
        server.serve(listener);
        if let Some(path) = &config.kubeconfig_path {
            server.write_kubeconfig(path)?;
        }
        Ok(server)
    }

    fn serve(&self, listener: TcpListener) {
        let (shutdown, rx) = oneshot::channel();
        let task = tokio::spawn(accept_loop(
            listener,
            self.acceptor.clone(),
            self.state.clone(),
            rx,
        ));
        *self.listening.lock() = Some(Listening { shutdown, task });
    }

    /// `https://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        match self.addr.ip() {
            IpAddr::V6(ip) => format!("https://[{ip}]:{}", self.addr.port()),
            IpAddr::V4(ip) => format!("https://{ip}:{}", self.addr.port()),
        }
    }

    /// The record of what each user was allowed or refused (verb, group, resource,
    /// subresource, namespace), empty until [started](crate::auth::AccessRecorder::start): the
    /// accesses an operator run as its ServiceAccount used, from which its minimal role follows.
    pub fn access_recorder(&self) -> &crate::auth::AccessRecorder {
        self.state.authz.recorder()
    }

    /// The port listened on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The bearer token.
    pub fn token(&self) -> &str {
        self.state.authn.admin_token()
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig (YAML) with this server as cluster, the token as user, and a current
    /// context using both (namespace `default`).
    pub fn kubeconfig(&self) -> String {
        self.kubeconfig_with_user("crt-admin", &format!("token: {}", self.token()))
    }

    /// A kubeconfig like [`Server::kubeconfig`] whose user is known by `token` (a static
    /// user's, or a ServiceAccount token from [`Server::service_account_token`] or
    /// `kubectl create token`).
    ///
    /// ```no_run
    /// # async fn f(server: crt_apiserver::Server) -> Result<(), Box<dyn std::error::Error>> {
    /// let token = server.service_account_token("default", "default", std::time::Duration::from_secs(3600))?;
    /// std::fs::write("sa.kubeconfig", server.kubeconfig_for_token(&token))?;
    /// # Ok(()) }
    /// ```
    pub fn kubeconfig_for_token(&self, token: &str) -> String {
        self.kubeconfig_with_user("crt-user", &format!("token: {token}"))
    }

    /// A kubeconfig like [`Server::kubeconfig`] whose user is a new client certificate for
    /// `user` in `groups` ([`Server::client_certificate`]).
    pub fn kubeconfig_for_certificate(&self, user: &str, groups: &[&str]) -> Result<String, Error> {
        self.certificate_kubeconfig("crt-user", user, groups)
    }

    /// A kubeconfig whose user, named `entry` in it, is a new client certificate for `user` in
    /// `groups`.
    fn certificate_kubeconfig(
        &self,
        entry: &str,
        user: &str,
        groups: &[&str],
    ) -> Result<String, Error> {
        let (cert, key) = self.client_certificate(user, groups)?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        Ok(self.kubeconfig_with_user(
            entry,
            &format!(
                "client-certificate-data: {}\n    client-key-data: {}",
                b64(&cert),
                b64(&key)
            ),
        ))
    }

    fn kubeconfig_with_user(&self, user: &str, credentials: &str) -> String {
        let ca = base64::engine::general_purpose::STANDARD.encode(self.ca_pem.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: crt\n  cluster:\n    server: {url}\n    \
             certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    {credentials}\n\
             contexts:\n- name: crt\n  context:\n    cluster: crt\n    user: {user}\n    namespace: default\n\
             current-context: crt\npreferences: {{}}\n",
            url = self.url(),
        )
    }

    /// A new client certificate for `user` (its CN) in `groups` (one O each), signed by the
    /// server's client CA and valid for a year: `(certificate PEM, private key PEM)`. The server
    /// authenticates it as `user`, in `groups` and `system:authenticated`.
    ///
    /// ```no_run
    /// # async fn f(server: crt_apiserver::Server) -> Result<(), crt_apiserver::Error> {
    /// let (cert_pem, key_pem) = server.client_certificate("jane", &["devs"])?;
    /// # Ok(()) }
    /// ```
    pub fn client_certificate(
        &self,
        user: &str,
        groups: &[&str],
    ) -> Result<(String, String), Error> {
        self.client_ca
            .issue(&ClientCertificateParams::new(user, groups))
    }

    /// The client CA: its certificate ([`ClientCa::ca_pem`]) and
    /// [`ClientCa::issue`] for certificates with other validity or usage.
    pub fn client_ca(&self) -> &ClientCa {
        &self.client_ca
    }

    /// A ServiceAccount token for `namespace/name`, valid for `expiration` and the API
    /// server's audience: what `kubectl create token` gets from the TokenRequest API. 404 when
    /// the ServiceAccount does not exist; the token stops authenticating when it is deleted.
    pub fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        expiration: std::time::Duration,
    ) -> Result<String, crate::ApiError> {
        let storage = &self.state.storage;
        let res = storage
            .resolve_gr(crate::resource::names::SERVICE_ACCOUNTS, "v1")
            .ok_or_else(|| crate::ApiError::not_found("serviceaccounts", name))?;
        let sa = storage.get(&res, Some(namespace), name, None)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let claims = Claims {
            namespace: namespace.into(),
            service_account: ObjectClaim {
                name: name.into(),
                uid: sa["metadata"]["uid"].as_str().unwrap_or("").into(),
            },
            audiences: self.token_signer.api_audiences().to_vec(),
            issued_at: now,
            expires_at: now.saturating_add(i64::try_from(expiration.as_secs()).unwrap_or(i64::MAX)),
            id: new_token_id(),
            ..Default::default()
        };
        self.token_signer
            .sign(&claims)
            .map_err(|e| crate::ApiError::internal(e.to_string()))
    }

    /// A kubeconfig like [`Server::kubeconfig`] whose admin (`crt-admin`, in
    /// `system:masters`) authenticates with a new client certificate instead of the token, as
    /// kind and k3d write theirs: clients that build their own TLS stack from the kubeconfig
    /// authenticate with it too.
    pub fn admin_certificate_kubeconfig(&self) -> Result<String, Error> {
        self.certificate_kubeconfig("crt-admin", "crt-admin", &["system:masters"])
    }

    /// Writes [`Server::kubeconfig`] to `path` (mode 0600 on Unix, as it holds the token).
    pub fn write_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        write_private(path, &self.kubeconfig())
    }

    /// Writes [`Server::admin_certificate_kubeconfig`] to `path` (mode 0600 on Unix, as it
    /// holds the private key).
    pub fn write_certificate_kubeconfig(&self, path: &Path) -> Result<(), Error> {
        write_private(path, &self.admin_certificate_kubeconfig()?)
    }

    /// The object store, for tests that look behind the HTTP layer.
    pub fn storage(&self) -> &Storage {
        &self.state.storage
    }

    /// The fault-injection handle.
    pub fn faults(&self) -> Faults {
        self.state.faults.clone()
    }

    /// Closes the listener and every connection; the data is kept, and
    /// [`Server::restart_listener`] serves it again on the same port.
    pub async fn stop_listener(&self) {
        let listening = self.listening.lock().take();
        if let Some(Listening { shutdown, task }) = listening {
            let _ = shutdown.send(());
            let _ = task.await;
            // Every client is gone with its connection; end the watches they held.
            self.state.storage.close_watches();
        }
    }

    /// Listens again on the same port after [`Server::stop_listener`]; nothing happens when
    /// already listening.
    pub async fn restart_listener(&self) -> Result<(), Error> {
        if self.listening.lock().is_some() {
            return Ok(());
        }
        let listener = bind(self.addr)?;
        self.serve(listener);
        Ok(())
    }

    /// Restarts the listener as a crashed and restarted server would look to its clients:
    /// every connection (and watch) dropped, the port refusing connections for `pause`, then
    /// served again at the same address.
    pub async fn bounce_listener(&self, pause: std::time::Duration) -> Result<(), Error> {
        self.stop_listener().await;
        tokio::time::sleep(pause).await;
        self.restart_listener().await
    }

    /// Throws `fault` (see [`crate::faults`]).
    pub async fn inject(&self, fault: &Fault) -> Result<(), Error> {
        let faults = self.faults();
        match fault {
            Fault::CloseWatches => faults.close_watches(),
            Fault::Compact => faults.compact(),
            Fault::FailNext { n, code } => faults.fail_next(*n, *code),
            Fault::RestartListener { pause } => self.bounce_listener(*pause).await?,
        }
        Ok(())
    }

    /// Stops the server: the port is free and every connection closed when this returns.
    pub async fn stop(self) {
        self.stop_listener().await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(compactor) = &self.compactor {
            compactor.abort();
        }
        if let Some(listening) = self.listening.lock().take() {
            // Aborting the accept loop drops the listener and its set of connections, which
            // aborts every connection task.
            listening.task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    state: Arc<AppState>,
    mut shutdown: oneshot::Receiver<()>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(serve_connection(stream, acceptor.clone(), state.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

/// How long a client may take to complete the TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

async fn serve_connection(stream: TcpStream, acceptor: TlsAcceptor, state: Arc<AppState>) {
    let _ = stream.set_nodelay(true);
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream));
    let tls = match handshake.await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            return;
        }
    };
    // The client certificate chain, judged per request by the x509 authenticator.
    let peer = tls
        .get_ref()
        .1
        .peer_certificates()
        .map(|chain| PeerCertificates(chain.iter().map(|c| c.clone().into_owned()).collect()));
    let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
        let state = state.clone();
        if let Some(peer) = &peer {
            req.extensions_mut().insert(peer.clone());
        }
        async move { Ok::<_, Infallible>(http::handle(state, req).await) }
    });
    if let Err(e) = auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(tls), service)
        .await
    {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

/// Writes `contents` to `path`, readable by its owner only on Unix (credentials).
fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    let err = |source| Error::Kubeconfig {
        path: path.display().to_string(),
        source,
    };
    std::fs::write(path, contents).map_err(err)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    Ok(())
}
