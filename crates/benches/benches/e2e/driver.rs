//! The driver: starts the server and the contenders, tells them what to do, collects figures.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use super::procfs::cpu_seconds;
use super::report::Report;

/// One runtime with one set of options.
#[derive(Clone, Copy, Debug)]
pub struct Contender {
    /// Ours (Manager+Builder) or kube-runtime's `Controller`.
    pub ours: bool,
    /// Best options instead of the defaults.
    pub best: bool,
}

impl Contender {
    /// The four, in table order.
    pub const ALL: [Contender; 4] = [
        Contender {
            ours: true,
            best: false,
        },
        Contender {
            ours: false,
            best: false,
        },
        Contender {
            ours: true,
            best: true,
        },
        Contender {
            ours: false,
            best: true,
        },
    ];

    /// `ours`, `kube`, `ours-best`, `kube-best`.
    pub fn name(self) -> &'static str {
        match (self.ours, self.best) {
            (true, false) => "ours",
            (false, false) => "kube",
            (true, true) => "ours-best",
            (false, true) => "kube-best",
        }
    }
}

/// A child process of this binary in a role, spoken to by lines.
struct Role {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    what: String,
}

impl Role {
    fn spawn(what: String, env: &[(&str, String)]) -> Role {
        let mut command = Command::new(std::env::current_exe().expect("this binary"));
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting {what}: {e}"));
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Role {
            child,
            stdin,
            lines,
            what,
        }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap_or_else(|e| panic!("writing to {}: {e}", self.what));
    }

    /// The next line starting with `word`, split into its other words.
    fn expect(&mut self, word: &str) -> Vec<String> {
        loop {
            let line = match self.lines.next() {
                Some(Ok(line)) => line,
                _ => panic!("{} ended before answering {word}", self.what),
            };
            let mut words = line.split_whitespace().map(str::to_string);
            match words.next().as_deref() {
                Some(w) if w == word => return words.collect(),
                Some("FAILED") => panic!("{}: {line}", self.what),
                _ => {}
            }
        }
    }

