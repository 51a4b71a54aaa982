//! Durability (`Config::data_dir`, `crt serve --data-dir`): a write-ahead log of every committed
//! change and periodic snapshots of the whole store, in one directory, and the recovery that
//! loads them at start.
//!
//! ## The guarantee
//! Every change the store commits (through `State::put` / `State::remove`: every create,
//! update, patch, apply, delete, status write, garbage collection and bootstrap object) is
//! appended, as one record, to the log's queue under the store's lock, so the log's order is
//! the resourceVersion order. A single writer thread takes whatever has queued up, writes it
//! and calls `fdatasync` once for all of it (group commit: concurrent writers share one sync),
//! then publishes how far the log is synced. The HTTP layer answers a write only once the log
//! is synced past it ([`Sync::wait`]), so a write answered 2xx survives a crash of the process
//! or the machine. When the log cannot be written, the write is answered 500 and so is every
//! later one.
//!
//! Readers and watchers may see a change a few hundred microseconds before it is synced; if the
//! process dies in between, that change is lost and its resourceVersion was never answered to
//! its writer. So that a client that saw one can never mistake a later object for it, a
//! restarted server continues [`RESTART_GAP`] resourceVersions above the highest restored one
//! (more than the writes that may be pending a sync at once, [`MAX_UNSYNCED`]), and history
//! before that is compacted: a watch resuming from an older resourceVersion gets 410 Gone
//! ("too old resource version") and relists, as after an etcd compaction.
//!
//! ## Files
//! - `wal-<rv>.log`: log segments, named by the lowest resourceVersion they may hold. Each record
//!   is a frame: length (u32, little endian), CRC-32 of the payload (u32), payload (JSON:
//!   resourceVersion, resource storage key, namespace, name, and the object, absent for a
//!   deletion).
//! - `snapshot-<rv>.snap`: every object at a resourceVersion, in the same frames: a header
//!   naming the resourceVersion, one frame per object, a footer with the count. Written to a
//!   `.tmp` file, synced and renamed into place. After each [`SNAPSHOT_EVERY`] records the log
//!   starts a new segment and a thread writes a snapshot; the two newest snapshots are kept,
//!   and the segments only an older snapshot needs are deleted.
//! - `LOCK`: locked while a server uses the directory; a second one refuses to start.
//!
//! ## Recovery
//! The newest snapshot that reads back whole (else the one before it) is loaded, then every
//! logged record after its resourceVersion is replayed in order. A torn record at the end of the
//! last segment (a crash in the middle of a write) is cut off; any other unreadable record is
//! an error that names the file and offset, and the server does not start.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A snapshot is taken after this many logged records.
pub(crate) const SNAPSHOT_EVERY: u64 = 10_000;
/// At most this many records wait for a sync; a writer beyond it waits for the log.
pub(crate) const MAX_UNSYNCED: u64 = 10_000;
/// How far above the highest restored resourceVersion a restarted store continues.
pub(crate) const RESTART_GAP: u64 = MAX_UNSYNCED + 1;
/// The largest frame payload read back; a larger length is a corrupt frame.
const MAX_FRAME: usize = 256 << 20;

/// `(namespace, name)`, as the store keys objects.
pub(crate) type Key = (String, String);
/// The objects read back, per resource storage key.
pub(crate) type Objects = BTreeMap<String, BTreeMap<Key, Arc<Value>>>;

/// The state found in a data directory.
pub(crate) struct Recovered {
    /// The highest resourceVersion logged (objects and restarts).
    pub(crate) rv: u64,
    /// Every object.
    pub(crate) objects: Objects,
}

/// A record of the log, as written.
#[derive(Serialize)]
struct RecordOut<'a> {
    rv: u64,
    r: &'a str,
    ns: &'a str,
    n: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    o: Option<&'a Value>,
}

/// A record of the log (or an object of a snapshot), as read.
#[derive(Deserialize)]
struct RecordIn {
    #[serde(default)]
    rv: u64,
    r: String,
    ns: String,
    n: String,
    #[serde(default)]
    o: Option<Value>,
}

