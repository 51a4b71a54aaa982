//! [`Directory`]: a cluster per kubeconfig file in a directory (multicluster-runtime's file
//! provider), found by polling.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kube_client::config::Kubeconfig;
use tokio_util::sync::CancellationToken;

use super::kubeconfig;
use super::set::ClusterSet;
use crate::BoxError;
use crate::cache::CacheOptions;
use crate::multicluster::aware::{Aware, Provider};

/// A provider of one cluster per kubeconfig file in a directory, named by the file's stem
/// (`member-1.yaml` is `member-1`) and reached through the file's current context. The
/// directory is read at start and every [`interval`](Self::with_interval): a file that
/// appears engages its cluster, one that changes engages it again with the new content, one
/// that disappears disengages it. Hidden files and subdirectories are skipped; a file that
/// does not parse is logged and left as it was.
#[derive(Clone, Debug)]
pub struct Directory {
    dir: PathBuf,
    interval: Duration,
    set: ClusterSet,
}

impl Directory {
    /// The kubeconfig files in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Directory {
            dir: dir.into(),
            interval: Duration::from_secs(5),
            set: ClusterSet::new(),
        }
    }

    /// How often the directory is read again (default 5 s).
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// The cache options of its clusters.
    pub fn with_cache_options(mut self, options: CacheOptions) -> Self {
        self.set = self.set.with_cache_options(options);
        self
    }

    /// The clusters found so far, sorted.
    pub fn names(&self) -> Vec<String> {
        self.set.names()
    }

    /// Reads the directory once and brings the set in line with it.
    pub async fn sync(&self, seen: &mut BTreeMap<String, Vec<u8>>) {
        let files = match read_dir(&self.dir).await {
            Ok(files) => files,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot read the kubeconfig directory");
                return;
            }
        };
        let gone: Vec<String> = (seen.keys())
            .filter(|name| !files.contains_key(*name))
            .cloned()
            .collect();
        for name in gone {
            seen.remove(&name);
            self.set.remove(&name).await;
        }
        for (name, (path, content)) in files {
            if seen.get(&name) == Some(&content) {
                continue;
            }
            let client = match parse(&content) {
                Ok(kc) => kubeconfig::client(&kc, None).await,
                Err(message) => Err(crate::multicluster::error::Error::Kubeconfig {
                    origin: path.display().to_string(),
                    message,
                }),
            };
            match client {
                Ok(client) => {
                    seen.insert(name.clone(), content);
                    if let Err(e) = self.set.add(name.as_str(), client).await {
                        tracing::error!(cluster = %name, error = %e, "could not engage cluster");
                    }
                }
                Err(e) => {
                    tracing::warn!(file = %path.display(), error = %e, "skipping kubeconfig");
                }
            }
        }
    }
}

fn parse(content: &[u8]) -> Result<Kubeconfig, String> {
    let text = std::str::from_utf8(content).map_err(|e| e.to_string())?;
    Kubeconfig::from_yaml(text).map_err(|e| e.to_string())
}

/// The regular, non-hidden files of `dir` by stem, with their paths and contents.
async fn read_dir(dir: &Path) -> std::io::Result<BTreeMap<String, (PathBuf, Vec<u8>)>> {
    let mut files = BTreeMap::new();
    let mut entries = tokio::fs::read_dir(dir).await?;
    while let Some(entry) = entries.next_entry().await? {
        let path = entry.path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if stem.is_empty() || stem.starts_with('.') || !entry.file_type().await?.is_file() {
            continue;
        }
        // A file removed between the listing and the read is gone.
        if let Ok(content) = tokio::fs::read(&path).await {
            files.insert(stem.to_string(), (path, content));
        }
    }
    Ok(files)
}

impl Provider for Directory {
    fn start(
        &self,
        ctx: CancellationToken,
        aware: Arc<dyn Aware>,
    ) -> BoxFuture<'_, Result<(), BoxError>> {
        Box::pin(async move {
            let state = (self, BTreeMap::new());
            (self.set)
                .run_polling(ctx, aware, self.interval, state, |p, seen| {
                    Box::pin(p.sync(seen))
                })
                .await
        })
    }

    fn describe(&self) -> String {
        format!("kubeconfig directory provider ({})", self.dir.display())
    }
}