    fn stop(mut self) {
        let _ = writeln!(self.stdin, "stop");
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn numbers(words: &[String]) -> Vec<f64> {
    words
        .iter()
        .map(|w| w.parse().unwrap_or(f64::NAN))
        .collect()
}

/// The settings of a run, from the environment.
struct Settings {
    sizes: Vec<usize>,
    rounds: usize,
    scenarios: Vec<String>,
    contenders: Vec<Contender>,
    parents: usize,
    churn: Option<usize>,
    rate: f64,
}

impl Settings {
    fn from_env() -> Settings {
        // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing: run tiny then.
        let benching = std::env::args().any(|a| a == "--bench");
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let list = |name: &str| -> Option<Vec<String>> {
            var(name).map(|v| v.split(',').map(|s| s.trim().to_string()).collect())
        };
        let number = |name: &str| var(name).and_then(|v| v.trim().parse::<usize>().ok());
        let sizes = list("CRT_E2E_SIZES")
            .map(|s| s.iter().filter_map(|n| n.parse().ok()).collect())
            .unwrap_or(if benching {
                vec![10_000, 100_000]
            } else {
                vec![100]
            });
        let scenarios = list("CRT_E2E_ONLY")
            .unwrap_or_else(|| vec!["cold".into(), "churn".into(), "owners".into()]);
        let contenders = list("CRT_E2E_CONTENDERS").map_or(Contender::ALL.to_vec(), |names| {
            Contender::ALL
                .into_iter()
                .filter(|c| names.iter().any(|n| n == c.name()))
                .collect()
        });
        Settings {
            sizes,
            rounds: number("CRT_E2E_ROUNDS").unwrap_or(if benching { 3 } else { 1 }),
            scenarios,
            contenders,
            parents: number("CRT_E2E_PARENTS").unwrap_or(if benching { 1_000 } else { 10 }),
            churn: number("CRT_E2E_CHURN"),
            rate: number("CRT_E2E_RATE").unwrap_or(2_000) as f64,
        }
    }

    fn wants(&self, scenario: &str) -> bool {
        self.scenarios.iter().any(|s| s == scenario)
    }
}

/// The driver: every scenario, every contender, every round; then the table and the JSON.
pub fn run() {
    let settings = Settings::from_env();
    let mut report = Report::new(
        settings
            .contenders
            .iter()
            .map(|c| c.name().to_string())
            .collect(),
    );
    report.note_load("start");
    for (s, &n) in settings.sizes.iter().enumerate() {
        let first = s == 0;
        let churn = first && settings.wants("churn");
        let owners = first && settings.wants("owners");
        if !(settings.wants("cold") || churn || owners) {
            continue;
        }
        let parents = if owners { settings.parents } else { 0 };
        let mut server = Role::spawn(
            format!("server ({n} objects)"),
            &[
                ("CRT_E2E_ROLE", "server".into()),
                ("CRT_E2E_OBJECTS", n.to_string()),
                ("CRT_E2E_PARENTS", parents.to_string()),
            ],
        );
        let mut kubeconfig = String::new();
        loop {
            match server.lines.next() {
                Some(Ok(line)) if line == "READY" => break,
                Some(Ok(line)) if line.starts_with("FLOOR ") => {
                    let secs: f64 = line[6..].trim().parse().unwrap_or(f64::NAN);
                    report.floor(n, secs);
                }
                Some(Ok(line)) => {
                    kubeconfig.push_str(&line);
                    kubeconfig.push('\n');
                }
                _ => panic!("the server process ended before it was ready"),
            }
        }
        for _ in 0..settings.rounds {
            for (c, &contender) in settings.contenders.iter().enumerate() {
                if settings.wants("cold") || churn {
                    let (secs, mut role, synced) = start(&kubeconfig, contender, false, n);
                    let scenario = format!("1. cold start, {n} ConfigMaps");
                    report.add(&scenario, "time to all reconciled (s)", c, secs);
                    report.add(&scenario, "CPU to all reconciled (s)", c, synced[0]);
                    report.add(&scenario, "peak RSS (MB)", c, synced[2] / 1e6);
                    let heap = synced[1] / n as f64;
                    report.add(&scenario, "retained heap per object (B)", c, heap);
                    if churn {
                        let fixed = settings.churn.unwrap_or(n / 2).max(1);
                        let rate = settings.rate;
                        let windows = [
                            (
                                format!("2. churn, {fixed} updates at {rate}/s over {n}"),
                                fixed,
                                rate,
                            ),
                            (
                                format!("2. churn, {n} updates at saturation over {n}"),
                                n,
                                0.0,
                            ),
                        ];
                        for (scenario, updates, rate) in windows {
                            let churn = Churn {
                                target: "bench",
                                updates,
                                rate,
                                objects: n,
                            };
                            window(&mut report, &scenario, c, &mut role, &mut server, churn);
                        }
                    }
                    role.stop();
                }
                if owners && parents > 0 {
                    let (secs, mut role, _) = start(&kubeconfig, contender, true, parents);
                    let scenario = format!("3. owners, {parents} parents x 10 children");
                    report.add(&scenario, "time to all parents reconciled (s)", c, secs);
                    let churn = Churn {
                        target: "owners",
                        updates: parents,
                        rate: 0.0,
                        objects: parents,
                    };
                    window(&mut report, &scenario, c, &mut role, &mut server, churn);
                    role.stop();
                }
            }
        }
        server.stop();
    }
    report.note_load("end");
    report.print_and_save();
}

/// Starts a contender and waits for its `SYNCED`: the seconds from spawn, the role and the
/// `SYNCED` figures (CPU s, retained heap B, peak RSS B).
fn start(
    kubeconfig: &str,
    contender: Contender,
    owners: bool,
    objects: usize,
) -> (f64, Role, Vec<f64>) {
    let began = Instant::now();
    let mut role = Role::spawn(
        format!("contender {} ({objects} objects)", contender.name()),
        &[
            ("CRT_E2E_ROLE", "contender".into()),
            (
                "CRT_E2E_RUNTIME",
                if contender.ours { "ours" } else { "kube" }.into(),
            ),
            (
                "CRT_E2E_BEST",
                if contender.best { "1" } else { "0" }.into(),
            ),
            (
                "CRT_E2E_SCENARIO",
                if owners { "owners" } else { "bench" }.into(),
            ),
            ("CRT_E2E_OBJECTS", objects.to_string()),
            ("CRT_E2E_KUBECONFIG", kubeconfig.to_string()),
        ],
    );
    let synced = numbers(&role.expect("SYNCED"));
    (began.elapsed().as_secs_f64(), role, synced)
}

/// What a measured window asks the server to write.
struct Churn {
    /// `bench` (the ConfigMaps) or `owners` (children of the parents).
    target: &'static str,
    updates: usize,
    /// Updates a second; 0: saturation.
    rate: f64,
    /// Objects the contender tracks (ConfigMaps, or parents).
    objects: usize,
}

/// Scenario 4's name: the owners window's CPU per reconcile.
const COST: &str = "4. cost per reconcile: parent + 2 children read from the cache";

/// One measured window: mark, churn on the server, await the contender's convergence.
fn window(
    report: &mut Report,
    scenario: &str,
    c: usize,
    role: &mut Role,
    server: &mut Role,
    churn: Churn,
) {
    let Churn {
        target,
        updates,
        rate,
        objects,
    } = churn;
    let server_pid = server.child.id();
    role.send("mark");
    role.expect("MARKED");
    let server_cpu = cpu_seconds(server_pid);
    server.send(&format!("churn {target} {updates} {rate}"));
    let fin = server.expect("FINAL");
    let server_cpu = cpu_seconds(server_pid) - server_cpu;
    let writing = fin
        .first()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(f64::NAN);
    let versions = fin[1..].join(" ");
    role.send(&format!("await {versions}"));
    let done = numbers(&role.expect("DONE"));
    let [
        secs,
        reconciles,
        cpu,
        p50,
        p99,
        max,
        _count,
        matched,
        allocs,
        bytes,
    ] = done[..]
    else {
        panic!("bad DONE line from {}", role.what);
    };
    report.add(scenario, "change-to-reconcile p50 (ms)", c, p50 / 1e3);
    report.add(scenario, "change-to-reconcile p99 (ms)", c, p99 / 1e3);
    report.add(scenario, "change-to-reconcile max (ms)", c, max / 1e3);
    report.add(scenario, "time until all converged (s)", c, secs);
    report.add(scenario, "reconciles per second", c, reconciles / secs);
    let cost = if target == "owners" { COST } else { scenario };
    let per = |v: f64| v / reconciles.max(1.0);
    report.add(cost, "CPU per reconcile (us)", c, per(cpu) * 1e6);
    report.add(cost, "allocations per reconcile", c, per(allocs));
    report.add(cost, "bytes allocated per reconcile", c, per(bytes));
    // The writer (one task patching through the server's storage, in the server process):
    // if the contenders reconcile as fast as it writes, the window measures the writer.
    report.add(
        scenario,
        "writer's updates per second",
        c,
        updates as f64 / writing,
    );
    report.add(
        scenario,
        "server CPU while writing (cores)",
        c,
        server_cpu / writing,
    );
    report.add(
        scenario,
        "objects whose last version was reconciled",
        c,
        matched,
    );
    if matched as usize != objects {
        eprintln!(
            "e2e: {}: {matched} of {objects} objects had their last version reconciled",
            role.what
        );
        report.fail(format!(
            "{scenario}: {} converged on {matched} of {objects}",
            role.what
        ));
    }
}