/// A snapshot's first frame.
#[derive(Serialize, Deserialize)]
struct Header {
    snapshot: u64,
}

/// A snapshot's last frame.
#[derive(Serialize, Deserialize)]
struct Footer {
    count: u64,
}

/// What the writer thread is handed, in commit order.
enum Item {
    /// A change: the object stored at `key`, or `None` when it was removed.
    Change {
        rv: u64,
        res: String,
        key: Key,
        obj: Option<Arc<Value>>,
    },
    /// Start a new segment, named `rv` (a snapshot covers everything before it).
    Rotate(u64),
}

/// The queue between the store and the writer thread.
#[derive(Default)]
struct Queue {
    items: Vec<Item>,
    /// Items ever queued.
    appended: u64,
    /// Items ever written and synced.
    synced: u64,
    /// The store is gone: write what is queued and stop.
    closing: bool,
    /// Why the log failed, once it did.
    failed: Option<String>,
}

/// What the store, the writer thread and the waiting requests share.
struct Shared {
    queue: Mutex<Queue>,
    /// Wakes the writer thread.
    work: Condvar,
    /// Wakes threads waiting for a sync (back-pressure, snapshots).
    synced: Condvar,
    /// How far the log is synced, for async waiters: `(items synced, failed)`.
    progress: tokio::sync::watch::Sender<(u64, bool)>,
}

/// The waiting side of the log, held by the storage handle: requests wait on it until their
/// change is on disk.
#[derive(Clone)]
pub(crate) struct Sync {
    shared: Arc<Shared>,
}

impl Sync {
    /// Waits until everything committed so far is synced to disk; the log's error when it
    /// cannot be written.
    pub(crate) async fn wait(&self) -> Result<(), String> {
        let target = {
            let q = self.shared.queue.lock();
            if let Some(failed) = &q.failed {
                return Err(failed.clone());
            }
            if q.synced >= q.appended {
                return Ok(());
            }
            q.appended
        };
        let mut rx = self.shared.progress.subscribe();
        let outcome = rx
            .wait_for(|(synced, failed)| *failed || *synced >= target)
            .await
            .map(|v| *v);
        match outcome {
            Ok((_, false)) => Ok(()),
            _ => Err(self
                .shared
                .queue
                .lock()
                .failed
                .clone()
                .unwrap_or_else(|| "the write-ahead log stopped".into())),
        }
    }
}

/// The writing side of the log, held by the store's state.
pub(crate) struct Log {
    shared: Arc<Shared>,
    dir: PathBuf,
    writer: Option<std::thread::JoinHandle<()>>,
    /// The thread writing the last snapshot.
    snapshotter: Option<std::thread::JoinHandle<()>>,
    /// Records since the last snapshot.
    since_snapshot: u64,
    /// A snapshot is being written.
    snapshotting: Arc<AtomicBool>,
    /// Held (locked) as long as the log is open.
    _lock: File,
}

impl Log {
    /// The handle requests wait on.
    pub(crate) fn sync(&self) -> Sync {
        Sync {
            shared: self.shared.clone(),
        }
    }

    /// Queues a change (called under the store's lock, in resourceVersion order). Waits only
    /// when [`MAX_UNSYNCED`] changes already wait for the disk.
    pub(crate) fn append(&mut self, rv: u64, res: &str, key: &Key, obj: Option<Arc<Value>>) {
        let mut q = self.shared.queue.lock();
        while q.failed.is_none() && q.appended - q.synced >= MAX_UNSYNCED {
            self.shared.synced.wait(&mut q);
        }
        if q.failed.is_some() {
            // Nothing writes any more; every request waiting on the log is answered 500.
            return;
        }
        q.items.push(Item::Change {
            rv,
            res: res.to_string(),
            key: key.clone(),
            obj,
        });
        q.appended += 1;
        drop(q);
        self.shared.work.notify_one();
        self.since_snapshot += 1;
    }

