//! The server: configuration, start, the TLS listener, bearer-token authentication, the
//! kubeconfig it hands out, stop and restart (in progress).

use crate::error::Error;

/// Server configuration.
#[derive(Clone, Debug, Default)]
pub struct Config {}

/// A running embedded API server.
pub struct Server {}

impl Server {
    /// Starts a server.
    pub async fn start(_config: Config) -> Result<Server, Error> {
        todo!()
    }

    /// A kubeconfig (YAML) for this server.
    pub fn kubeconfig(&self) -> String {
        todo!()
    }

    /// Stops the server and frees its port.
    pub async fn stop(self) {
        todo!()
    }
}
