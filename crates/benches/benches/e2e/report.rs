//! The figures: collected per scenario, metric and contender; printed as one table (median,
//! min-max; ratio ours / kube-runtime) and written as JSON.

use std::fmt::Write as _;

use serde_json::json;

use super::procfs::cpu_in_nanos;

/// Every figure of a run.
pub struct Report {
    contenders: Vec<String>,
    rows: Vec<Row>,
    loads: Vec<(String, String)>,
    failures: Vec<String>,
    /// Per size N, the CPU seconds one decode of each object takes (the cold start's floor).
    floors: Vec<(usize, f64)>,
}

struct Row {
    scenario: String,
    metric: String,
    /// Per contender, one value a round.
    values: Vec<Vec<f64>>,
}

/// Median, min and max.
fn summary(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some((v[v.len() / 2], v[0], v[v.len() - 1]))
}

/// Three significant digits or so.
fn short(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

impl Report {
    /// An empty report over these contenders (by name, in the driver's order).
    pub fn new(contenders: Vec<String>) -> Report {
        Report {
            contenders,
            rows: Vec::new(),
            loads: Vec::new(),
            failures: Vec::new(),
            floors: Vec::new(),
        }
    }

    /// The cold start's floor at `n` objects: `secs` of CPU to decode each object once.
    pub fn floor(&mut self, n: usize, secs: f64) {
        self.floors.push((n, secs));
    }

    /// One round's value of a metric for contender `c`.
    pub fn add(&mut self, scenario: &str, metric: &str, c: usize, value: f64) {
        let n = self.contenders.len();
        let at = match self
            .rows
            .iter()
            .position(|r| r.scenario == scenario && r.metric == metric)
        {
            Some(at) => at,
            None => {
                self.rows.push(Row {
                    scenario: scenario.into(),
                    metric: metric.into(),
                    values: vec![Vec::new(); n],
                });
                self.rows.len() - 1
            }
        };
        self.rows[at].values[c].push(value);
    }

    /// Records the machine's load average now (`/proc/loadavg`): wall-clock figures depend on it.
    pub fn note_load(&mut self, when: &str) {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        self.loads.push((when.into(), load.trim().into()));
    }

    /// A check that failed (a contender did not converge): reported, and the run fails.
    pub fn fail(&mut self, failure: String) {
        self.failures.push(failure);
    }

    fn cell(&self, row: &Row, name: &str) -> (String, Option<f64>) {
        let Some(c) = self.contenders.iter().position(|n| n == name) else {
            return ("-".into(), None);
        };
        match summary(&row.values[c]) {
            Some((median, min, max)) if row.values[c].len() > 1 => (
                format!("{} ({}-{})", short(median), short(min), short(max)),
                Some(median),
            ),
            Some((median, ..)) => (short(median), Some(median)),
            None => ("-".into(), None),
        }
    }

    /// Prints the table and writes the JSON (path printed); panics if a check failed.
    pub fn print_and_save(&self) {
        let mut table = String::from(
            "| scenario | metric | options | ours | kube-runtime 5.0 | ratio (ours/kube) |\n\
             | --- | --- | --- | ---: | ---: | ---: |\n",
        );
        let mut summaries = Vec::new();
        for row in &self.rows {
            for (options, ours, kube) in [
                ("default", "ours", "kube"),
                ("best", "ours-best", "kube-best"),
            ] {
                let ((o, om), (k, km)) = (self.cell(row, ours), self.cell(row, kube));
                if om.is_none() && km.is_none() {
                    continue;
                }
                let ratio = match (om, km) {
                    (Some(o), Some(k)) if k != 0.0 => format!("{:.2}x", o / k),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    table,
                    "| {} | {} | {options} | {o} | {k} | {ratio} |",
                    row.scenario, row.metric
                );
                summaries.push(json!({
                    "scenario": row.scenario, "metric": row.metric, "options": options,
                    "ours": om, "kube": km,
                }));
            }
        }
        print!("{table}");
        for &(n, floor) in &self.floors {
            let cpu = format!("1. cold start, {n} ConfigMaps");
            let times = |name: &str| {
                let row = self
                    .rows
                    .iter()
                    .find(|r| r.scenario == cpu && r.metric.starts_with("CPU"));
                match row.map(|r| self.cell(r, name).1) {
                    Some(Some(median)) => format!(" {name} {:.2}x", median / floor),
                    _ => String::new(),
                }
            };
            println!(
                "floor at {n}: one typed decode of each object takes {} s of one core; cold-start CPU / floor:{}{}{}{}",
                short(floor),
                times("ours"),
                times("kube"),
                times("ours-best"),
                times("kube-best"),
            );
        }
        for (when, load) in &self.loads {
            println!("load average at {when}: {load}");
        }
        let cpu_clock = if cpu_in_nanos() {
            "schedstat (ns)"
        } else {
            "/proc/PID/stat (clock ticks)"
        };
        println!("CPU read from {cpu_clock}");
        let raw: Vec<_> = self
            .rows
            .iter()
            .map(|r| {
                let values: serde_json::Map<_, _> = self
                    .contenders
                    .iter()
                    .zip(&r.values)
                    .map(|(c, v)| (c.clone(), json!(v)))
                    .collect();
                json!({"scenario": r.scenario, "metric": r.metric, "values": values})
            })
            .collect();
        let json = json!({
            "machine": {
                "cpus": std::thread::available_parallelism().map_or(0, |n| n.get()),
                "load": self.loads.iter().map(|(w, l)| json!({"at": w, "loadavg": l})).collect::<Vec<_>>(),
                "cpu_clock": cpu_clock,
            },
            "medians": summaries,
            "rounds": raw,
            "failures": self.failures,
            "floors": self.floors.iter().map(|(n, s)| json!({"objects": n, "cpu_seconds": s})).collect::<Vec<_>>(),
        });
        let path = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.ancestors().nth(3).map(|t| t.join("e2e-bench.json")))
            .unwrap_or_else(|| "e2e-bench.json".into());
        match std::fs::write(
            &path,
            serde_json::to_string_pretty(&json).unwrap_or_default(),
        ) {
            Ok(()) => println!("JSON: {}", path.display()),
            Err(e) => eprintln!("e2e: writing {}: {e}", path.display()),
        }
        assert!(
            self.failures.is_empty(),
            "e2e checks failed: {:?}",
            self.failures
        );
    }
}
