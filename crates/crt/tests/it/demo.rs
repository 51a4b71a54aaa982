//! `crt demo` (the README's run command) runs its scenario on an embedded API server, shows
//! every step and the flow through the pipeline, ends with a summary and exits 0. The Greeting's
//! webhooks are served by the operator's manager and called by the embedded server: the
//! defaulter fills in step 1's message, the validator refuses step 2's bad one and warns on the
//! delete of step 6.

use std::process::Command;

#[test]
fn crt_demo_plays_every_step_and_exits_0() {
    let out = Command::new(env!("CARGO_BIN_EXE_crt"))
        .arg("demo")
        .output()
        .expect("crt demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crt demo exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    // The lines appear in this order.
    let expected = [
        "== install the CustomResourceDefinition greetings.demo.crt.dev",
        "ok: CRD established",
        "== operator running",
        "webhooks at https://127.0.0.1:",
        "/mutate-demo-crt-dev-v1-greeting defaults an empty message to \"hello\", \
         /validate-demo-crt-dev-v1-greeting refuses \"goodbye\"",
        "installed on the API server",
        "== step 1/6: create Greeting hello (replicas 2, no message: the defaulting webhook sets \"hello\")",
        "ok: the created Greeting came back with message \"hello\", set by the defaulting webhook",
        "ok: hello-0 and hello-1 say \"hello\"",
        "== step 2/6: change the message",
        "then try \"goodbye, world\"",
        "ok: both ConfigMaps say \"bonjour\"",
        // The webhook's denial, worded as kube-apiserver words it, with the webhook's message.
        "ok: \"goodbye, world\" is refused by the validating webhook: admission webhook \
         \"vgreeting-v1.demo.crt.dev\" denied the request: spec.message: a Greeting says hello, never \"goodbye\"",
        "== step 3/6: scale up to 4",
        "ok: hello-0..hello-3 exist",
        "ok: scaling to 11 is refused by the schema: ",
        "== step 4/6: scale down to 1",
        "ok: hello-1..hello-3 deleted",
        "== step 5/6: delete the child ConfigMap hello-0",
        "ok: hello-0 is back",
        "== step 6/6: delete the Greeting",
        "ok: cleanup deleted hello-0",
        "ok: the delete came back with the validating webhook's warning: its 1 ConfigMap(s) are \
         deleted with it (finalizer demo.crt.dev/cleanup)",
        "== summary",
        "scenario: 6 steps, each verified",
        "Events: the operator recorded",
        "pipeline: ",
    ];
    let mut rest = &stdout[..];
    for line in expected {
        match rest.find(line) {
            Some(at) => rest = &rest[at + line.len()..],
            None => panic!("{line:?} missing (or out of order) in:\n{stdout}"),
        }
    }

    // The flow: an event passing the predicate and enqueued by the handler, one a predicate
    // dropped (the operator's own status write), reconciles with their results, the owned
    // child's event enqueuing its owner, and the finalizer at work.
    let flow = [
        "event     Create Greeting crt-demo/hello | predicate: pass (new object) | handler: enqueue crt-demo/hello",
        "| predicate: drop (generation unchanged",
        "reconcile crt-demo/hello (#1) taken from the queue",
        "result    crt-demo/hello (#1) | add finalizer demo.crt.dev/cleanup, create hello-0, create hello-1",
        "| done (",
        "event     Delete ConfigMap crt-demo/hello-0 | predicate: pass (gone) | handler: enqueue crt-demo/hello",
        "add finalizer demo.crt.dev/cleanup",
        "cleanup done, remove finalizer demo.crt.dev/cleanup",
        // The manager's /metrics, with controller-runtime's names and labels.
        "controller_runtime_reconcile_total{controller=\"greeting\",result=\"success\"}",
        "controller_runtime_webhook_requests_total{webhook=\"/validate-demo-crt-dev-v1-greeting\",code=\"200\"}",
    ];
    for needle in flow {
        assert!(stdout.contains(needle), "{needle:?} missing in:\n{stdout}");
    }
    // A readable flow, not a log flood.
    let lines = stdout.lines().count();
    assert!(lines < 200, "{lines} lines:\n{stdout}");
}

/// On a cluster (`--kubeconfig`), which cannot call back into the demo's process, the demo
/// installs no webhooks, says so, and plays the same steps with the message written by hand.
#[test]
fn crt_demo_on_a_cluster_runs_without_webhooks_and_says_so() {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use kube_client::Api;

    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(crt_apiserver::Server::start(Default::default()))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    server.write_kubeconfig(&kubeconfig).unwrap();

    // The server keeps serving on the runtime's workers while the demo runs.
    let out = Command::new(env!("CARGO_BIN_EXE_crt"))
        .arg("demo")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .expect("crt demo runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "crt demo exited with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let expected = [
        "== operator running",
        "webhooks: off (the cluster cannot call back into this process)",
        "== step 1/6: create Greeting hello (replicas 2, message \"hello\")",
        "ok: hello-0 and hello-1 say \"hello\"",
        "== step 2/6: change the message to \"bonjour\" (a spec change: generation 2)\n",
        "== step 6/6: delete the Greeting",
        "ok: cleanup deleted hello-0",
        "== summary",
        "left on the cluster: namespace crt-demo",
    ];
    let mut rest = &stdout[..];
    for line in expected {
        match rest.find(line) {
            Some(at) => rest = &rest[at + line.len()..],
            None => panic!("{line:?} missing (or out of order) in:\n{stdout}"),
        }
    }
    for absent in ["defaulting webhook", "validating webhook", "goodbye, world"] {
        assert!(!stdout.contains(absent), "{absent:?} in:\n{stdout}");
    }

    // Nothing was installed that would make the cluster call this (now gone) process.
    let (mutating, validating) = rt.block_on(async {
        let kc = kube_client::config::Kubeconfig::read_from(&kubeconfig).unwrap();
        let config = kube_client::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .unwrap();
        let client = kube_client::Client::try_from(config).unwrap();
        let list = Default::default();
        (
            Api::<MutatingWebhookConfiguration>::all(client.clone())
                .list(&list)
                .await
                .unwrap()
                .items
                .len(),
            Api::<ValidatingWebhookConfiguration>::all(client)
                .list(&list)
                .await
                .unwrap()
                .items
                .len(),
        )
    });
    assert_eq!((mutating, validating), (0, 0));
    rt.block_on(server.stop());
}
