//! What each reconcile result does to its key: done, requeue_after, errors,
//! terminal errors, panics and timeouts, with the metrics they count.

use super::harness::*;

#[tokio::test(start_paused = true)]
async fn event_flows_through_predicates_and_handler_to_the_reconciler() {
    for options in both_queues() {
        let mut r = Running::start(options, |_, _| ok()).await;
        r.send("ns", "skip-me").await;
        r.send("ns", "a").await;
        let call = r.next_call().await;
        assert_eq!(
            call.req,
            Request::new("ns", "a"),
            "the predicate dropped skip-me"
        );
        r.no_call_within(Duration::from_secs(60)).await;
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#,
        );
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="error"} 0"#,
        );
        r.assert_metric(r#"controller_runtime_max_concurrent_reconciles{controller="test"} 1"#);
        r.assert_metric(r#"controller_runtime_active_workers{controller="test"} 0"#);
        r.assert_metric(r#"controller_runtime_reconcile_time_seconds_count{controller="test"} 1"#);
        let text = r.metrics();
        assert!(
            text.contains("workqueue_adds_total"),
            "workqueue metrics share the registry"
        );
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn requeue_after_is_honoured() {
    for options in both_queues() {
        let mut r = Running::start(options, |_, n| {
            Box::pin(async move {
                Ok(if n < 2 {
                    Action::requeue_after(Duration::from_secs(30))
                } else {
                    Action::done()
                })
            })
        })
        .await;
        r.send("ns", "a").await;
        let first = r.next_call().await.at;
        let second = r.next_call().await.at;
        let third = r.next_call().await.at;
        assert_eq!(second - first, Duration::from_secs(30));
        assert_eq!(third - second, Duration::from_secs(30));
        r.no_call_within(Duration::from_secs(3600)).await;
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="requeue_after"} 2"#,
        );
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#,
        );
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn error_backoff_grows_and_success_resets_it() {
    for options in both_queues() {
        // Five failures, one success, then (after a new event) one more failure.
        let mut r = Running::start(options, |_, n| {
            Box::pin(async move {
                if n < 5 || n == 6 {
                    Err(ReconcileError::msg("not yet"))
                } else {
                    Ok(Action::done())
                }
            })
        })
        .await;
        r.send("ns", "a").await;
        let mut times = Vec::new();
        for _ in 0..6 {
            times.push(r.next_call().await.at);
        }
        let gaps: Vec<_> = times.windows(2).map(|w| w[1] - w[0]).collect();
        let ms = Duration::from_millis;
        assert_eq!(
            gaps,
            [ms(5), ms(10), ms(20), ms(40), ms(80)],
            "exponential from 5 ms"
        );
        r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 5"#);
        r.assert_metric(
            r#"controller_runtime_reconcile_total{controller="test",result="error"} 5"#,
        );

        // The success forgot the key's failures: the next failure backs off 5 ms again.
        r.send("ns", "a").await;
        let failed = r.next_call().await.at;
        let retried = r.next_call().await.at;
        assert_eq!(retried - failed, ms(5));
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_retry_with_backoff_is_an_error_and_requeue_stays_zero() {
    // What Go's deprecated `Result{Requeue: true}` did: an error, retried by the rate limiter.
    let mut r = Running::start(ControllerOptions::default(), |_, n| {
        Box::pin(async move {
            if n < 3 {
                Err(ReconcileError::msg("not ready, try again"))
            } else {
                Ok(Action::done())
            }
        })
    })
    .await;
    r.send("ns", "a").await;
    let t: Vec<_> = [
        r.next_call().await.at,
        r.next_call().await.at,
        r.next_call().await.at,
        r.next_call().await.at,
    ]
    .into();
    let ms = Duration::from_millis;
    assert_eq!(
        [t[1] - t[0], t[2] - t[1], t[3] - t[2]],
        [ms(5), ms(10), ms(20)]
    );
    // The `requeue` series exists (for dashboards) but nothing counts it.
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="requeue"} 0"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 3"#);
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn terminal_error_is_not_retried() {
    let mut r = Running::start(ControllerOptions::default(), |req, _| {
        Box::pin(async move {
            if req.name == "bad" {
                Err(TerminalError::msg("spec can never work").into())
            } else {
                Ok(Action::done())
            }
        })
    })
    .await;
    r.send("ns", "bad").await;
    assert_eq!(r.next_call().await.req.name, "bad");
    r.no_call_within(Duration::from_secs(3 * 3600)).await;
    r.assert_metric(r#"controller_runtime_terminal_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="error"} 1"#);
    // The key is not stuck: a new event reconciles it again.
    r.send("ns", "bad").await;
    assert_eq!(r.next_call().await.req.name, "bad");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn panic_is_recovered_counted_and_retried_with_backoff() {
    let mut r = Running::start(ControllerOptions::default(), |_, n| {
        Box::pin(async move {
            if n < 2 {
                panic!("reconciler bug #{n}");
            }
            Ok(Action::done())
        })
    })
    .await;
    r.send("ns", "a").await;
    let t0 = r.next_call().await.at;
    let t1 = r.next_call().await.at;
    let t2 = r.next_call().await.at;
    assert_eq!(t1 - t0, Duration::from_millis(5));
    assert_eq!(t2 - t1, Duration::from_millis(10));
    r.assert_metric(r#"controller_runtime_reconcile_panics_total{controller="test"} 2"#);
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 2"#);
    r.assert_metric(r#"controller_runtime_reconcile_total{controller="test",result="success"} 1"#);
    r.assert_metric(r#"controller_runtime_active_workers{controller="test"} 0"#);
    // The worker survived: other keys are still reconciled.
    r.send("ns", "b").await;
    assert_eq!(r.next_call().await.req.name, "b");
    r.stop().await;
}

#[tokio::test(start_paused = true)]
async fn panic_without_recovery_ends_start_with_the_panic() {
    let mut r = Running::start(
        ControllerOptions::default().with_recover_panic(false),
        |_, _| Box::pin(async { panic!("unrecovered") }),
    )
    .await;
    r.send("ns", "a").await;
    r.next_call().await;
    let joined = (&mut r.handle).await;
    assert!(
        joined.unwrap_err().is_panic(),
        "start re-raises the reconciler's panic"
    );
    r.assert_metric(r#"controller_runtime_reconcile_panics_total{controller="test"} 1"#);
}

#[tokio::test(start_paused = true)]
async fn reconciliation_timeout_counts_as_an_error() {
    let options = ControllerOptions::default().with_reconciliation_timeout(Duration::from_secs(1));
    let mut r = Running::start(options, |_, n| {
        Box::pin(async move {
            if n == 0 {
                tokio::time::sleep(Duration::from_secs(10)).await;
            }
            Ok(Action::done())
        })
    })
    .await;
    r.send("ns", "a").await;
    let t0 = r.next_call().await.at;
    let t1 = r.next_call().await.at;
    // Gave up after 1 s, then retried after the first backoff step.
    assert_eq!(t1 - t0, Duration::from_secs(1) + Duration::from_millis(5));
    r.assert_metric(r#"controller_runtime_reconcile_errors_total{controller="test"} 1"#);
    r.assert_metric(r#"controller_runtime_reconcile_timeouts_total{controller="test"} 1"#);
    r.stop().await;
}