    /// Whether a snapshot is due (and none is being written).
    pub(crate) fn snapshot_due(&self) -> bool {
        self.since_snapshot >= SNAPSHOT_EVERY && !self.snapshotting.load(Ordering::Acquire)
    }

    /// Starts a snapshot of the store at `rv` (called under the store's lock, with every change
    /// up to `rv` appended): the log moves to a new segment, and a thread writes the objects
    /// `visit` hands it (a cheap copy of the store, taken under the same lock), then deletes
    /// what no kept snapshot needs.
    pub(crate) fn snapshot(&mut self, rv: u64, visit: Visit) {
        if self.snapshotting.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Some(done) = self.snapshotter.take() {
            // Finished: it cleared `snapshotting`.
            let _ = done.join();
        }
        self.since_snapshot = 0;
        let rotated = {
            let mut q = self.shared.queue.lock();
            q.items.push(Item::Rotate(rv + 1));
            q.appended += 1;
            q.appended
        };
        self.shared.work.notify_one();
        let shared = self.shared.clone();
        let dir = self.dir.clone();
        let busy = self.snapshotting.clone();
        let spawned = std::thread::Builder::new()
            .name("crt-snapshot".into())
            .spawn(move || {
                if let Err(e) = write_snapshot(&dir, rv, visit) {
                    tracing::error!("writing the snapshot at resourceVersion {rv}: {e}");
                } else {
                    // Only once the log has moved to the new segment are the older ones idle.
                    let mut q = shared.queue.lock();
                    while q.failed.is_none() && q.synced < rotated {
                        shared.synced.wait(&mut q);
                    }
                    drop(q);
                    if let Err(e) = prune(&dir) {
                        tracing::warn!("deleting old log segments: {e}");
                    }
                }
                busy.store(false, Ordering::Release);
            });
        match spawned {
            Ok(thread) => self.snapshotter = Some(thread),
            Err(e) => {
                tracing::error!("starting the snapshot thread: {e}");
                self.snapshotting.store(false, Ordering::Release);
            }
        }
    }
}

#[cfg(test)]
impl Log {
    /// Whether a snapshot is being written.
    pub(crate) fn snapshot_running(&self) -> bool {
        self.snapshotting.load(Ordering::Acquire)
    }
}

impl Drop for Log {
    fn drop(&mut self) {
        self.shared.queue.lock().closing = true;
        self.shared.work.notify_one();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        // A snapshot still being written finishes (and prunes) before the directory is
        // unlocked for another store.
        if let Some(snapshotter) = self.snapshotter.take() {
            let _ = snapshotter.join();
        }
    }
}

/// Hands every object of a store to the function it is given: `(resource, namespace, name,
/// object)`.
pub(crate) type Visit = Box<
    dyn FnOnce(&mut dyn FnMut(&str, &str, &str, &Value) -> io::Result<()>) -> io::Result<()> + Send,
>;

fn segment_name(rv: u64) -> String {
    format!("wal-{rv:020}.log")
}

fn snapshot_name(rv: u64) -> String {
    format!("snapshot-{rv:020}.snap")
}

/// The resourceVersion in a file name of the form `prefix<digits>suffix`.
fn parse_name(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    name.strip_prefix(prefix)?
        .strip_suffix(suffix)?
        .parse()
        .ok()
}

/// The segments and snapshots in `dir`, each sorted by resourceVersion.
fn listing(dir: &Path) -> io::Result<(Vec<u64>, Vec<u64>)> {
    let mut segments = Vec::new();
    let mut snapshots = Vec::new();
    for entry in fs::read_dir(dir)? {
        let name = entry?.file_name();
        let name = name.to_string_lossy();
        if let Some(rv) = parse_name(&name, "wal-", ".log") {
            segments.push(rv);
        } else if let Some(rv) = parse_name(&name, "snapshot-", ".snap") {
            snapshots.push(rv);
        }
    }
    segments.sort_unstable();
    snapshots.sort_unstable();
    Ok((segments, snapshots))
}

