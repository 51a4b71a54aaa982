//! `crt serve --data-dir`: `kill -9` while 8 writers write; after a restart on the same
//! directory every write answered 2xx is there with its resourceVersion, and a watching client
//! that kept running through the crash, with the kubeconfig of the first start, converges by
//! itself (its watch fails, gets 410 Gone from the restarted server, and it relists).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::Api;
use kube_client::api::{ListParams, PostParams, WatchEvent, WatchParams};

const NS: &str = "default";

/// `crt serve --data-dir dir` on `port`, killed on drop.
struct Serve(Child);

impl Serve {
    fn start(dir: &Path, port: u16) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_crt"))
            .args(["serve", "--no-cluster", "--addr"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(dir.join("data"))
            .arg("--kubeconfig-out")
            .arg(dir.join("kubeconfig"))
            .stdout(Stdio::piped())
            .spawn()
            .expect("crt starts");
        let (seen, lines) = crate::until_serving(&mut child);
        assert!(
            seen.iter().any(|l| l.starts_with("data kept in")),
            "{seen:?}"
        );
        std::thread::spawn(move || for _ in lines {});
        Serve(child)
    }

    /// `kill -9`.
    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A client from the kubeconfig `crt serve` wrote (its CA, the admin's client certificate).
async fn client(kubeconfig: &str) -> kube_client::Client {
    let kc = kube_client::config::Kubeconfig::from_yaml(kubeconfig).unwrap();
    let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube_client::Client::try_from(config).unwrap()
}

/// A free port on the loopback address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// What the watching client believes: each ConfigMap's resourceVersion, and how often it
/// listed.
#[derive(Default)]
struct View {
    objects: BTreeMap<String, String>,
    lists: usize,
    gone: usize,
}

/// A reflector as client-go's: list, then watch from the list's resourceVersion; on a 410
/// (or a watch that cannot be started or ends with an error) list again. Runs until dropped.
async fn reflect(api: Api<ConfigMap>, view: Arc<Mutex<View>>) {
    let name = |cm: &ConfigMap| cm.metadata.name.clone().unwrap_or_default();
    let rv_of = |cm: &ConfigMap| cm.metadata.resource_version.clone().unwrap_or_default();
    'relist: loop {
        let list = match api.list(&ListParams::default()).await {
            Ok(list) => list,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
        {
            let mut v = view.lock().unwrap();
            v.objects = list.items.iter().map(|cm| (name(cm), rv_of(cm))).collect();
            v.lists += 1;
        }
        loop {
            let wp = WatchParams::default().timeout(60);
            let mut stream = match api.watch(&wp, &rv).await {
                Ok(s) => s.boxed(),
                Err(_) => {
                    // The server is down: resume from the same resourceVersion when it is back.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            while let Some(event) = stream.next().await {
                let mut v = view.lock().unwrap();
                match event {
                    Ok(WatchEvent::Added(cm)) | Ok(WatchEvent::Modified(cm)) => {
                        rv = rv_of(&cm);
                        v.objects.insert(name(&cm), rv.clone());
                    }
                    Ok(WatchEvent::Deleted(cm)) => {
                        rv = rv_of(&cm);
                        v.objects.remove(&name(&cm));
                    }
                    Ok(WatchEvent::Bookmark(b)) => rv = b.metadata.resource_version,
                    Ok(WatchEvent::Error(e)) if e.code == 410 => {
                        v.gone += 1;
                        continue 'relist;
                    }
                    Ok(WatchEvent::Error(_)) | Err(_) => break,
                }
            }
        }
    }
}

/// Creates ConfigMaps `w<writer>-<n>` until the server stops answering; answers each one
/// answered 2xx with its resourceVersion.
async fn write(
    api: Api<ConfigMap>,
    writer: usize,
    count: Arc<AtomicUsize>,
) -> Vec<(String, String)> {
    let mut acked = Vec::new();
    let mut n = 0;
    loop {
        let name = format!("w{writer}-{n}");
        n += 1;
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(name.clone());
        cm.data = Some([("n".to_string(), n.to_string())].into());
        match api.create(&PostParams::default(), &cm).await {
            Ok(created) => {
                acked.push((name, created.metadata.resource_version.unwrap()));
                count.fetch_add(1, Ordering::Relaxed);
            }
            Err(_) => break,
        }
    }
    acked
}

#[test]
fn kill_9_during_writes_loses_no_acknowledged_write_and_watchers_converge() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Serve::start(dir.path(), port);
    let rt = tokio::runtime::Runtime::new().unwrap();
    // The kubeconfig of the first start: the clients keep it across the restart, as a
    // controller keeps its configuration.
    let kubeconfig = std::fs::read_to_string(dir.path().join("kubeconfig")).unwrap();
    rt.block_on(async {
        let api: Api<ConfigMap> = Api::namespaced(client(&kubeconfig).await, NS);
        let view = Arc::new(Mutex::new(View::default()));
        let reflector = tokio::spawn(reflect(
            Api::namespaced(client(&kubeconfig).await, NS),
            view.clone(),
        ));
        let count = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..8)
            .map(|i| tokio::spawn(write(api.clone(), i, count.clone())))
            .collect();
        // Writes go on until the server is killed under them.
        while count.load(Ordering::Relaxed) < 200 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        tokio::task::spawn_blocking(move || server.kill())
            .await
            .unwrap();
        let mut acked = Vec::new();
        for w in writers {
            acked.extend(w.await.unwrap());
        }
        assert!(acked.len() >= 200, "{} writes answered", acked.len());

        let dir = dir.path().to_path_buf();
        let restarted = tokio::task::spawn_blocking(move || Serve::start(&dir, port))
            .await
            .unwrap();
        let api: Api<ConfigMap> = Api::namespaced(client(&kubeconfig).await, NS);
        let stored: BTreeMap<String, String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|cm| {
                (
                    cm.metadata.name.unwrap(),
                    cm.metadata.resource_version.unwrap(),
                )
            })
            .collect();
        for (name, rv) in &acked {
            assert_eq!(
                stored.get(name),
                Some(rv),
                "{name} was answered 201 at resourceVersion {rv}"
            );
        }

        // The watcher kept running: after new writes it sees exactly what the server has.
        for i in 0..8 {
            let mut cm = ConfigMap::default();
            cm.metadata.name = Some(format!("after-{i}"));
            api.create(&PostParams::default(), &cm).await.unwrap();
        }
        let want: BTreeMap<String, String> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|cm| {
                (
                    cm.metadata.name.unwrap(),
                    cm.metadata.resource_version.unwrap(),
                )
            })
            .collect();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            {
                let v = view.lock().unwrap();
                if v.objects == want {
                    assert!(v.lists >= 2, "it relisted after the restart");
                    assert!(v.gone >= 1, "its resumed watch got 410 Gone");
                    break;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the watcher did not converge"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        reflector.abort();
        drop(restarted);
    });
}
