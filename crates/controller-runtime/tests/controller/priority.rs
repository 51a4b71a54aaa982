//! Priorities end to end: real changes overtake the initial list; retries keep their priority.

use super::harness::*;

#[tokio::test(start_paused = true)]
async fn real_changes_overtake_the_initial_list_on_the_priority_queue() {
    for (use_priority_queue, want) in [(true, ["l0", "urgent", "l1"]), (false, ["l0", "l1", "l2"])]
    {
        let options = ControllerOptions::default().with_use_priority_queue(use_priority_queue);
        let mut r = Running::start(options, |_, _| {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(Action::done())
            })
        })
        .await;
        let list = InitialList {
            names: vec!["l0", "l1", "l2", "l3"],
        };
        r.controller
            .watch(list, EnqueueRequestForObject, vec![])
            .await
            .unwrap();
        // The worker is busy with l0 when the real change arrives.
        assert_eq!(r.next_call().await.req.name, "l0");
        r.send("ns", "urgent").await;
        let mut order = vec!["l0".to_string()];
        order.push(r.next_call().await.req.name);
        order.push(r.next_call().await.req.name);
        assert_eq!(order, want, "use_priority_queue = {use_priority_queue}");
        r.stop().await;
    }
}

#[tokio::test(start_paused = true)]
async fn a_retried_low_priority_key_stays_behind_real_changes() {
    // l0 (initial list, low priority) fails once after 10 ms and is ready again at 15 ms; n1
    // keeps the only worker busy until 30 ms; n2 arrives at 20 ms. At 30 ms the worker must pick
    // n2: the retry of l0 kept its low priority (at priority 0 it would go first, being older).
    let options = ControllerOptions::default().with_use_priority_queue(true);
    let mut r = Running::start(options, |req, n| {
        Box::pin(async move {
            match (req.name.as_str(), n) {
                ("l0", 0) => {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Err(ReconcileError::msg("transient"))
                }
                ("n1", _) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Ok(Action::done())
                }
                _ => Ok(Action::done()),
            }
        })
    })
    .await;
    let list = InitialList { names: vec!["l0"] };
    r.controller
        .watch(list, EnqueueRequestForObject, vec![])
        .await
        .unwrap();
    let t0 = r.next_call().await.at;
    r.send("ns", "n1").await;
    assert_eq!(r.next_call().await.req.name, "n1");
    tokio::time::sleep_until(t0 + Duration::from_millis(20)).await;
    r.send("ns", "n2").await;
    let third = r.next_call().await;
    assert_eq!(third.req.name, "n2");
    assert_eq!(third.at - t0, Duration::from_millis(30));
    assert_eq!(r.next_call().await.req.name, "l0");
    r.stop().await;
}
