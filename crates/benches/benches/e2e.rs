//! End to end, beside kube-runtime 5.0: whole controllers, each in its own process,
//! against one embedded API server in another.
//!
//! This binary plays three roles, chosen by `CRT_E2E_ROLE`: the driver (no role: what `cargo
//! bench` runs), the API server (`server`, [`server`]) and a contender (`contender`: our
//! Manager+Builder controller, [`ours`], or kube-runtime's `Controller`, [`kube`]). The driver
//! starts one server per size, then each contender in turn, several rounds, and reports medians
//! with min-max in one table (written as JSON too):
//!
//! 1. cold start: N ConfigMaps of ~1.5 KB with managedFields; time from the contender's process
//!    start until a no-op reconciler has seen every object once, its CPU, peak RSS and the heap
//!    it retains per object;
//! 2. churn (on the first size): U updates spread over the objects at a fixed rate, then N at
//!    saturation; change-to-reconcile latency (the server writes its clock in an annotation),
//!    reconciles a second, CPU per reconcile, and that every object's last version was
//!    reconciled (the contender's last reconciled resourceVersion per object, compared with
//!    the server's);
//! 3. owners: P parents with 10 children each; one child change per parent at saturation; the
//!    latency from a child's change to its parent's reconcile;
//! 4. cost per reconcile: the owners reconciler reads its parent and two children from the
//!    cache; the contender's CPU, allocations and bytes allocated per reconcile in that window.
//!
//! CPU is read from the scheduler's per-thread `schedstat` (nanoseconds; 10 ms ticks where the
//! kernel has none); allocations are counted by a `stats_alloc` global allocator in each
//! contender, over the system allocator (`--features e2e-mimalloc`: over mimalloc). Each
//! measured window also reports the server's writer: its updates a second and the server
//! process's CPU (cores) while it wrote.
//!
//! Each runtime runs with its default options, then with its best (see `ours.rs`, `kube.rs`).
//!
//! ```sh
//! cargo bench --manifest-path crates/benches/Cargo.toml --bench e2e          # 10,000 and 100,000, 3 rounds
//! CRT_E2E_SIZES=10000 CRT_E2E_ROUNDS=1 CRT_E2E_ONLY=cold,churn \
//!     cargo bench --manifest-path crates/benches/Cargo.toml --bench e2e
//! ```
//!
//! Knobs: `CRT_E2E_SIZES` (comma-separated N), `CRT_E2E_ROUNDS`, `CRT_E2E_ONLY` (scenarios
//! among `cold`, `churn`, `owners`), `CRT_E2E_CONTENDERS` (among `ours`, `kube`, `ours-best`,
//! `kube-best`), `CRT_E2E_PARENTS` (owners scenario, default 1,000), `CRT_E2E_CHURN`
//! (fixed-rate updates, default N/2) and `CRT_E2E_RATE` (updates a second, default 2,000).
//! Under `cargo test --benches` (no `--bench` argument) it runs tiny: N=100, 10 parents, one
//! round.

#[path = "e2e/contender.rs"]
mod contender;
#[path = "e2e/driver.rs"]
mod driver;
#[path = "e2e/kube.rs"]
mod kube;
#[path = "e2e/ours.rs"]
mod ours;
#[path = "e2e/procfs.rs"]
mod procfs;
#[path = "e2e/report.rs"]
mod report;
#[path = "e2e/server.rs"]
mod server;

use std::sync::Arc;

use stats_alloc::StatsAlloc;

/// Counts every allocation (calls and bytes) and the live bytes, for the retained heap after a
/// cold start and the allocations per reconcile of a measured window. The system allocator
/// (glibc's), as an operator's binary has unless it chooses another; mimalloc with the
/// feature `e2e-mimalloc`.
#[cfg(not(feature = "e2e-mimalloc"))]
#[global_allocator]
static ALLOCATOR: StatsAlloc<std::alloc::System> = StatsAlloc::system();
#[cfg(feature = "e2e-mimalloc")]
#[global_allocator]
static ALLOCATOR: StatsAlloc<mimalloc::MiMalloc> = StatsAlloc::new(mimalloc::MiMalloc);

/// The allocator's counters now.
fn allocations() -> contender::Allocations {
    let stats = ALLOCATOR.stats();
    contender::Allocations {
        // A realloc adds its growth to `bytes_allocated` (its shrinking to `bytes_deallocated`).
        live: stats
            .bytes_allocated
            .saturating_sub(stats.bytes_deallocated),
        calls: stats.allocations + stats.reallocations,
        bytes: stats.bytes_allocated,
    }
}

fn main() {
    let env = |name: &str| std::env::var(name).unwrap_or_default();
    let number = |name: &str| env(name).parse::<usize>().unwrap_or(0);
    match env("CRT_E2E_ROLE").as_str() {
        "server" => server::run(number("CRT_E2E_OBJECTS"), number("CRT_E2E_PARENTS")),
        "contender" => run_contender(
            env("CRT_E2E_RUNTIME") == "ours",
            env("CRT_E2E_BEST") == "1",
            env("CRT_E2E_SCENARIO") == "owners",
            number("CRT_E2E_OBJECTS"),
            &env("CRT_E2E_KUBECONFIG"),
        ),
        _ => driver::run(),
    }
}

/// The contender role: one runtime's controller, and the conversation with the driver.
fn run_contender(ours: bool, best: bool, owners: bool, objects: usize, kubeconfig: &str) {
    let tally = Arc::new(contender::Tally::new(objects));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let heap_before = allocations().live;
    rt.block_on(async {
        let kc = kube_client::config::Kubeconfig::from_yaml(kubeconfig).expect("kubeconfig");
        let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("client config");
        let client = kube_client::Client::try_from(config).expect("client");
        let runtime = {
            let tally = tally.clone();
            async move {
                if ours {
                    ours::run(client, best, owners, tally).await;
                } else {
                    kube::run(client, best, owners, tally).await;
                }
            }
        };
        tokio::spawn(runtime);
        contender::converse(tally, heap_before, allocations).await;
    });
}
