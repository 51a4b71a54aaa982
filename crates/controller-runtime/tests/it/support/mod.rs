//! What the integration tests against the embedded API server share: a started server and a
//! kube-client for it. (`crt-apiserver` hands out a kubeconfig, not a kube-client: it does not
//! depend on kube-client.)
// Each test binary uses what it needs of this module.
#![allow(dead_code)]

use crt_apiserver::{Config, Server};

/// A started embedded API server and a kube-client for it.
pub async fn server() -> (Server, kube_client::Client) {
    let server = Server::start(Config::default())
        .await
        .expect("server starts");
    let client = client_for(&server).await;
    (server, client)
}

/// A new kube-client (its own connections) for `server`, from the kubeconfig it hands out.
pub async fn client_for(server: &Server) -> kube_client::Client {
    let kubeconfig = kube_client::config::Kubeconfig::from_yaml(&server.kubeconfig()).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}
