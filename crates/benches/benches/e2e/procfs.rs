//! What the driver and the contenders read about a process from `/proc`, and the clock the
//! processes share.

use std::collections::HashMap;
use std::process::Command;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// CPU seconds (user + system, all threads) a process has used: nanosecond-precise from the
/// scheduler's per-thread `/proc/PID/task/*/schedstat` (first field: ns on a CPU), or in clock
/// ticks (10 ms) from `/proc/PID/stat` where the kernel has no schedstat.
///
/// `/proc/PID/schedstat` alone is the main thread's, so the threads are summed. A thread's time
/// vanishes from `task/` when it exits (`/proc/PID/stat` keeps it): each thread's last reading is
/// remembered here, so a thread that exits between two readings keeps what it had used at the
/// first (what it used after that is lost; the contenders' and the server's threads are tokio
/// workers, which live as long as the process).
pub fn cpu_seconds(pid: u32) -> f64 {
    cpu_nanos(pid).map_or_else(|| cpu_ticks_seconds(pid), |ns| ns as f64 / 1e9)
}

/// CPU seconds the calling thread has used (its schedstat, ns), or `None` where the kernel has
/// no schedstat.
pub fn thread_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = stat.split_whitespace().next()?.parse().ok()?;
    Some(ns as f64 / 1e9)
}

/// Whether [`cpu_seconds`] reads schedstat (ns) rather than ticks, for the report's notes.
pub fn cpu_in_nanos() -> bool {
    cpu_nanos(std::process::id()).is_some()
}

/// The sum over the process's threads, living and exited, of their ns on a CPU.
fn cpu_nanos(pid: u32) -> Option<u64> {
    static SEEN: Mutex<Option<HashMap<(u32, u32), u64>>> = Mutex::new(None);
    /// Time of threads whose id was reused by a newer thread, per process.
    static RETIRED: Mutex<Option<HashMap<u32, u64>>> = Mutex::new(None);
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut now = Vec::new();
    for task in tasks.flatten() {
        let Some(tid) = task
            .file_name()
            .to_str()
            .and_then(|t| t.parse::<u32>().ok())
        else {
            continue;
        };
        // A thread may exit between the listing and the read: skip it (remembered below).
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        let Some(ns) = stat
            .split_whitespace()
            .next()
            .and_then(|f| f.parse::<u64>().ok())
        else {
            continue;
        };
        now.push((tid, ns));
    }
    if now.is_empty() {
        return None;
    }
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(HashMap::new);
    let mut retired = RETIRED.lock().unwrap_or_else(|e| e.into_inner());
    let retired = retired.get_or_insert_with(HashMap::new);
    for (tid, ns) in now {
        let last = seen.entry((pid, tid)).or_insert(0);
        if ns < *last {
            // A new thread with an exited one's id.
            *retired.entry(pid).or_insert(0) += *last;
        }
        *last = ns;
    }
    let living_and_exited: u64 = seen
        .iter()
        .filter(|((p, _), _)| *p == pid)
        .map(|(_, ns)| ns)
        .sum();
    Some(living_and_exited + retired.get(&pid).copied().unwrap_or(0))
}

/// CPU seconds from `/proc/PID/stat`'s utime and stime, in clock ticks.
fn cpu_ticks_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let Some(end) = stat.rfind(')') else {
        return 0.0;
    };
    // Fields after the command: state is field 3; utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat[end + 2..].split(' ').collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / clock_ticks_per_second()
}

/// Peak resident set size in bytes (`VmHWM` of `/proc/PID/status`).
pub fn peak_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn clock_ticks_per_second() -> f64 {
    static HZ: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *HZ.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Nanoseconds since the Unix epoch: the write stamp the server puts in an annotation and the
/// contenders subtract from their reconcile time (one machine, one clock).
pub fn epoch_nanos() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}
