//! The Grafana dashboard against a live manager: every metric any panel (or variable) queries
//! is in what the manager's `/metrics` serves once it has reconciled, answered a webhook,
//! talked to the API server and won its lease.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use controller_runtime::CancellationToken;
use controller_runtime::builder::{ControllerBuilder, Input, WebhookBuilder};
use controller_runtime::controller::ControllerOptions;
use controller_runtime::envtest::Environment;
use controller_runtime::leaderelection::LeaderElectionConfig;
use controller_runtime::manager::{BindAddress, Manager, ManagerOptions};
use controller_runtime::metrics::GRAFANA_DASHBOARD;
use controller_runtime::reconcile::Action;
use controller_runtime::webhook::admission::{Request, ValidationResult, Validator};
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, PostParams};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The PromQL words that are not metric names: keywords, and the aggregation operators (which
/// may be followed by `by (...)` rather than their parenthesis).
const KEYWORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "offset",
    "bool",
    "and",
    "or",
    "unless",
    "inf",
    "nan",
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The metric names a PromQL expression (or a `label_values(...)` variable query) reads:
/// identifiers outside strings, label matchers, ranges and groupings that are not functions
/// (followed by `(`), keywords or numbers.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = BTreeSet::new();
    let (mut i, mut grouping) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                while i < chars.len() && chars[i] != close {
                    if chars[i] == '"' {
                        i += 1;
                        while i < chars.len() && chars[i] != '"' {
                            i += 1;
                        }
                    }
                    i += 1;
                }
                i += 1;
            }
            '(' if grouping => {
                // The label list of by/without/on/ignoring/group_*.
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
                grouping = false;
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next] == ' ' {
                    next += 1;
                }
                let lower = word.to_ascii_lowercase();
                if KEYWORDS.contains(&lower.as_str()) {
                    grouping = [
                        "by",
                        "without",
                        "on",
                        "ignoring",
                        "group_left",
                        "group_right",
                    ]
                    .contains(&lower.as_str());
                } else if chars.get(next) != Some(&'(') {
                    names.insert(word);
                }
            }
            c if c.is_ascii_digit() || c == '.' => {
                // A number, with its exponent or duration unit.
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            '$' => {
                // A Grafana variable ($job, $__rate_interval) outside a matcher.
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    names
}

#[test]
fn metric_names_skip_functions_labels_ranges_and_groupings() {
    let names = metric_names(
        r#"histogram_quantile(0.99, sum by (controller, le) (rate(a_bucket{job=~"$job", x="{y}"}[$__rate_interval]))) / on (pod) group_left (node) b offset 5m > bool 1e3 or c:d"#,
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["a_bucket", "b", "c:d"]
    );
    assert_eq!(
        metric_names(r#"label_values(up{job="x"}, namespace)"#)
            .into_iter()
            .collect::<Vec<_>>(),
        ["namespace", "up"],
        "label_values' label reads as a name; the test skips variables' second argument"
    );
}

/// Every query of the dashboard: the panels' targets and the variables' `label_values`
/// selectors.
fn queries(dashboard: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"].as_array().unwrap().iter().collect();
    while let Some(panel) = panels.pop() {
        if let Some(nested) = panel["panels"].as_array() {
            panels.extend(nested);
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(target["expr"].as_str().unwrap().to_string());
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        let Some(query) = var["query"]["query"].as_str() else {
            continue;
        };
        // label_values(<selector>, <label>): the selector names the metric.
        let inner = query
            .strip_prefix("label_values(")
            .and_then(|q| q.rsplit_once(','))
            .map(|(selector, _)| selector.to_string())
            .unwrap_or_else(|| query.to_string());
        out.push(inner);
    }
    out
}

/// A plain HTTP/1.1 GET of `/metrics`: the body.
async fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = "GET /metrics HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a full response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    body.to_string()
}

/// The names of the samples in an exposition (histograms' `_bucket`, `_sum`, `_count`).
fn sample_names(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap().to_string())
        .collect()
}

struct AnyConfigMap;

impl Validator<ConfigMap> for AnyConfigMap {
    async fn validate_create(&self, _: &ConfigMap, _: &Request) -> ValidationResult {
        Ok(Vec::new())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_metric_a_dashboard_panel_queries_is_exported() {
    let dashboard: Value = serde_json::from_str(GRAFANA_DASHBOARD).expect("the dashboard is JSON");
    let env = Environment::new()
        .use_existing_cluster(false)
        .start()
        .await
        .unwrap();
    let mgr = Manager::new(
        env.client(),
        ManagerOptions::default()
            .with_metrics_bind_address(BindAddress::Addr("127.0.0.1:0".parse().unwrap()))
            .with_webhook_server(env.webhook_options().unwrap())
            .with_leader_election(
                LeaderElectionConfig::default()
                    .with_lease_name("dashboard")
                    .with_release_on_cancel(true),
            ),
    )
    .unwrap();
    let reconciled = Arc::new(tokio::sync::Notify::new());
    ControllerBuilder::new(&mgr)
        .for_(Input::<ConfigMap>::new())
        .with_options(ControllerOptions::default().with_operations_annotations(true))
        .complete(Arc::new(reconciled.clone()), |_cm, ctx| async move {
            ctx.notify_one();
            Ok(Action::done())
        })
        .await
        .unwrap();
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_validator(AnyConfigMap)
        .complete()
        .unwrap();
    let ctx = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, ctx) = (mgr.clone(), ctx.clone());
        async move { mgr.start(ctx).await }
    });
    mgr.webhook_server().listening().await.unwrap();
    env.install_webhooks(mgr.webhook_server()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), mgr.elected())
        .await
        .expect("the only candidate is elected");

    // One write through the validating webhook, and its reconcile.
    let cm: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "dashboard", "namespace": "default"}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(env.client(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(20), reconciled.notified())
        .await
        .expect("the ConfigMap is reconciled");

    let body = scrape(mgr.metrics_addr().unwrap()).await;
    let exported = sample_names(&body);
    let queries = queries(&dashboard);
    assert!(queries.len() >= 20, "{} queries", queries.len());
    let mut queried = BTreeSet::new();
    for query in &queries {
        let names = metric_names(query);
        assert!(!names.is_empty(), "no metric in {query:?}");
        queried.extend(names);
    }
    let missing: Vec<&String> = queried.difference(&exported).collect();
    assert!(
        missing.is_empty(),
        "the dashboard queries metrics the manager does not export: {missing:?}\n{body}"
    );
    // The families the dashboard is for are all there.
    for family in [
        "controller_runtime_reconcile_total",
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_reconcile_time_seconds_bucket",
        "controller_runtime_reconcile_paused_objects",
        "workqueue_depth",
        "workqueue_queue_duration_seconds_bucket",
        "workqueue_retries_total",
        "controller_runtime_cache_objects",
        "controller_runtime_cache_bytes",
        "controller_runtime_webhook_latency_seconds_bucket",
        "rest_client_requests_total",
        "leader_election_master_status",
    ] {
        assert!(queried.contains(family), "no panel queries {family}");
    }
    ctx.cancel();
    running.await.unwrap().unwrap();
}
