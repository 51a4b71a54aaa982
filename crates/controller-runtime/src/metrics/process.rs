//! Process metrics: what Prometheus' process collector (client_golang's
//! `collectors.NewProcessCollector`, registered by controller-runtime's default registry)
//! exposes, read from `/proc/self` at each scrape.
//!
//! | metric | type |
//! | --- | --- |
//! | `process_cpu_seconds_total` | counter: user and system CPU time |
//! | `process_resident_memory_bytes` | gauge |
//! | `process_virtual_memory_bytes` | gauge |
//! | `process_open_fds` | gauge |
//! | `process_max_fds` | gauge: the soft limit on open files |
//! | `process_start_time_seconds` | gauge: since the Unix epoch |
//!
//! On Linux only: elsewhere [`register`] registers nothing and the families are absent, as
//! client_golang's collector is where it cannot read them. A value that cannot be read at a
//! scrape is left out of that scrape.

use prometheus_client::registry::Registry;

/// Registers the process collector with `registry`. Call it once per registry (a
/// [`Manager`](crate::manager::Manager) does for its own).
pub fn register(registry: &mut Registry) {
    #[cfg(target_os = "linux")]
    registry.register_collector(Box::new(linux::ProcessCollector));
    #[cfg(not(target_os = "linux"))]
    let _ = registry;
}

#[cfg(target_os = "linux")]
mod linux {
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
    use prometheus_client::metrics::MetricType;
    use prometheus_client::metrics::counter::ConstCounter;
    use prometheus_client::metrics::gauge::ConstGauge;

    /// Clock ticks per second of `/proc`'s times: the kernel's `USER_HZ`, 100 on every Linux
    /// architecture's user-space ABI.
    const USER_HZ: f64 = 100.0;

    /// Reads `/proc/self` at each scrape.
    #[derive(Debug)]
    pub(super) struct ProcessCollector;

    /// What one scrape read.
    #[derive(Debug, Default, PartialEq)]
    pub(super) struct Sample {
        pub cpu_seconds: Option<f64>,
        pub resident_bytes: Option<f64>,
        pub virtual_bytes: Option<f64>,
        pub open_fds: Option<f64>,
        pub max_fds: Option<f64>,
        pub start_time_seconds: Option<f64>,
    }

    impl Sample {
        fn read() -> Sample {
            let file = |path: &str| std::fs::read_to_string(path).ok();
            let stat = file("/proc/self/stat").and_then(|s| parse_stat(&s));
            let boot_time = file("/proc/stat").and_then(|s| parse_boot_time(&s));
            Sample {
                cpu_seconds: stat.as_ref().map(|s| s.cpu_ticks / USER_HZ),
                resident_bytes: file("/proc/self/status").and_then(|s| parse_rss(&s)),
                virtual_bytes: stat.as_ref().map(|s| s.vsize),
                open_fds: std::fs::read_dir("/proc/self/fd")
                    .ok()
                    .map(|dir| dir.count() as f64),
                max_fds: file("/proc/self/limits").and_then(|s| parse_max_fds(&s)),
                start_time_seconds: stat
                    .zip(boot_time)
                    .map(|(stat, boot)| boot + stat.start_ticks / USER_HZ),
            }
        }
    }

    /// The fields of `/proc/self/stat` the collector reads.
    #[derive(Debug, PartialEq)]
    pub(super) struct Stat {
        /// utime + stime, in clock ticks.
        pub cpu_ticks: f64,
        /// The start time after boot, in clock ticks.
        pub start_ticks: f64,
        /// Virtual memory size in bytes.
        pub vsize: f64,
    }

    /// Parses `/proc/<pid>/stat`. The command name (field 2) is in parentheses and may hold
    /// spaces and parentheses: fields are counted after its last `)`.
    pub(super) fn parse_stat(text: &str) -> Option<Stat> {
        let (_, rest) = text.rsplit_once(')')?;
        // rest[0] is field 3 (state).
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| -> Option<f64> { fields.get(n - 3)?.parse().ok() };
        Some(Stat {
            cpu_ticks: field(14)? + field(15)?,
            start_ticks: field(22)?,
            vsize: field(23)?,
        })
    }

