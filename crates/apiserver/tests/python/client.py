"""Drives the embedded API server with the official Kubernetes Python client.

Run by tests/kubectl.rs (official_python_client_uses_the_kubeconfig) as
`python client.py KUBECONFIG NAMESPACE NAME WRONG_CA_KUBECONFIG`. It loads the kubeconfig as a
user would (TLS verified against the kubeconfig's CA, bearer token), then lists namespaces,
creates a ConfigMap NAME in NAMESPACE, reads it back, patches it (strategic merge and JSON
patch), watches from the created resourceVersion until the patches arrive, and reads the
ConfigMap `from-rust` that the test created with kube-client. Last it checks that verification
is real: the same server with another CA in WRONG_CA_KUBECONFIG must fail the TLS handshake.
It prints one JSON object on stdout for the test to assert; any other error is an exception
and a non-zero exit.
"""

import json
import sys

import urllib3

from kubernetes import client, config, watch


def wrong_ca_error(kubeconfig):
    """The error of a request whose server certificate is not signed by the kubeconfig's CA."""
    api = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))
    try:
        api.list_namespace(_request_timeout=10)
    except urllib3.exceptions.MaxRetryError as err:
        if isinstance(err.reason, urllib3.exceptions.SSLError):
            return "SSLError: " + str(err.reason)
        raise
    raise SystemExit("a server certificate the kubeconfig's CA did not sign was accepted")


def main(kubeconfig, namespace, name, wrong_ca_kubeconfig):
    config.load_kube_config(config_file=kubeconfig)
    configuration = client.Configuration.get_default_copy()
    if not configuration.verify_ssl or not configuration.ssl_ca_cert:
        raise SystemExit("the kubeconfig must make the client verify TLS against its CA")
    core = client.CoreV1Api()
    out = {"host": configuration.host}

    out["namespaces"] = sorted(ns.metadata.name for ns in core.list_namespace().items)

    body = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"made-by": "python"}),
        data={"a": "1"},
    )
    created = core.create_namespaced_config_map(namespace, body)
    out["created"] = {
        "uid": created.metadata.uid,
        "resourceVersion": created.metadata.resource_version,
        "data": created.data,
    }

    read = core.read_namespaced_config_map(name, namespace)
    out["read"] = {"uid": read.metadata.uid, "data": read.data}

    # A dict body goes as a strategic merge patch, a list as a JSON patch.
    core.patch_namespaced_config_map(name, namespace, {"data": {"b": "2"}})
    patched = core.patch_namespaced_config_map(
        name, namespace, [{"op": "replace", "path": "/data/a", "value": "3"}]
    )
    out["patched"] = {
        "resourceVersion": patched.metadata.resource_version,
        "data": patched.data,
    }

    # Watching from the created resourceVersion replays the two patches as MODIFIED.
    events = []
    w = watch.Watch()
    for event in w.stream(
        core.list_namespaced_config_map,
        namespace,
        field_selector="metadata.name=" + name,
        resource_version=created.metadata.resource_version,
        timeout_seconds=10,
    ):
        obj = event["object"]
        events.append(
            {
                "type": event["type"],
                "name": obj.metadata.name,
                "resourceVersion": obj.metadata.resource_version,
                "data": obj.data,
            }
        )
        if obj.metadata.resource_version == patched.metadata.resource_version:
            w.stop()
    out["watch"] = events

    listed = core.list_namespaced_config_map(namespace, label_selector="made-by=python")
    out["labelled"] = [cm.metadata.name for cm in listed.items]

    out["from_rust"] = core.read_namespaced_config_map("from-rust", namespace).data

    out["wrong_ca"] = wrong_ca_error(wrong_ca_kubeconfig)

    json.dump(out, sys.stdout, sort_keys=True)
    print()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        raise SystemExit("usage: client.py KUBECONFIG NAMESPACE NAME WRONG_CA_KUBECONFIG")
    main(*sys.argv[1:])
