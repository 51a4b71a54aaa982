//! The stable driver: a bounded, reproducible mutation fuzzer that needs no nightly toolchain,
//! run by the test suite for every target.
//!
//! [`run`] replays a target's committed corpus (`corpus/<target>/`), then feeds it inputs
//! mutated from the corpus (byte flips, inserts, deletes, runs copied within an input, splices
//! between two entries, dictionary tokens) drawn from an RNG seeded by the target's name, for
//! [`Budget::iterations`] inputs or [`Budget::seconds`], whichever ends first. A panic is caught;
//! the input that caused it is written to `target/fuzz-crashes/<target>-<hash>` and [`run`]
//! answers its path (the test fails naming it). Replay it with
//! `CRT_FUZZ_REPLAY=path cargo test -p crt-fuzz --test fuzz <target>`.
//!
//! It finds what is a few mutations away from the corpus; coverage-guided runs (cargo-fuzz, see
//! the README) find what is far away, and their interesting inputs join the corpus.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Tokens the mutator inserts: JSON structure, Kubernetes field names and patch directives,
/// selector and query syntax, protobuf tags and CEL.
pub const DICTIONARY: &[&[u8]] = &[
    b"{\"",
    b"\":",
    b"\"}",
    b"[]",
    b"{}",
    b"null",
    b"true",
    b"-1",
    b"1e999",
    b"\"\\u0000\"",
    b"\"apiVersion\":\"v1\"",
    b"\"kind\":\"Pod\"",
    b"\"metadata\"",
    b"\"name\"",
    b"\"labels\"",
    b"\"managedFields\"",
    b"\"resourceVersion\"",
    b"\"spec\"",
    b"\"containers\"",
    b"\"ports\"",
    b"\"env\"",
    b"\"$patch\":\"delete\"",
    b"\"$patch\":\"replace\"",
    b"\"$retainKeys\"",
    b"\"$setElementOrder/containers\"",
    b"\"$deleteFromPrimitiveList/finalizers\"",
    b"\"op\":\"add\"",
    b"\"op\":\"move\"",
    b"\"path\":\"/",
    b"\"from\":\"/",
    b"/-",
    b"~1",
    b"labelSelector=",
    b"fieldSelector=",
    b"watch=1",
    b"resourceVersion=",
    b"limit=",
    b"continue=",
    b"sendInitialEvents=true",
    b"dryRun=All",
    b"metadata.name",
    b"status.phase",
    b"%",
    b"%00",
    b" in (",
    b" notin (",
    b"!=",
    b"==",
    b"!",
    b",",
    b"/api/v1/",
    b"/apis/",
    b"namespaces/default/",
    b"k8s\x00",
    b"\x0a",
    b"\x12",
    b"\x1a",
    b"\x22",
    b"\x08",
    b"\xff\xff\xff\xff\x0f",
    b"\"type\":\"object\"",
    b"\"properties\"",
    b"\"items\"",
    b"\"additionalProperties\"",
    b"\"x-kubernetes-validations\":[{\"rule\":\"",
    b"\"x-kubernetes-preserve-unknown-fields\":true",
    b"\"x-kubernetes-int-or-string\":true",
    b"\"x-kubernetes-list-type\":\"map\"",
    b"\"x-kubernetes-list-map-keys\":[\"",
    b"\"default\"",
    b"\"format\":\"",
    b"\"pattern\":\"",
    b"self",
    b"oldSelf",
    b".all(x, ",
    b"size(self)",
    b"has(self.",
    b"\"type\":\"ADDED\"",
    b"\"type\":\"BOOKMARK\"",
    b"\"type\":\"ERROR\"",
    b"\"object\":",
    b"\n",
    b"\x00",
];

/// How long a run goes on after replaying the corpus.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Mutated inputs to try.
    pub iterations: u64,
    /// Stop after this long even if inputs remain.
    pub seconds: Option<f64>,
}

impl Budget {
    /// `iterations` inputs, unless `CRT_FUZZ_ITERS` (a number of inputs) or `CRT_FUZZ_SECS` (a
    /// time; the iterations are then unbounded) say otherwise.
    pub fn from_env(iterations: u64) -> Budget {
        let secs = std::env::var("CRT_FUZZ_SECS")
            .ok()
            .and_then(|s| s.parse::<f64>().ok());
        let iters = std::env::var("CRT_FUZZ_ITERS")
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        match (iters, secs) {
            (Some(n), s) => Budget {
                iterations: n,
                seconds: s,
            },
            (None, Some(s)) => Budget {
                iterations: u64::MAX,
                seconds: Some(s),
            },
            (None, None) => Budget {
                iterations,
                seconds: None,
            },
        }
    }
}

/// What a run did.
#[derive(Debug, Clone)]
pub struct Report {
    /// Corpus entries replayed.
    pub corpus: usize,
    /// Inputs run in all (corpus and mutated).
    pub executions: u64,
    /// How long it took.
    pub elapsed: Duration,
}

