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
    let options = ControllerOptions::default().with_use_priority_queue(true);
    retried_low_priority_key_stays_behind(options).await;
}

/// A queue of the user's own (through `new_queue`), here a decorator of the priority queue: the
/// controller learns priorities through the `Queue` trait, so retries keep them here too.
#[tokio::test(start_paused = true)]
async fn a_user_supplied_queue_keeps_priorities_on_retry() {
    use controller_runtime::workqueue::{
        AddOpts, Enqueue, Queue, QueueConfig, QueueOrder, Workqueue,
    };

    struct Decorated(Arc<dyn Queue<Request>>);
    impl Enqueue<Request> for Decorated {
        fn add_with_opts(&self, opts: AddOpts, item: Request) {
            self.0.add_with_opts(opts, item)
        }
    }
    impl Queue<Request> for Decorated {
        fn get_with_priority(&self) -> BoxFuture<'_, Option<(Request, i32)>> {
            self.0.get_with_priority()
        }
        fn done(&self, item: &Request) {
            self.0.done(item)
        }
        fn forget(&self, item: &Request) {
            self.0.forget(item)
        }
        fn num_requeues(&self, item: &Request) -> u32 {
            self.0.num_requeues(item)
        }
        fn len(&self) -> usize {
            self.0.len()
        }
        fn shut_down(&self) {
            self.0.shut_down()
        }
        fn shut_down_with_drain(&self) -> BoxFuture<'_, ()> {
            self.0.shut_down_with_drain()
        }
        fn is_shutting_down(&self) -> bool {
            self.0.is_shutting_down()
        }
    }

    let options =
        ControllerOptions::default().with_new_queue(Arc::new(|name: &str, rate_limiter| {
            let config = QueueConfig::default()
                .name(name)
                .rate_limiter(rate_limiter)
                .order(QueueOrder::Priority);
            Arc::new(Decorated(Workqueue::new(config))) as Arc<dyn Queue<Request>>
        }));
    retried_low_priority_key_stays_behind(options).await;
}

async fn retried_low_priority_key_stays_behind(options: ControllerOptions) {
    // l0 (initial list, low priority) fails once after 10 ms and is ready again at 15 ms; n1
    // keeps the only worker busy until 30 ms; n2 arrives at 20 ms. At 30 ms the worker must pick
    // n2: the retry of l0 kept its low priority (at priority 0 it would go first, being older).
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