/// Appends one frame (length, CRC-32, payload) to `out`.
fn frame(out: &mut Vec<u8>, payload: &[u8]) {
    let len = u32::try_from(payload.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Encodes a record as a frame into `out`.
fn encode(out: &mut Vec<u8>, rv: u64, res: &str, ns: &str, name: &str, obj: Option<&Value>) {
    let record = RecordOut {
        rv,
        r: res,
        ns,
        n: name,
        o: obj,
    };
    // Serializing a JSON value into memory cannot fail.
    let payload = serde_json::to_vec(&record).unwrap_or_default();
    frame(out, &payload);
}

/// Reads the frames of `bytes`: the payloads, and where the valid frames end (less than
/// `bytes.len()` when the rest is torn or corrupt).
fn frames(bytes: &[u8]) -> (Vec<&[u8]>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while bytes.len() - at >= 8 {
        let len = u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
        let crc = u32::from_le_bytes([bytes[at + 4], bytes[at + 5], bytes[at + 6], bytes[at + 7]]);
        let len = len as usize;
        if len > MAX_FRAME || bytes.len() - at - 8 < len {
            break;
        }
        let payload = &bytes[at + 8..at + 8 + len];
        if crc32fast::hash(payload) != crc {
            break;
        }
        out.push(payload);
        at += 8 + len;
    }
    (out, at)
}

/// Syncs a directory, so that files created or renamed in it survive a crash.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Writes the snapshot at `rv` (through a `.tmp` file, synced, renamed into place).
fn write_snapshot(dir: &Path, rv: u64, visit: Visit) -> io::Result<()> {
    let tmp = dir.join(format!("{}.tmp", snapshot_name(rv)));
    let mut out = BufWriter::with_capacity(1 << 20, File::create(&tmp)?);
    let mut buf = Vec::new();
    let header = serde_json::to_vec(&Header { snapshot: rv }).map_err(io::Error::other)?;
    frame(&mut buf, &header);
    let mut count = 0u64;
    visit(&mut |res, ns, name, obj| {
        encode(&mut buf, 0, res, ns, name, Some(obj));
        count += 1;
        out.write_all(&buf)?;
        buf.clear();
        Ok(())
    })?;
    let footer = serde_json::to_vec(&Footer { count }).map_err(io::Error::other)?;
    frame(&mut buf, &footer);
    out.write_all(&buf)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, dir.join(snapshot_name(rv)))?;
    sync_dir(dir)
}

/// Reads a snapshot: its resourceVersion and objects, or why it is unusable.
fn read_snapshot(path: &Path) -> Result<(u64, Objects), String> {
    let bytes = fs::read(path).map_err(|e| e.to_string())?;
    let (payloads, end) = frames(&bytes);
    if end != bytes.len() {
        return Err(format!("unreadable frame at byte {end}"));
    }
    let (Some(first), Some(last)) = (payloads.first(), payloads.last()) else {
        return Err("empty".into());
    };
    let header: Header = serde_json::from_slice(first).map_err(|e| format!("bad header: {e}"))?;
    let footer: Footer = match payloads.len() {
        n if n >= 2 => serde_json::from_slice(last).map_err(|e| format!("bad footer: {e}"))?,
        _ => return Err("no footer: the snapshot is incomplete".into()),
    };
    let body = &payloads[1..payloads.len() - 1];
    if footer.count != body.len() as u64 {
        return Err(format!(
            "the footer counts {} objects, the snapshot holds {}",
            footer.count,
            body.len()
        ));
    }
    let mut objects = Objects::new();
    for payload in body {
        let rec: RecordIn =
            serde_json::from_slice(payload).map_err(|e| format!("bad object: {e}"))?;
        let Some(obj) = rec.o else {
            return Err("an object frame without an object".into());
        };
        objects
            .entry(rec.r)
            .or_default()
            .insert((rec.ns, rec.n), Arc::new(obj));
    }
    Ok((header.snapshot, objects))
}

/// Deletes the segments and snapshots no kept snapshot needs: the two newest snapshots are
/// kept, with every segment from the older one's resourceVersion on.
fn prune(dir: &Path) -> io::Result<()> {
    let (segments, snapshots) = listing(dir)?;
    if snapshots.len() < 2 {
        return Ok(());
    }
    let keep_from = snapshots[snapshots.len() - 2];
    for rv in &snapshots[..snapshots.len() - 2] {
        fs::remove_file(dir.join(snapshot_name(*rv)))?;
    }
    // A segment is needed when it may hold a record after `keep_from`: the last one starting
    // at or before `keep_from + 1`, and every later one.
    let first_needed = segments
        .iter()
        .copied()
        .filter(|s| *s <= keep_from + 1)
        .max()
        .unwrap_or(0);
    for rv in segments.iter().filter(|s| **s < first_needed) {
        fs::remove_file(dir.join(segment_name(*rv)))?;
    }
    Ok(())
}

/// Opens (creating it when needed) the data directory `dir`: locks it, recovers what it holds
/// (`None` for a new directory), and starts the log's writer thread on a new segment. A
/// restored store continues at the answered resourceVersion, logged before this returns.
pub(crate) fn open(dir: &Path) -> Result<(Log, Option<Recovered>, u64), String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what}: {e}");
    fs::create_dir_all(dir).map_err(|e| fail("creating it", &e))?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join("LOCK"))
        .map_err(|e| fail("opening its LOCK file", &e))?;
    if let Err(e) = lock.try_lock() {
        return Err(format!("in use by another server ({e})"));
    }
    let (segments, snapshots) = listing(dir).map_err(|e| fail("listing it", &e))?;
    for entry in fs::read_dir(dir).map_err(|e| fail("listing it", &e))? {
        let path = entry.map_err(|e| fail("listing it", &e))?.path();
        if path.extension().is_some_and(|e| e == "tmp") {
            // A snapshot that was never finished.
            let _ = fs::remove_file(path);
        }
    }
    let recovered = if segments.is_empty() && snapshots.is_empty() {
        None
    } else {
        Some(recover(dir, &segments, &snapshots)?)
    };
    let start = recovered.as_ref().map_or(0, |r| r.rv + RESTART_GAP);
    let path = dir.join(segment_name(start.max(1)));
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| fail(&format!("creating {}", path.display()), &e))?;
    if recovered.is_some() {
        // The restart itself is logged: a later restart continues above it, even when
        // nothing else is written meanwhile.
        let mut buf = Vec::new();
        encode(&mut buf, start, "", "", "", None);
        file.write_all(&buf)
            .and_then(|()| file.sync_data())
            .map_err(|e| fail(&format!("writing {}", path.display()), &e))?;
    }
    sync_dir(dir).map_err(|e| fail("syncing it", &e))?;
    let (progress, _) = tokio::sync::watch::channel((0, false));
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        work: Condvar::new(),
        synced: Condvar::new(),
        progress,
    });
    let writer = {
        let shared = shared.clone();
        let dir = dir.to_path_buf();
        std::thread::Builder::new()
            .name("crt-wal".into())
            .spawn(move || write_loop(&shared, &dir, file))
            .map_err(|e| fail("starting the log writer", &e))?
    };
    let log = Log {
        shared,
        dir: dir.to_path_buf(),
        writer: Some(writer),
        snapshotter: None,
        since_snapshot: 0,
        snapshotting: Arc::new(AtomicBool::new(false)),
        _lock: lock,
    };
    Ok((log, recovered, start))
}