    /// `VmRSS` of `/proc/<pid>/status`, in bytes.
    pub(super) fn parse_rss(text: &str) -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
        let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024.0)
    }

    /// The soft limit of `Max open files` in `/proc/<pid>/limits`.
    pub(super) fn parse_max_fds(text: &str) -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with("Max open files"))?;
        let soft = line
            .trim_start_matches("Max open files")
            .split_whitespace()
            .next()?;
        match soft {
            "unlimited" => Some(f64::INFINITY),
            soft => soft.parse().ok(),
        }
    }

    /// `btime` of `/proc/stat`: the boot time, in seconds since the Unix epoch.
    pub(super) fn parse_boot_time(text: &str) -> Option<f64> {
        let line = text.lines().find(|l| l.starts_with("btime "))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    fn gauge(
        encoder: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        value: Option<f64>,
    ) -> Result<(), std::fmt::Error> {
        let Some(value) = value else {
            return Ok(());
        };
        let metric = ConstGauge::new(value);
        metric.encode(encoder.encode_descriptor(name, help, None, MetricType::Gauge)?)
    }

    impl Collector for ProcessCollector {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            let sample = Sample::read();
            if let Some(seconds) = sample.cpu_seconds {
                // Counters get their `_total` suffix from the encoder.
                let metric = ConstCounter::new(seconds);
                metric.encode(encoder.encode_descriptor(
                    "process_cpu_seconds",
                    "Total user and system CPU time spent in seconds.",
                    None,
                    MetricType::Counter,
                )?)?;
            }
            gauge(
                &mut encoder,
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                sample.resident_bytes,
            )?;
            gauge(
                &mut encoder,
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                sample.virtual_bytes,
            )?;
            gauge(
                &mut encoder,
                "process_open_fds",
                "Number of open file descriptors.",
                sample.open_fds,
            )?;
            gauge(
                &mut encoder,
                "process_max_fds",
                "Maximum number of open file descriptors.",
                sample.max_fds,
            )?;
            gauge(
                &mut encoder,
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                sample.start_time_seconds,
            )
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn stat_fields_are_counted_after_the_last_parenthesis() {
            // The command name holds a space and a parenthesis.
            let text = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 2000 0 0 0 \
                        150 50 0 0 20 0 9 0 123456 987654321 2500 18446744073709551615";
            assert_eq!(
                parse_stat(text),
                Some(Stat {
                    cpu_ticks: 200.0,
                    start_ticks: 123456.0,
                    vsize: 987654321.0,
                })
            );
            assert_eq!(parse_stat("garbage"), None);
        }

        #[test]
        fn status_limits_and_boot_time() {
            let status = "Name:\tcrt\nVmPeak:\t  20000 kB\nVmRSS:\t    1024 kB\n";
            assert_eq!(parse_rss(status), Some(1024.0 * 1024.0));
            let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                          Max cpu time              unlimited            unlimited            seconds   \n\
                          Max open files            1024                 524288               files     \n";
            assert_eq!(parse_max_fds(limits), Some(1024.0));
            assert_eq!(
                parse_boot_time("cpu  1 2 3\nbtime 1700000000\n"),
                Some(1.7e9)
            );
        }

        #[test]
        fn this_process_is_read() {
            let sample = Sample::read();
            assert!(sample.resident_bytes.unwrap() > 0.0);
            assert!(sample.open_fds.unwrap() >= 1.0);
            assert!(sample.max_fds.unwrap() >= sample.open_fds.unwrap());
            assert!(sample.cpu_seconds.is_some());
            assert!(sample.start_time_seconds.unwrap() > 1.0e9);
        }
    }
}
