//! The simulation end to end on the store, on tokio's paused clock: no sleeping, no HTTP.

use std::time::Duration;

use crt_apiserver::storage::{
    DeleteOptions, ListOptions, PatchType, Storage, StorageConfig, WriteOptions,
};
use serde_json::{Value, json};

use crate::{Cluster, ClusterConfig};

struct Env {
    store: Storage,
    _cluster: Cluster,
}

fn opts() -> WriteOptions {
    WriteOptions {
        field_manager: Some("test".into()),
        ..WriteOptions::default()
    }
}

impl Env {
    fn start(config: ClusterConfig) -> Env {
        let store = Storage::new(StorageConfig::default());
        let cluster = Cluster::start(&store, config);
        Env {
            store,
            _cluster: cluster,
        }
    }

    fn res(&self, group: &str, plural: &str) -> crt_apiserver::resource::ResourceInfo {
        self.store.resolve(group, "v1", plural).unwrap()
    }

    fn create(&self, group: &str, plural: &str, ns: Option<&str>, body: Value) -> Value {
        self.store
            .create(&self.res(group, plural), ns, body, &opts())
            .unwrap()
    }

    fn get(&self, group: &str, plural: &str, ns: Option<&str>, name: &str) -> Option<Value> {
        self.store
            .get(&self.res(group, plural), ns, name, None)
            .ok()
    }

    fn list(&self, group: &str, plural: &str, ns: Option<&str>, selector: &str) -> Vec<Value> {
        let opts = ListOptions {
            label_selector: (!selector.is_empty()).then(|| selector.to_string()),
            ..ListOptions::default()
        };
        let list = self
            .store
            .list(&self.res(group, plural), ns, &opts)
            .unwrap();
        list["items"].as_array().cloned().unwrap_or_default()
    }

    fn patch(
        &self,
        group: &str,
        plural: &str,
        ns: Option<&str>,
        name: &str,
        patch: Value,
    ) -> Value {
        self.store
            .patch(
                &self.res(group, plural),
                ns,
                name,
                None,
                PatchType::Merge,
                patch.to_string().as_bytes(),
                &opts(),
            )
            .unwrap()
    }

    fn deployment(&self, name: &str, replicas: i64, image: &str, annotations: Value) {
        self.create(
            "apps",
            "deployments",
            Some("default"),
            json!({
                "metadata": {"name": name},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": {"app": name}},
                    "template": {
                        "metadata": {"labels": {"app": name}, "annotations": annotations},
                        "spec": {"containers": [{"name": "c", "image": image,
                            "ports": [{"name": "http", "containerPort": 8080}]}]},
                    },
                },
            }),
        );
    }
}

/// Waits (on the paused clock: time advances only while everything waits) until `check`
/// answers `Some`, for at most `within` of simulated time.
async fn eventually<T>(within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[tokio::test(start_paused = true)]
async fn nodes_register_ready_and_renew_their_leases() {
    let env = Env::start(ClusterConfig::default().with_nodes(2));
    let nodes = env.list("", "nodes", None, "");
    assert_eq!(nodes.len(), 2);
    let node = &nodes[0];
    assert_eq!(
        node["metadata"]["labels"]["kubernetes.io/hostname"],
        "node-1"
    );
    assert_eq!(condition(node, "Ready").unwrap()["status"], "True");
    assert_eq!(node["status"]["allocatable"]["pods"], "110");
    let lease = |env: &Env| {
        env.get(
            "coordination.k8s.io",
            "leases",
            Some("kube-node-lease"),
            "node-1",
        )
        .unwrap()["spec"]["renewTime"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = lease(&env);
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert!(
        lease(&env) > first,
        "the lease was renewed on the simulated clock"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deployment_rolls_out_updates_and_undoes() {
    let env = Env::start(ClusterConfig::default());
    env.deployment("web", 3, "nginx", json!({}));
    let d = eventually(Duration::from_secs(5), "the rollout", || {
        let d = env.get("apps", "deployments", Some("default"), "web")?;
        (d["status"]["availableReplicas"] == 3 && d["status"]["updatedReplicas"] == 3).then_some(d)
    })
    .await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(
        d["status"]["observedGeneration"],
        d["metadata"]["generation"]
    );
    assert_eq!(
        condition(&d, "Available").unwrap()["reason"],
        "MinimumReplicasAvailable"
    );
    assert_eq!(
        condition(&d, "Progressing").unwrap()["reason"],
        "NewReplicaSetAvailable"
    );
    let pods = env.list("", "pods", Some("default"), "app=web");
    assert_eq!(pods.len(), 3);
    let mut nodes: Vec<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(
        nodes,
        ["node-1", "node-2", "node-3"],
        "spread over the nodes"
    );
    for pod in &pods {
        assert_eq!(pod["status"]["phase"], "Running");
        assert!(
            pod["status"]["podIP"]
                .as_str()
                .unwrap()
                .starts_with("10.244.")
        );
        assert!(
            pod["status"]["hostIP"]
                .as_str()
                .unwrap()
                .starts_with("172.18.")
        );
        let c = &pod["status"]["containerStatuses"][0];
        assert_eq!(c["ready"], true);
        assert_eq!(c["image"], "docker.io/library/nginx:latest");
        assert!(c["state"]["running"]["startedAt"].is_string());
        for type_ in [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ] {
            assert_eq!(condition(pod, type_).unwrap()["status"], "True", "{type_}");
        }
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "ReplicaSet");
    }
    let rss = env.list("apps", "replicasets", Some("default"), "app=web");
    assert_eq!(rss.len(), 1);
    let first = rss[0]["metadata"]["name"].as_str().unwrap().to_string();
    let hash = rss[0]["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap();
    assert_eq!(first, format!("web-{hash}"));
    assert_eq!(rss[0]["status"]["readyReplicas"], 3);

    // A new image: a second ReplicaSet takes over, the first is scaled to zero.
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.27",
            "ports": [{"name": "http", "containerPort": 8080}]}]}}}}),
    );
    let d = eventually(Duration::from_secs(10), "the update", || {
        let d = env.get("apps", "deployments", Some("default"), "web")?;
        let s = &d["status"];
        (s["updatedReplicas"] == 3
            && s["replicas"] == 3
            && s["availableReplicas"] == 3
            && s["observedGeneration"] == d["metadata"]["generation"])
            .then_some(d)
    })
    .await;
    assert_eq!(
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "2"
    );
    let rss = env.list("apps", "replicasets", Some("default"), "app=web");
    assert_eq!(rss.len(), 2);
    let old = rss
        .iter()
        .find(|rs| rs["metadata"]["name"] == first.as_str())
        .unwrap();
    assert_eq!(old["spec"]["replicas"], 0);
    let pods = env.list("", "pods", Some("default"), "app=web");
    assert_eq!(pods.len(), 3);
    assert!(
        pods.iter()
            .all(|p| p["spec"]["containers"][0]["image"] == "nginx:1.27")
    );

    // Undo, as kubectl does it: the old template back; the old ReplicaSet is revision 3.
    let mut template = old["spec"]["template"].clone();
    template["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("pod-template-hash");
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "web",
        json!({"spec": {"template": template}}),
    );
    eventually(Duration::from_secs(10), "the undo", || {
        let rs = env.get("apps", "replicasets", Some("default"), &first)?;
        let d = env.get("apps", "deployments", Some("default"), "web")?;
        (rs["status"]["availableReplicas"] == 3
            && rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
            && rs["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
            && d["status"]["replicas"] == 3)
            .then_some(())
    })
    .await;

    // Scale down.
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "web",
        json!({"spec": {"replicas": 1}}),
    );
    eventually(Duration::from_secs(10), "the scale down", || {
        let pods = env.list("", "pods", Some("default"), "app=web");
        let d = env.get("apps", "deployments", Some("default"), "web")?;
        (pods.len() == 1 && d["status"]["availableReplicas"] == 1).then_some(())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_unschedulable_pod_stays_pending_with_upstreams_event() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "",
        "pods",
        Some("default"),
        json!({
            "metadata": {"name": "big"},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                "resources": {"requests": {"cpu": "100"}}}]},
        }),
    );
    let pod = eventually(
        Duration::from_secs(5),
        "the unschedulable condition",
        || {
            let pod = env.get("", "pods", Some("default"), "big")?;
            condition(&pod, "PodScheduled").cloned()
        },
    )
    .await;
    let message = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are \
                   available: 3 No preemption victims found for incoming pod.";
    assert_eq!(pod["status"], "False");
    assert_eq!(pod["reason"], "Unschedulable");
    assert_eq!(pod["message"], message);
    let events = env.list("events.k8s.io", "events", Some("default"), "");
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["reason"] == "FailedScheduling")
        .collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["note"], message);
    assert_eq!(failed[0]["type"], "Warning");
    assert_eq!(failed[0]["regarding"]["name"], "big");
    tokio::time::sleep(Duration::from_secs(30)).await;
    let pod = env.get("", "pods", Some("default"), "big").unwrap();
    assert_eq!(pod["status"]["phase"], "Pending");
    assert!(pod["spec"]["nodeName"].is_null());
}