/// Loads the newest readable snapshot and replays the log after it.
fn recover(dir: &Path, segments: &[u64], snapshots: &[u64]) -> Result<Recovered, String> {
    let mut base = None;
    let mut problems = Vec::new();
    for rv in snapshots.iter().rev() {
        let path = dir.join(snapshot_name(*rv));
        match read_snapshot(&path) {
            Ok(found) => {
                base = Some(found);
                break;
            }
            Err(e) => {
                tracing::warn!("skipping snapshot {}: {e}", path.display());
                problems.push(format!("{}: {e}", path.display()));
            }
        }
    }
    let (base_rv, mut objects) = base.unwrap_or_default();
    // The log must reach back to the snapshot (or to the beginning without one).
    if let Some(first) = segments.first()
        && *first > base_rv + 1
    {
        let mut msg = format!(
            "the log starts at resourceVersion {first}, after {}",
            if base_rv == 0 {
                "the beginning (no readable snapshot)".to_string()
            } else {
                format!("the snapshot at {base_rv}")
            }
        );
        if !problems.is_empty() {
            msg.push_str(&format!("; unreadable snapshots: {}", problems.join("; ")));
        }
        return Err(msg);
    }
    if segments.is_empty() && !problems.is_empty() {
        return Err(format!(
            "no readable snapshot and no log: {}",
            problems.join("; ")
        ));
    }
    let mut rv = base_rv;
    for (i, seg) in segments.iter().enumerate() {
        let path = dir.join(segment_name(*seg));
        let mut bytes = Vec::new();
        File::open(&path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        let (payloads, end) = frames(&bytes);
        if end != bytes.len() {
            if i + 1 != segments.len() {
                return Err(format!(
                    "{}: unreadable record at byte {end}, and later segments follow (not a torn write)",
                    path.display()
                ));
            }
            tracing::warn!(
                "{}: dropping a torn record at byte {end} ({} bytes)",
                path.display(),
                bytes.len() - end
            );
            OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_len(end as u64).and_then(|()| f.sync_all()))
                .map_err(|e| format!("truncating {}: {e}", path.display()))?;
        }
        for (n, payload) in payloads.iter().enumerate() {
            let rec: RecordIn = serde_json::from_slice(payload)
                .map_err(|e| format!("{}: record {n} is not a log record: {e}", path.display()))?;
            if rec.rv <= base_rv {
                continue;
            }
            rv = rv.max(rec.rv);
            if rec.r.is_empty() {
                // A restart marker.
                continue;
            }
            let objs = objects.entry(rec.r).or_default();
            match rec.o {
                Some(obj) => {
                    objs.insert((rec.ns, rec.n), Arc::new(obj));
                }
                None => {
                    objs.remove(&(rec.ns, rec.n));
                }
            }
        }
    }
    objects.retain(|_, objs| !objs.is_empty());
    Ok(Recovered { rv, objects })
}