/// The committed corpus of `target`: its files, sorted by name.
pub fn corpus(target: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(target);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    paths.sort();
    paths.iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Where crashing inputs are written: `target/fuzz-crashes/` of the workspace (or
/// `CARGO_TARGET_DIR`).
pub fn crash_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("fuzz-crashes")
}

/// Runs `f` on `input`, answering the panic's message if it panicked.
pub fn catch(f: fn(&[u8]), input: &[u8]) -> Result<(), String> {
    panic::catch_unwind(AssertUnwindSafe(|| f(input))).map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "a panic without a message".into())
    })
}

/// Replays `target`'s corpus into `f`, then mutated inputs within `budget`. `Err` names the
/// file the first crashing input was written to, and the panic's message.
pub fn run(target: &str, f: fn(&[u8]), budget: Budget) -> Result<Report, String> {
    let start = Instant::now();
    let mut seeds = corpus(target);
    if seeds.is_empty() {
        seeds.push(Vec::new());
    }
    let mut executions = 0;
    for input in &seeds {
        executions += 1;
        catch(f, input).map_err(|msg| crashed(target, input, &msg))?;
    }
    let mut rng = StdRng::seed_from_u64(seed_of(target));
    let mut n = 0;
    while n < budget.iterations {
        if budget
            .seconds
            .is_some_and(|s| start.elapsed().as_secs_f64() >= s)
        {
            break;
        }
        n += 1;
        let input = mutate(&mut rng, &seeds);
        executions += 1;
        catch(f, &input).map_err(|msg| crashed(target, &input, &msg))?;
    }
    Ok(Report {
        corpus: seeds.len(),
        executions,
        elapsed: start.elapsed(),
    })
}

/// A stable seed per target (FNV-1a of its name), so that runs are reproducible.
fn seed_of(target: &str) -> u64 {
    target.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn crashed(target: &str, input: &[u8], msg: &str) -> String {
    let dir = crash_dir();
    let path = dir.join(format!("{target}-{:016x}", seed_of_bytes(input)));
    let written = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input));
    match written {
        Ok(()) => format!(
            "{target} panicked ({msg}) on the input written to {}",
            path.display()
        ),
        Err(e) => format!(
            "{target} panicked ({msg}) on {input:?} (not written to {}: {e})",
            path.display()
        ),
    }
}

fn seed_of_bytes(input: &[u8]) -> u64 {
    input.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The most bytes a mutated input grows to.
const MAX_LEN: usize = 16 << 10;

/// One input: a corpus entry with one to eight mutations stacked.
pub fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut data = seeds[rng.random_range(0..seeds.len())].clone();
    let rounds = 1 << rng.random_range(0..4);
    for _ in 0..rounds {
        mutate_once(rng, &mut data, seeds);
    }
    data.truncate(MAX_LEN);
    data
}

fn mutate_once(rng: &mut StdRng, data: &mut Vec<u8>, seeds: &[Vec<u8>]) {
    let len = data.len();
    match rng.random_range(0..9) {
        // Flip a bit.
        0 if len > 0 => {
            let at = rng.random_range(0..len);
            data[at] ^= 1 << rng.random_range(0..8);
        }
        // Set a byte to an interesting value.
        1 if len > 0 => {
            let at = rng.random_range(0..len);
            data[at] = *[
                0u8, 0x7f, 0x80, 0xff, b'"', b'{', b'}', b'[', b']', b'\\', b'=', b',',
            ]
            .get(rng.random_range(0..12))
            .unwrap_or(&0);
        }
        // Insert random bytes.
        2 => {
            let at = rng.random_range(0..=len);
            let n = rng.random_range(1..=8);
            let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            data.splice(at..at, bytes);
        }
        // Delete a run.
        3 if len > 0 => {
            let at = rng.random_range(0..len);
            let n = rng.random_range(1..=(len - at).min(32));
            data.drain(at..at + n);
        }
        // Copy a run elsewhere in the input (nesting, repetition).
        4 if len > 0 => {
            let from = rng.random_range(0..len);
            let n = rng.random_range(1..=(len - from).min(64));
            let run = data[from..from + n].to_vec();
            let at = rng.random_range(0..=len);
            data.splice(at..at, run);
        }
        // Splice: this input's head with another entry's tail.
        5 => {
            let other = &seeds[rng.random_range(0..seeds.len())];
            let cut = rng.random_range(0..=len);
            let from = rng.random_range(0..=other.len());
            data.truncate(cut);
            data.extend_from_slice(&other[from..]);
        }
        // Truncate.
        6 if len > 0 => {
            data.truncate(rng.random_range(0..len));
        }
        // Overwrite with or insert a dictionary token.
        _ => {
            let token = DICTIONARY[rng.random_range(0..DICTIONARY.len())];
            let at = rng.random_range(0..=len);
            if rng.random_bool(0.5) || at + token.len() > len {
                data.splice(at..at, token.iter().copied());
            } else {
                data[at..at + token.len()].copy_from_slice(token);
            }
        }
    }
}