#[tokio::test(start_paused = true)]
async fn scripts_delay_readiness_and_crash_loop() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "",
        "pods",
        Some("default"),
        json!({
            "metadata": {"name": "slow", "annotations": {crate::script::READY_AFTER: "30s"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }),
    );
    env.create(
        "",
        "pods",
        Some("default"),
        json!({
            "metadata": {"name": "crash", "annotations": {
                crate::script::RUN_FOR: "1s", crate::script::EXIT_CODE: "3"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }),
    );
    let running = eventually(Duration::from_secs(5), "slow running", || {
        let pod = env.get("", "pods", Some("default"), "slow")?;
        (pod["status"]["phase"] == "Running").then_some(pod)
    })
    .await;
    let started = tokio::time::Instant::now();
    assert_eq!(condition(&running, "Ready").unwrap()["status"], "False");
    assert_eq!(
        condition(&running, "Ready").unwrap()["reason"],
        "ContainersNotReady"
    );
    eventually(Duration::from_secs(40), "slow ready", || {
        let pod = env.get("", "pods", Some("default"), "slow")?;
        (condition(&pod, "Ready")?["status"] == "True").then_some(())
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(29),
        "{:?}",
        started.elapsed()
    );

    let waiting = eventually(Duration::from_secs(60), "a crash loop", || {
        let pod = env.get("", "pods", Some("default"), "crash")?;
        let c = pod["status"]["containerStatuses"][0].clone();
        (c["restartCount"] == 1 && c["state"]["waiting"]["reason"] == "CrashLoopBackOff")
            .then_some(c)
    })
    .await;
    assert_eq!(waiting["lastState"]["terminated"]["exitCode"], 3);
    assert_eq!(waiting["lastState"]["terminated"]["reason"], "Error");
    assert_eq!(waiting["ready"], false);
    assert!(
        waiting["state"]["waiting"]["message"]
            .as_str()
            .unwrap()
            .starts_with("back-off 20s restarting failed container=c pod=crash_default(")
    );
    let events = env.list("events.k8s.io", "events", Some("default"), "");
    let notes = |pod: &str, reason: &str| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["regarding"]["name"] == pod && e["reason"] == reason)
            .map(|e| e["note"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(
        notes("slow", "Pulled"),
        ["Container image \"nginx\" already present on machine"]
    );
    assert_eq!(notes("slow", "Created"), ["Created container: c"]);
    assert_eq!(notes("slow", "Started"), ["Started container c"]);
    assert_eq!(
        notes("crash", "Started").len(),
        2,
        "started, then restarted once"
    );
    let backoff = notes("crash", "BackOff");
    assert_eq!(backoff.len(), 2, "{backoff:?}");
    assert!(backoff[0].starts_with("Back-off restarting failed container c in pod crash_default("));
}

#[tokio::test(start_paused = true)]
async fn a_jobs_pod_succeeds() {
    let env = Env::start(ClusterConfig::default());
    let job = env.create(
        "batch",
        "jobs",
        Some("default"),
        json!({
            "metadata": {"name": "once"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}},
        }),
    );
    env.create(
        "",
        "pods",
        Some("default"),
        json!({
            "metadata": {"name": "once-x", "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "once",
                 "uid": job["metadata"]["uid"], "controller": true}]},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        }),
    );
    let pod = eventually(Duration::from_secs(5), "success", || {
        let pod = env.get("", "pods", Some("default"), "once-x")?;
        (pod["status"]["phase"] == "Succeeded").then_some(pod)
    })
    .await;
    let c = &pod["status"]["containerStatuses"][0];
    assert_eq!(c["state"]["terminated"]["reason"], "Completed");
    assert_eq!(c["state"]["terminated"]["exitCode"], 0);
    assert_eq!(condition(&pod, "Ready").unwrap()["reason"], "PodCompleted");
}

#[tokio::test(start_paused = true)]
async fn services_get_endpoints_of_ready_pods() {
    let env = Env::start(ClusterConfig::default());
    env.deployment("api", 2, "nginx", json!({}));
    env.create(
        "",
        "services",
        Some("default"),
        json!({
            "metadata": {"name": "api", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": "http"}]},
        }),
    );
    let slice = eventually(Duration::from_secs(5), "the endpoint slice", || {
        let slices = env.list(
            "discovery.k8s.io",
            "endpointslices",
            Some("default"),
            "kubernetes.io/service-name=api",
        );
        let slice = slices.first()?.clone();
        (slice["endpoints"].as_array()?.len() == 2).then_some(slice)
    })
    .await;
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["labels"]["team"], "a");
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "port": 8080, "protocol": "TCP"}])
    );
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    for ep in slice["endpoints"].as_array().unwrap() {
        assert_eq!(
            ep["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(ep["targetRef"]["kind"], "Pod");
    }
    let endpoints = env.get("", "endpoints", Some("default"), "api").unwrap();
    assert_eq!(
        endpoints["subsets"][0]["addresses"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(
        endpoints["subsets"][0]["ports"],
        json!([{"port": 8080, "protocol": "TCP"}])
    );

    // Scaled to zero: the placeholder slice, and no subsets.
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "api",
        json!({"spec": {"replicas": 0}}),
    );
    eventually(Duration::from_secs(5), "no endpoints", || {
        let slices = env.list(
            "discovery.k8s.io",
            "endpointslices",
            Some("default"),
            "kubernetes.io/service-name=api",
        );
        let e = env.get("", "endpoints", Some("default"), "api")?;
        (slices.len() == 1
            && slices[0]["endpoints"]
                .as_array()
                .is_none_or(|e| e.is_empty())
            && e.get("subsets")
                .is_none_or(|s| s.as_array().is_none_or(|s| s.is_empty())))
        .then_some(())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn deleted_pods_stop_within_their_grace_period() {
    let env = Env::start(ClusterConfig::default());
    for (name, after) in [
        ("quick", None),
        ("slow", Some("20s")),
        ("capped", Some("100s")),
    ] {
        let mut body = json!({"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
        if let Some(after) = after {
            body["metadata"]["annotations"] = json!({crate::script::TERMINATE_AFTER: after});
        }
        env.create("", "pods", Some("default"), body);
    }
    eventually(Duration::from_secs(5), "the pods running", || {
        let pods = env.list("", "pods", Some("default"), "");
        (pods
            .iter()
            .filter(|p| p["status"]["phase"] == "Running")
            .count()
            == 3)
            .then_some(())
    })
    .await;
    let pods = env.res("", "pods");
    let delete = |name: &str, grace: Option<i64>| {
        let opts = DeleteOptions {
            grace_period_seconds: grace,
            ..DeleteOptions::default()
        };
        env.store
            .delete(&pods, Some("default"), name, &opts)
            .unwrap()
    };
    let started = tokio::time::Instant::now();
    let marked = delete("slow", None);
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 30);
    delete("capped", Some(5));
    delete("quick", None);
    eventually(Duration::from_secs(1), "quick gone", || {
        env.get("", "pods", Some("default"), "quick")
            .is_none()
            .then_some(())
    })
    .await;
    eventually(Duration::from_secs(10), "capped gone", || {
        env.get("", "pods", Some("default"), "capped")
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        env.get("", "pods", Some("default"), "slow").is_some(),
        "still stopping"
    );
    eventually(Duration::from_secs(20), "slow gone", || {
        env.get("", "pods", Some("default"), "slow")
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn jobs_complete_fail_and_expire() {
    let env = Env::start(ClusterConfig::default());
    let job = |name: &str, spec: Value, annotations: Value| {
        let mut spec = spec;
        spec["template"] = json!({
            "metadata": {"annotations": annotations},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
        });
        env.create(
            "batch",
            "jobs",
            Some("default"),
            json!({"metadata": {"name": name}, "spec": spec}),
        );
    };
    job(
        "three",
        json!({"completions": 3, "parallelism": 2, "ttlSecondsAfterFinished": 60}),
        json!({}),
    );
    job(
        "broken",
        json!({"backoffLimit": 1}),
        json!({crate::script::EXIT_CODE: "1"}),
    );
    let done = eventually(Duration::from_secs(10), "three complete", || {
        let j = env.get("batch", "jobs", Some("default"), "three")?;
        (condition(&j, "Complete")?["status"] == "True").then_some(j)
    })
    .await;
    assert_eq!(done["status"]["succeeded"], 3);
    assert!(done["status"]["completionTime"].is_string());
    assert_eq!(
        condition(&done, "SuccessCriteriaMet").unwrap()["reason"],
        "CompletionsReached"
    );
    assert_eq!(
        env.list(
            "",
            "pods",
            Some("default"),
            "batch.kubernetes.io/job-name=three"
        )
        .len(),
        3
    );
    let failed = eventually(Duration::from_secs(10), "broken failed", || {
        let j = env.get("batch", "jobs", Some("default"), "broken")?;
        (condition(&j, "Failed")?["status"] == "True").then_some(j)
    })
    .await;
    assert_eq!(failed["status"]["failed"], 2);
    assert_eq!(
        condition(&failed, "Failed").unwrap()["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(
        condition(&failed, "Failed").unwrap()["message"],
        "Job has reached the specified backoff limit"
    );
    // The TTL: gone a minute after it finished, with its pods.
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(env.get("batch", "jobs", Some("default"), "three").is_some());
    eventually(Duration::from_secs(40), "three expired", || {
        env.get("batch", "jobs", Some("default"), "three")
            .is_none()
            .then_some(())
    })
    .await;
    assert!(
        env.list(
            "",
            "pods",
            Some("default"),
            "batch.kubernetes.io/job-name=three"
        )
        .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn paused_recreated_and_stalled_deployments() {
    let env = Env::start(ClusterConfig::default());
    let deployment = |name: &str| env.get("apps", "deployments", Some("default"), name);
    let rss = |app: &str| {
        env.list(
            "apps",
            "replicasets",
            Some("default"),
            &format!("app={app}"),
        )
    };

    // Paused: a new template makes no ReplicaSet until resumed.
    env.deployment("held", 2, "nginx", json!({}));
    eventually(Duration::from_secs(5), "held rolled out", || {
        (deployment("held")?["status"]["availableReplicas"] == 2).then_some(())
    })
    .await;
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "held",
        json!({"spec": {"paused": true,
        "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    );
    let paused = eventually(Duration::from_secs(5), "paused", || {
        let d = deployment("held")?;
        (condition(&d, "Progressing")?["reason"] == "DeploymentPaused").then_some(d)
    })
    .await;
    assert_eq!(
        condition(&paused, "Progressing").unwrap()["status"],
        "Unknown"
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(rss("held").len(), 1);
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "held",
        json!({"spec": {"paused": false}}),
    );
    eventually(Duration::from_secs(10), "resumed and rolled out", || {
        let d = deployment("held")?;
        (rss("held").len() == 2
            && d["status"]["updatedReplicas"] == 2
            && d["status"]["availableReplicas"] == 2
            && condition(&d, "Progressing")?["reason"] == "NewReplicaSetAvailable")
            .then_some(())
    })
    .await;

    // Recreate: the old pods are gone before the new ones start.
    env.create(
        "apps",
        "deployments",
        Some("default"),
        json!({
            "metadata": {"name": "again"},
            "spec": {
                "replicas": 2,
                "strategy": {"type": "Recreate"},
                "selector": {"matchLabels": {"app": "again"}},
                "template": {"metadata": {"labels": {"app": "again"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
            },
        }),
    );
    eventually(Duration::from_secs(5), "again rolled out", || {
        (deployment("again")?["status"]["availableReplicas"] == 2).then_some(())
    })
    .await;
    env.patch(
        "apps",
        "deployments",
        Some("default"),
        "again",
        json!({"spec": {"template": {
        "spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    );
    eventually(Duration::from_secs(10), "again recreated", || {
        let pods = env.list("", "pods", Some("default"), "app=again");
        (pods.len() == 2
            && pods
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "nginx:2")
            && deployment("again")?["status"]["availableReplicas"] == 2)
            .then_some(())
    })
    .await;

    // Pods that never turn ready: the rollout times out after progressDeadlineSeconds.
    env.create(
        "apps",
        "deployments",
        Some("default"),
        json!({
            "metadata": {"name": "stuck"},
            "spec": {
                "replicas": 1,
                "progressDeadlineSeconds": 60,
                "selector": {"matchLabels": {"app": "stuck"}},
                "template": {
                    "metadata": {"labels": {"app": "stuck"},
                        "annotations": {crate::script::READY_AFTER: "never"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]},
                },
            },
        }),
    );
    tokio::time::sleep(Duration::from_secs(30)).await;
    let d = deployment("stuck").unwrap();
    assert_eq!(condition(&d, "Progressing").unwrap()["status"], "True");
    assert_eq!(condition(&d, "Available").unwrap()["status"], "False");
    let d = eventually(Duration::from_secs(40), "the deadline", || {
        let d = deployment("stuck")?;
        (condition(&d, "Progressing")?["reason"] == "ProgressDeadlineExceeded").then_some(d)
    })
    .await;
    let c = condition(&d, "Progressing").unwrap();
    assert_eq!(c["status"], "False");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .ends_with("has timed out progressing."),
        "{c}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_replication_controller_keeps_its_replicas() {
    let env = Env::start(ClusterConfig::default());
    // No selector: the server defaults it (and the labels) to the template's labels.
    let rc = env.create(
        "",
        "replicationcontrollers",
        Some("default"),
        json!({
            "metadata": {"name": "legacy"},
            "spec": {"replicas": 2, "template": {
                "metadata": {"labels": {"app": "legacy"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        }),
    );
    assert_eq!(rc["spec"]["selector"], json!({"app": "legacy"}));
    assert_eq!(rc["metadata"]["labels"], json!({"app": "legacy"}));
    eventually(Duration::from_secs(10), "two ready replicas", || {
        let rc = env.get("", "replicationcontrollers", Some("default"), "legacy")?;
        (rc["status"]["readyReplicas"] == 2 && rc["status"]["availableReplicas"] == 2).then_some(())
    })
    .await;
    let pods = env.list("", "pods", Some("default"), "app=legacy");
    assert_eq!(pods.len(), 2);
    for pod in &pods {
        let owner = &pod["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicationController");
        assert_eq!(owner["uid"], rc["metadata"]["uid"]);
        assert_eq!(pod["status"]["phase"], "Running");
    }

    env.patch(
        "",
        "replicationcontrollers",
        Some("default"),
        "legacy",
        json!({"spec": {"replicas": 0}}),
    );
    eventually(Duration::from_secs(60), "no replicas", || {
        let rc = env.get("", "replicationcontrollers", Some("default"), "legacy")?;
        let gone = env
            .list("", "pods", Some("default"), "app=legacy")
            .is_empty();
        (gone && rc["status"]["replicas"] == 0).then_some(())
    })
    .await;
}

fn statefulset(name: &str, replicas: i64, image: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name},
                    "annotations": {"sim.crt.dev/ready-after": "2s"}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    })
}

#[tokio::test(start_paused = true)]
async fn a_statefulset_starts_in_order_updates_from_the_top_and_scales_down_in_reverse() {
    let env = Env::start(ClusterConfig::default());
    let mut body = statefulset("web", 3, "nginx");
    // Slow deletions make the order of the scale down visible.
    body["spec"]["template"]["metadata"]["annotations"]["sim.crt.dev/terminate-after"] =
        json!("1s");
    env.create("apps", "statefulsets", Some("default"), body);
    let names = |env: &Env| {
        let mut n: Vec<String> = env
            .list("", "pods", Some("default"), "app=web")
            .iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        names(&env),
        ["web-0"],
        "one at a time while web-0 is not ready"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(names(&env), ["web-0", "web-1"], "web-1 once web-0 is ready");
    let set = eventually(Duration::from_secs(20), "three ready pods", || {
        let s = env.get("apps", "statefulsets", Some("default"), "web")?;
        (s["status"]["readyReplicas"] == 3).then_some(s)
    })
    .await;
    let status = &set["status"];
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["currentReplicas"], 3);
    assert_eq!(status["updatedReplicas"], 3);
    assert_eq!(status["collisionCount"], 0);
    assert_eq!(status["observedGeneration"], set["metadata"]["generation"]);
    let first = status["updateRevision"].as_str().unwrap().to_string();
    assert_eq!(status["currentRevision"], first.as_str());
    assert!(first.starts_with("web-"));
    let pod = env.get("", "pods", Some("default"), "web-1").unwrap();
    assert_eq!(pod["spec"]["hostname"], "web-1");
    assert_eq!(pod["spec"]["subdomain"], "web");
    assert_eq!(
        pod["metadata"]["labels"]["controller-revision-hash"],
        first.as_str()
    );
    assert_eq!(
        pod["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
        "1"
    );
    assert_eq!(
        pod["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "web-1"
    );
    assert_eq!(pod["spec"]["volumes"][0]["name"], "www");
    assert_eq!(
        pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "www-web-1"
    );
    let pvc = env
        .get("", "persistentvolumeclaims", Some("default"), "www-web-1")
        .unwrap();
    assert_eq!(pvc["metadata"]["labels"]["app"], "web");
    // The default class (WaitForFirstConsumer) provisioned it on the pod's node.
    assert_eq!(pvc["spec"]["storageClassName"], "standard");
    assert_eq!(pvc["status"]["phase"], "Bound");
    assert_eq!(pvc["status"]["capacity"]["storage"], "1Gi");
    let annotations = &pvc["metadata"]["annotations"];
    assert_eq!(annotations["pv.kubernetes.io/bind-completed"], "yes");
    assert_eq!(annotations["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(
        annotations["volume.kubernetes.io/selected-node"],
        pod["spec"]["nodeName"]
    );
    let pv_name = pvc["spec"]["volumeName"].as_str().unwrap();
    assert_eq!(
        pv_name,
        format!("pvc-{}", pvc["metadata"]["uid"].as_str().unwrap())
    );
    let pv = env.get("", "persistentvolumes", None, pv_name).unwrap();
    assert_eq!(pv["status"]["phase"], "Bound");
    assert_eq!(pv["spec"]["claimRef"]["name"], "www-web-1");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        "rancher.io/local-path"
    );
    assert_eq!(
        pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"]
            [0],
        pod["spec"]["nodeName"]
    );
    let revisions = env.list("apps", "controllerrevisions", Some("default"), "app=web");
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0]["metadata"]["name"], first.as_str());
    assert_eq!(revisions[0]["revision"], 1);

    // A rolling update replaces web-2 first and web-0 last.
    env.patch(
        "apps",
        "statefulsets",
        Some("default"),
        "web",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
    );
    let revision_of = |env: &Env, pod: &str| {
        env.get("", "pods", Some("default"), pod)
            .map(|p| p["metadata"]["labels"]["controller-revision-hash"].clone())
    };
    let second = eventually(Duration::from_secs(10), "web-2 updated", || {
        let s = env.get("apps", "statefulsets", Some("default"), "web")?;
        let update = s["status"]["updateRevision"].as_str()?.to_string();
        (update != first && revision_of(&env, "web-2")? == update.as_str()).then_some(update)
    })
    .await;
    assert_eq!(revision_of(&env, "web-0").unwrap(), first.as_str());
    let set = eventually(Duration::from_secs(30), "the update to complete", || {
        let s = env.get("apps", "statefulsets", Some("default"), "web")?;
        (s["status"]["currentRevision"] == second.as_str() && s["status"]["readyReplicas"] == 3)
            .then_some(s)
    })
    .await;
    assert_eq!(set["status"]["updatedReplicas"], 3);
    assert_eq!(revision_of(&env, "web-0").unwrap(), second.as_str());
    assert_eq!(
        env.list("apps", "controllerrevisions", Some("default"), "app=web")
            .len(),
        2
    );

    // Scaling down removes web-2 before web-1; the claims stay.
    env.patch(
        "apps",
        "statefulsets",
        Some("default"),
        "web",
        json!({"spec": {"replicas": 1}}),
    );
    eventually(Duration::from_secs(10), "web-2 deleted first", || {
        (names(&env) == ["web-0", "web-1"]).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        names(&env),
        ["web-0", "web-1"],
        "web-1 waits for web-2 to go"
    );
    eventually(Duration::from_secs(10), "web-1 gone", || {
        (names(&env) == ["web-0"]).then_some(())
    })
    .await;
    assert_eq!(
        env.list("", "persistentvolumeclaims", Some("default"), "app=web")
            .len(),
        3
    );
}

#[tokio::test(start_paused = true)]
async fn a_parallel_statefulset_with_a_partition_and_claim_deletion() {
    let env = Env::start(ClusterConfig::default());
    let mut body = statefulset("db", 3, "pg");
    body["spec"]["podManagementPolicy"] = json!("Parallel");
    body["spec"]["updateStrategy"] = json!({"type": "RollingUpdate",
        "rollingUpdate": {"partition": 2}});
    body["spec"]["persistentVolumeClaimRetentionPolicy"] =
        json!({"whenDeleted": "Retain", "whenScaled": "Delete"});
    env.create("apps", "statefulsets", Some("default"), body);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        env.list("", "pods", Some("default"), "app=db").len(),
        3,
        "Parallel creates every pod at once"
    );
    eventually(Duration::from_secs(10), "ready", || {
        let s = env.get("apps", "statefulsets", Some("default"), "db")?;
        (s["status"]["readyReplicas"] == 3).then_some(())
    })
    .await;
    env.patch(
        "apps",
        "statefulsets",
        Some("default"),
        "db",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "pg:2"}]}}}}),
    );
    let set = eventually(Duration::from_secs(10), "the partition updated", || {
        let s = env.get("apps", "statefulsets", Some("default"), "db")?;
        (s["status"]["updatedReplicas"] == 1 && s["status"]["readyReplicas"] == 3).then_some(s)
    })
    .await;
    assert_eq!(set["status"]["currentReplicas"], 2);
    assert_ne!(
        set["status"]["currentRevision"],
        set["status"]["updateRevision"]
    );
    tokio::time::sleep(Duration::from_secs(5)).await;
    let pod = env.get("", "pods", Some("default"), "db-1").unwrap();
    assert_eq!(
        pod["metadata"]["labels"]["controller-revision-hash"], set["status"]["currentRevision"],
        "below the partition: not updated"
    );
    // A deleted pod comes back under its name, on the node its volume is on.
    let before = env.get("", "pods", Some("default"), "db-0").unwrap();
    env.store
        .delete(
            &env.res("", "pods"),
            Some("default"),
            "db-0",
            &DeleteOptions::default(),
        )
        .unwrap();
    let after = eventually(Duration::from_secs(10), "db-0 back", || {
        let p = env.get("", "pods", Some("default"), "db-0")?;
        (p["metadata"]["uid"] != before["metadata"]["uid"] && p["status"]["phase"] == "Running")
            .then_some(p)
    })
    .await;
    assert_eq!(after["spec"]["nodeName"], before["spec"]["nodeName"]);
    env.patch(
        "apps",
        "statefulsets",
        Some("default"),
        "db",
        json!({"spec": {"replicas": 1}}),
    );
    eventually(
        Duration::from_secs(10),
        "claims of scaled pods deleted",
        || {
            let pvcs = env.list("", "persistentvolumeclaims", Some("default"), "app=db");
            let pods = env.list("", "pods", Some("default"), "app=db");
            (pvcs.len() == 1 && pods.len() == 1).then_some(())
        },
    )
    .await;
    assert!(
        env.get("", "persistentvolumeclaims", Some("default"), "www-db-0")
            .is_some()
    );
}

#[tokio::test(start_paused = true)]
async fn claims_bind_by_class_and_pods_wait_for_them() {
    let env = Env::start(ClusterConfig::default());
    let class = env
        .get("storage.k8s.io", "storageclasses", None, "standard")
        .unwrap();
    assert_eq!(
        class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
        "true"
    );
    assert_eq!(class["volumeBindingMode"], "WaitForFirstConsumer");
    env.create(
        "storage.k8s.io",
        "storageclasses",
        None,
        json!({"metadata": {"name": "fast"}, "provisioner": "example.com/fast",
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
    );
    let claim = |name: &str, class: Value| {
        let mut spec = json!({"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "2Gi"}}});
        if !class.is_null() {
            spec["storageClassName"] = class;
        }
        json!({"metadata": {"name": name}, "spec": spec})
    };
    env.create(
        "",
        "persistentvolumeclaims",
        Some("default"),
        claim("quick", json!("fast")),
    );
    env.create(
        "",
        "persistentvolumeclaims",
        Some("default"),
        claim("none", json!("")),
    );
    env.create(
        "",
        "persistentvolumeclaims",
        Some("default"),
        claim("later", Value::Null),
    );
    // Immediate: bound without a pod, and its volume has no node affinity.
    let quick = eventually(Duration::from_secs(5), "the immediate claim bound", || {
        let c = env.get("", "persistentvolumeclaims", Some("default"), "quick")?;
        (c["status"]["phase"] == "Bound").then_some(c)
    })
    .await;
    let pv_name = quick["spec"]["volumeName"].as_str().unwrap().to_string();
    let pv = env.get("", "persistentvolumes", None, &pv_name).unwrap();
    assert!(pv["spec"]["nodeAffinity"].is_null());
    assert_eq!(pv["spec"]["capacity"]["storage"], "2Gi");
    // Without a class: the default one, waiting for its first consumer.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let later = env
        .get("", "persistentvolumeclaims", Some("default"), "later")
        .unwrap();
    assert_eq!(later["spec"]["storageClassName"], "standard");
    assert_eq!(later["status"]["phase"], "Pending");
    // A pod on a claim of no class stays Pending with the scheduler's message.
    let pod = |name: &str, claim: &str| {
        json!({"metadata": {"name": name}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        }})
    };
    env.create("", "pods", Some("default"), pod("stuck", "none"));
    env.create("", "pods", Some("default"), pod("user", "later"));
    let stuck = eventually(Duration::from_secs(5), "the unschedulable pod", || {
        let p = env.get("", "pods", Some("default"), "stuck")?;
        condition(&p, "PodScheduled").cloned()
    })
    .await;
    assert_eq!(
        stuck["message"],
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    // The consumer gets its claim provisioned on its node, then runs.
    let user = eventually(Duration::from_secs(5), "the consumer running", || {
        let p = env.get("", "pods", Some("default"), "user")?;
        (p["status"]["phase"] == "Running").then_some(p)
    })
    .await;
    let later = env
        .get("", "persistentvolumeclaims", Some("default"), "later")
        .unwrap();
    assert_eq!(later["status"]["phase"], "Bound");
    assert_eq!(
        later["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        user["spec"]["nodeName"]
    );
    // A bound claim whose volume is deleted is Lost.
    env.store
        .delete(
            &env.res("", "persistentvolumes"),
            None,
            later["spec"]["volumeName"].as_str().unwrap(),
            &DeleteOptions::default(),
        )
        .unwrap();
    eventually(Duration::from_secs(5), "the claim lost", || {
        let c = env.get("", "persistentvolumeclaims", Some("default"), "later")?;
        (c["status"]["phase"] == "Lost").then_some(())
    })
    .await;
    // An ephemeral volume's claim is made for its pod, bound, and goes with the pod.
    env.create(
        "",
        "pods",
        Some("default"),
        json!({"metadata": {"name": "scratchy"}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {
                "metadata": {"labels": {"kind": "scratch"}},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}},
            }}}],
        }}),
    );
    eventually(
        Duration::from_secs(5),
        "the ephemeral volume's pod running",
        || {
            let p = env.get("", "pods", Some("default"), "scratchy")?;
            (p["status"]["phase"] == "Running").then_some(())
        },
    )
    .await;
    let scratch = env
        .get(
            "",
            "persistentvolumeclaims",
            Some("default"),
            "scratchy-scratch",
        )
        .unwrap();
    assert_eq!(scratch["status"]["phase"], "Bound");
    assert_eq!(scratch["metadata"]["labels"]["kind"], "scratch");
    assert_eq!(
        scratch["metadata"]["ownerReferences"][0]["name"],
        "scratchy"
    );
    env.store
        .delete(
            &env.res("", "pods"),
            Some("default"),
            "scratchy",
            &DeleteOptions::default(),
        )
        .unwrap();
    eventually(Duration::from_secs(5), "the ephemeral claim gone", || {
        env.get(
            "",
            "persistentvolumeclaims",
            Some("default"),
            "scratchy-scratch",
        )
        .is_none()
        .then_some(())
    })
    .await;
    // A deleted claim's volume (reclaim policy Delete) goes too.
    env.store
        .delete(
            &env.res("", "persistentvolumeclaims"),
            Some("default"),
            "quick",
            &DeleteOptions::default(),
        )
        .unwrap();
    eventually(
        Duration::from_secs(5),
        "the released volume deleted",
        || {
            env.get("", "persistentvolumes", None, &pv_name)
                .is_none()
                .then_some(())
        },
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_daemonset_runs_one_pod_per_eligible_node_and_rolls_updates() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "apps",
        "daemonsets",
        Some("kube-system"),
        json!({
            "metadata": {"name": "agent"},
            "spec": {
                "selector": {"matchLabels": {"app": "agent"}},
                "template": {
                    "metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "c", "image": "agent:1"}]},
                },
            },
        }),
    );
    let status = |env: &Env| {
        env.get("apps", "daemonsets", Some("kube-system"), "agent")
            .map(|d| d["status"].clone())
    };
    let s = eventually(Duration::from_secs(10), "three available pods", || {
        let s = status(&env)?;
        (s["numberAvailable"] == 3).then_some(s)
    })
    .await;
    assert_eq!(s["desiredNumberScheduled"], 3);
    assert_eq!(s["currentNumberScheduled"], 3);
    assert_eq!(s["numberReady"], 3);
    assert_eq!(s["updatedNumberScheduled"], 3);
    assert_eq!(s["numberMisscheduled"], 0);
    let pods = env.list("", "pods", Some("kube-system"), "app=agent");
    let mut nodes: Vec<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["node-1", "node-2", "node-3"]);
    let pod = &pods[0];
    let tolerations = pod["spec"]["tolerations"].as_array().unwrap();
    assert!(
        tolerations
            .iter()
            .any(|t| t["key"] == "node.kubernetes.io/unschedulable"
                && t["operator"] == "Exists"
                && t["effect"] == "NoSchedule")
    );
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            [0]["matchFields"][0]["values"][0],
        pod["spec"]["nodeName"]
    );
    let hash = pod["metadata"]["labels"]["controller-revision-hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(pod["metadata"]["labels"]["pod-template-generation"], "1");
    assert!(
        env.get(
            "apps",
            "controllerrevisions",
            Some("kube-system"),
            &format!("agent-{hash}")
        )
        .is_some()
    );

    // A NoExecute taint it does not tolerate takes node-3 out.
    env.patch(
        "",
        "nodes",
        None,
        "node-3",
        json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoExecute"}]}}),
    );
    eventually(Duration::from_secs(10), "node-3's pod gone", || {
        let s = status(&env)?;
        let pods = env.list("", "pods", Some("kube-system"), "app=agent");
        (s["desiredNumberScheduled"] == 2 && pods.len() == 2).then_some(())
    })
    .await;

    // An update replaces the pods one at a time.
    env.patch(
        "apps",
        "daemonsets",
        Some("kube-system"),
        "agent",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "agent:2"}]}}}}),
    );
    let mut most_unavailable = 0;
    eventually(Duration::from_secs(20), "the update", || {
        let s = status(&env)?;
        let pods = env.list("", "pods", Some("kube-system"), "app=agent");
        let ready = pods
            .iter()
            .filter(|p| {
                p["metadata"]["deletionTimestamp"].is_null()
                    && condition(p, "Ready").is_some_and(|c| c["status"] == "True")
            })
            .count();
        most_unavailable = most_unavailable.max(2usize.saturating_sub(ready));
        (s["updatedNumberScheduled"] == 2
            && s["numberAvailable"] == 2
            && s["observedGeneration"] == 2)
            .then_some(())
    })
    .await;
    assert!(
        most_unavailable <= 1,
        "maxUnavailable 1: {most_unavailable}"
    );
    for pod in env.list("", "pods", Some("kube-system"), "app=agent") {
        assert_eq!(pod["spec"]["containers"][0]["image"], "agent:2");
    }
}

fn cronjob(name: &str, policy: &str, run_for: &str) -> Value {
    json!({
        "metadata": {"name": name},
        "spec": {
            "schedule": "*/1 * * * *",
            "concurrencyPolicy": policy,
            "successfulJobsHistoryLimit": 2,
            "jobTemplate": {
                "metadata": {"labels": {"cron": name}},
                "spec": {"template": {
                    "metadata": {"annotations": {"sim.crt.dev/run-for": run_for}},
                    "spec": {"restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}]},
                }},
            },
        },
    })
}

#[tokio::test(start_paused = true)]
async fn a_cronjob_fires_on_the_clock_and_keeps_its_history() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "batch",
        "cronjobs",
        Some("default"),
        cronjob("tick", "Allow", "1s"),
    );
    let jobs = |env: &Env| env.list("batch", "jobs", Some("default"), "cron=tick");
    assert!(jobs(&env).is_empty());
    // The first minute boundary passes: one Job, named by its scheduled minute.
    let job = eventually(Duration::from_secs(70), "the first job", || {
        jobs(&env).into_iter().next()
    })
    .await;
    let cj = env
        .get("batch", "cronjobs", Some("default"), "tick")
        .unwrap();
    let scheduled = cj["status"]["lastScheduleTime"].as_str().unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(scheduled).unwrap();
    assert_eq!(at.timestamp() % 60, 0);
    assert_eq!(
        job["metadata"]["name"],
        format!("tick-{}", at.timestamp() / 60)
    );
    assert_eq!(
        job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"],
        scheduled
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(cj["status"]["active"][0]["name"], job["metadata"]["name"]);
    let cj = eventually(Duration::from_secs(20), "the job to complete", || {
        let cj = env.get("batch", "cronjobs", Some("default"), "tick")?;
        (cj["status"]["active"].is_null() && cj["status"]["lastSuccessfulTime"].is_string())
            .then_some(cj)
    })
    .await;
    assert!(cj["status"]["lastSuccessfulTime"].as_str().unwrap() >= scheduled);
    // Three more minutes: four Jobs ran, two successful ones are kept.
    tokio::time::sleep(Duration::from_secs(185)).await;
    let kept = jobs(&env);
    assert_eq!(kept.len(), 2, "successfulJobsHistoryLimit");
    let last = env
        .get("batch", "cronjobs", Some("default"), "tick")
        .unwrap();
    let last_at =
        chrono::DateTime::parse_from_rfc3339(last["status"]["lastScheduleTime"].as_str().unwrap())
            .unwrap();
    assert_eq!((last_at - at).num_minutes(), 3);
}

#[tokio::test(start_paused = true)]
async fn cronjob_concurrency_policies_and_suspension() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "batch",
        "cronjobs",
        Some("default"),
        cronjob("forbid", "Forbid", "10m"),
    );
    env.create(
        "batch",
        "cronjobs",
        Some("default"),
        cronjob("replace", "Replace", "10m"),
    );
    let mut suspended = cronjob("off", "Allow", "1s");
    suspended["spec"]["suspend"] = json!(true);
    env.create("batch", "cronjobs", Some("default"), suspended);
    tokio::time::sleep(Duration::from_secs(150)).await;
    let names = |cron: &str| {
        let mut n: Vec<String> = env
            .list("batch", "jobs", Some("default"), &format!("cron={cron}"))
            .iter()
            .filter(|j| j["metadata"]["deletionTimestamp"].is_null())
            .map(|j| j["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        n.sort();
        n
    };
    let forbid = names("forbid");
    assert_eq!(
        forbid.len(),
        1,
        "Forbid: the first job still runs: {forbid:?}"
    );
    let replace = names("replace");
    assert_eq!(replace.len(), 1, "Replace: one job at a time: {replace:?}");
    let cj = env
        .get("batch", "cronjobs", Some("default"), "replace")
        .unwrap();
    assert_eq!(cj["status"]["active"].as_array().unwrap().len(), 1);
    assert_eq!(cj["status"]["active"][0]["name"], replace[0].as_str());
    let minute = |name: &str| name.rsplit('-').next().unwrap().parse::<i64>().unwrap();
    assert!(
        minute(&replace[0]) > minute(&forbid[0]),
        "Replace started a later job: {replace:?} {forbid:?}"
    );
    assert!(names("off").is_empty(), "suspended");
    let events = env.list("events.k8s.io", "events", Some("default"), "");
    assert!(
        events
            .iter()
            .any(|e| e["reason"] == "JobAlreadyActive" && e["regarding"]["name"] == "forbid")
    );
}

#[tokio::test(start_paused = true)]
async fn an_ordered_scale_down_removes_an_unhealthy_pod_too() {
    let env = Env::start(ClusterConfig::default());
    let mut body = statefulset("kv", 3, "kv");
    body["spec"]["volumeClaimTemplates"] = json!([]);
    env.create("apps", "statefulsets", Some("default"), body);
    eventually(Duration::from_secs(20), "three ready pods", || {
        let s = env.get("apps", "statefulsets", Some("default"), "kv")?;
        (s["status"]["readyReplicas"] == 3).then_some(())
    })
    .await;
    // kv-1 turns unready.
    env.patch(
        "",
        "pods",
        Some("default"),
        "kv-1",
        json!({"metadata": {"annotations": {"sim.crt.dev/ready-after": "never"}}}),
    );
    eventually(Duration::from_secs(10), "kv-1 unready", || {
        let s = env.get("apps", "statefulsets", Some("default"), "kv")?;
        (s["status"]["readyReplicas"] == 2).then_some(())
    })
    .await;
    env.patch(
        "apps",
        "statefulsets",
        Some("default"),
        "kv",
        json!({"spec": {"replicas": 1}}),
    );
    eventually(Duration::from_secs(10), "kv-2 and kv-1 gone", || {
        let pods = env.list("", "pods", Some("default"), "app=kv");
        (pods.len() == 1 && pods[0]["metadata"]["name"] == "kv-0").then_some(())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_daemonset_with_max_surge_keeps_every_node_served() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "apps",
        "daemonsets",
        Some("default"),
        json!({
            "metadata": {"name": "proxy"},
            "spec": {
                "selector": {"matchLabels": {"app": "proxy"}},
                "updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "template": {
                    "metadata": {"labels": {"app": "proxy"},
                        "annotations": {"sim.crt.dev/ready-after": "2s"}},
                    "spec": {"containers": [{"name": "c", "image": "proxy:1"}]},
                },
            },
        }),
    );
    let status = |env: &Env| {
        env.get("apps", "daemonsets", Some("default"), "proxy")
            .map(|d| d["status"].clone())
    };
    eventually(Duration::from_secs(10), "three available pods", || {
        (status(&env)?["numberAvailable"] == 3).then_some(())
    })
    .await;
    env.patch(
        "apps",
        "daemonsets",
        Some("default"),
        "proxy",
        json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "proxy:2"}]}}}}),
    );
    let (mut fewest_ready, mut most_pods) = (3, 3);
    eventually(Duration::from_secs(30), "the surge update", || {
        let pods: Vec<Value> = env
            .list("", "pods", Some("default"), "app=proxy")
            .into_iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .collect();
        let ready = pods
            .iter()
            .filter(|p| condition(p, "Ready").is_some_and(|c| c["status"] == "True"))
            .count();
        fewest_ready = fewest_ready.min(ready);
        most_pods = most_pods.max(pods.len());
        let s = status(&env)?;
        (pods.len() == 3
            && pods
                .iter()
                .all(|p| p["spec"]["containers"][0]["image"] == "proxy:2")
            && s["numberAvailable"] == 3)
            .then_some(())
    })
    .await;
    assert_eq!(
        fewest_ready, 3,
        "maxUnavailable 0: every node kept a ready pod"
    );
    assert_eq!(most_pods, 4, "maxSurge 1: one extra pod at a time");
}

#[tokio::test(start_paused = true)]
async fn a_replicaset_adopts_matching_orphans_and_counts_only_what_it_selects() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "",
        "pods",
        Some("default"),
        json!({"metadata": {"name": "stray", "labels": {"app": "adopt"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    let rs = env.create(
        "apps",
        "replicasets",
        Some("default"),
        json!({"metadata": {"name": "adopter"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "adopt"}},
                "template": {"metadata": {"labels": {"app": "adopt"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    eventually(Duration::from_secs(10), "two ready replicas", || {
        let rs = env.get("apps", "replicasets", Some("default"), "adopter")?;
        (rs["status"]["readyReplicas"] == 2).then_some(())
    })
    .await;
    // The stray pod was adopted, so only one was created.
    let pods = env.list("", "pods", Some("default"), "app=adopt");
    assert_eq!(pods.len(), 2, "{pods:?}");
    let stray = env.get("", "pods", Some("default"), "stray").unwrap();
    let owner = &stray["metadata"]["ownerReferences"][0];
    assert_eq!(owner["uid"], rs["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);

    // A pod relabelled out of the selector no longer counts: a replacement is made.
    env.patch(
        "",
        "pods",
        Some("default"),
        "stray",
        json!({"metadata": {"labels": {"app": "elsewhere"}}}),
    );
    eventually(Duration::from_secs(10), "a replacement", || {
        (env.list("", "pods", Some("default"), "app=adopt").len() == 2).then_some(())
    })
    .await;
}

/// The kubelet keeps pod conditions it does not own (another controller's, a user's) when it
/// writes the pod's status, as the kubelet's status manager does.
#[tokio::test(start_paused = true)]
async fn the_kubelet_keeps_conditions_it_does_not_own() {
    let env = Env::start(ClusterConfig::default());
    env.create(
        "",
        "pods",
        Some("default"),
        json!({"metadata": {"name": "slow", "annotations": {"sim.crt.dev/ready-after": "5s"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
    );
    let running = eventually(Duration::from_secs(5), "running", || {
        let pod = env.get("", "pods", Some("default"), "slow")?;
        (pod["status"]["phase"] == "Running").then_some(pod)
    })
    .await;
    let mut conditions = running["status"]["conditions"].as_array().unwrap().clone();
    conditions.push(json!({"type": "MyStatus", "status": "True"}));
    let patch = json!({"status": {"conditions": conditions}});
    env.store
        .patch(
            &env.res("", "pods"),
            Some("default"),
            "slow",
            Some("status"),
            PatchType::Merge,
            patch.to_string().as_bytes(),
            &opts(),
        )
        .unwrap();
    let ready = eventually(Duration::from_secs(30), "ready", || {
        let pod = env.get("", "pods", Some("default"), "slow")?;
        condition(&pod, "Ready")
            .is_some_and(|c| c["status"] == "True")
            .then_some(pod)
    })
    .await;
    assert_eq!(
        condition(&ready, "MyStatus").map(|c| c["status"].clone()),
        Some(json!("True")),
        "{ready:#}"
    );
}

/// Required pod anti-affinity spreads a Deployment's replicas one per node (the fourth of
/// three nodes stays Pending with upstream's reason), and required pod affinity puts a pod
/// beside the pods it names.
#[tokio::test(start_paused = true)]
async fn inter_pod_affinity_and_anti_affinity_place_pods_by_their_neighbours() {
    let env = Env::start(ClusterConfig::default());
    let term = |app: &str| {
        json!([{"labelSelector": {"matchLabels": {"app": app}},
            "topologyKey": "kubernetes.io/hostname"}])
    };
    env.create(
        "apps",
        "deployments",
        Some("default"),
        json!({"metadata": {"name": "spread"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "spread"}},
                "template": {"metadata": {"labels": {"app": "spread"}},
                    "spec": {"affinity": {"podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": term("spread")}},
                        "containers": [{"name": "c", "image": "nginx"}]}}}}),
    );
    let pods = eventually(Duration::from_secs(10), "three placed, one pending", || {
        let pods = env.list("", "pods", Some("default"), "app=spread");
        let placed = pods
            .iter()
            .filter(|p| {
                p["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty())
            })
            .count();
        let pending = pods
            .iter()
            .find(|p| condition(p, "PodScheduled").is_some_and(|c| c["reason"] == "Unschedulable"));
        (pods.len() == 4 && placed == 3 && pending.is_some()).then_some(pods)
    })
    .await;
    let mut nodes: Vec<&str> = pods
        .iter()
        .filter_map(|p| p["spec"]["nodeName"].as_str())
        .collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "one replica per node: {nodes:?}");
    let pending = pods
        .iter()
        .find(|p| p["spec"]["nodeName"].as_str().is_none_or(str::is_empty))
        .unwrap();
    let message = condition(pending, "PodScheduled").unwrap()["message"].clone();
    assert_eq!(
        message,
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. preemption: \
         0/3 nodes are available: 3 No preemption victims found for incoming pod."
    );

    // A pod that must sit beside one of the replicas goes to a node that has one.
    env.create(
        "",
        "pods",
        Some("default"),
        json!({"metadata": {"name": "sidekick", "labels": {"app": "sidekick"}},
            "spec": {"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": term("spread")}},
                "containers": [{"name": "c", "image": "nginx"}]}}),
    );
    let node = eventually(Duration::from_secs(10), "the sidekick placed", || {
        let pod = env.get("", "pods", Some("default"), "sidekick")?;
        pod["spec"]["nodeName"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    })
    .await;
    assert!(nodes.contains(&node.as_str()), "{node} hosts a replica");
    // One that must sit beside pods that exist nowhere (and that it is not) stays Pending.
    env.create(
        "",
        "pods",
        Some("default"),
        json!({"metadata": {"name": "lonely"},
            "spec": {"affinity": {"podAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": term("nobody")}},
                "containers": [{"name": "c", "image": "nginx"}]}}),
    );
    let lonely = eventually(Duration::from_secs(10), "lonely unschedulable", || {
        let pod = env.get("", "pods", Some("default"), "lonely")?;
        condition(&pod, "PodScheduled")
            .filter(|c| c["reason"] == "Unschedulable")
            .map(|c| c["message"].clone())
    })
    .await;
    assert!(
        lonely
            .as_str()
            .unwrap()
            .starts_with("0/3 nodes are available: 3 node(s) didn't match pod affinity rules."),
        "{lonely}"
    );
}