/// The writer thread: takes what is queued, writes it, syncs once, publishes the progress.
fn write_loop(shared: &Shared, dir: &Path, mut file: File) {
    let mut buf = Vec::with_capacity(1 << 16);
    loop {
        let (items, target, closing) = {
            let mut q = shared.queue.lock();
            while q.items.is_empty() && !q.closing {
                shared.work.wait(&mut q);
            }
            (std::mem::take(&mut q.items), q.appended, q.closing)
        };
        if items.is_empty() && closing {
            return;
        }
        let written = write_batch(dir, &mut file, &mut buf, items);
        let mut q = shared.queue.lock();
        match written {
            Ok(()) => {
                q.synced = target;
                shared.progress.send_replace((target, false));
            }
            Err(e) => {
                let msg = format!("the write-ahead log in {} failed: {e}", dir.display());
                tracing::error!("{msg}");
                q.failed = Some(msg);
                shared.progress.send_replace((q.synced, true));
            }
        }
        let failed = q.failed.is_some();
        drop(q);
        shared.synced.notify_all();
        if failed {
            return;
        }
    }
}

/// Writes a batch of items and syncs the segment they end in.
fn write_batch(dir: &Path, file: &mut File, buf: &mut Vec<u8>, items: Vec<Item>) -> io::Result<()> {
    buf.clear();
    for item in items {
        match item {
            Item::Change { rv, res, key, obj } => {
                encode(buf, rv, &res, &key.0, &key.1, obj.as_deref());
            }
            Item::Rotate(first) => {
                file.write_all(buf)?;
                buf.clear();
                file.sync_data()?;
                *file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(segment_name(first)))?;
                sync_dir(dir)?;
            }
        }
    }
    file.write_all(buf)?;
    buf.clear();
    file.sync_data()
}
