//! Bad inputs of the core group, metadata and the small groups (RBAC, coordination, events).
//!
//! Each `rule` names the upstream function (and check) the case mirrors:
//! `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go` for metadata,
//! `pkg/apis/core/validation/validation.go` and `events.go` for the core group,
//! `pkg/apis/rbac/validation/validation.go`, `pkg/apis/coordination/validation/validation.go`.
//! Messages are whole; Go's `%#v` renderings (`[]string{...}`, `core.ServicePort{...}`,
//! `rbac.RoleRef{...}`) are upstream's.

use serde_json::json;

use super::{Case, check_all, object};

/// `IsDNS1123Subdomain`'s message.
macro_rules! subdomain {
    () => {
        r"a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    };
}

/// `IsDNS1035Label`'s message.
macro_rules! dns1035 {
    () => {
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    };
}

/// The regex part of `IsQualifiedName`'s messages.
macro_rules! qualified {
    () => {
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    };
}

/// `IsValidLabelValue`'s message.
macro_rules! label_value {
    () => {
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    };
}

/// `IsConfigMapKey`'s charset message.
macro_rules! config_key {
    () => {
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
    };
}

fn svc(name: &str, spec: serde_json::Value) -> serde_json::Value {
    object("v1", "Service", name, json!({ "spec": spec }))
}

fn rbac(kind: &str, name: &str, fields: serde_json::Value) -> serde_json::Value {
    object("rbac.authorization.k8s.io/v1", kind, name, fields)
}

fn role_ref(kind: &str, name: &str) -> serde_json::Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name})
}

#[tokio::test]
async fn core_bad_inputs_are_refused_as_upstream_refuses_them() {
    let big = "a".repeat(1024 * 1024 + 1);
    let big_annotation = "a".repeat(256 * 1024);
    check_all(vec![
        // --- metadata (ValidateObjectMeta and the kinds' name functions)
        Case::create(
            "ValidateObjectMeta: name (NameIsDNSSubdomain)",
            object("v1", "ConfigMap", "Bad_Name", json!({})),
            concat!(r#"ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": "#, subdomain!()),
        )
        .causes(&[("FieldValueInvalid", "metadata.name")]),
        Case::create(
            "ValidateServiceName (NameIsDNS1035Label)",
            svc("1web", json!({"ports": [{"port": 80}]})),
            concat!(r#"Service "1web" is invalid: metadata.name: Invalid value: "1web": "#, dns1035!()),
        ),
        Case::create(
            "ValidateNamespaceName (IsDNS1123Label: a subdomain with dots)",
            object("v1", "Namespace", "team.a", json!({})),
            r#"Namespace "team.a" is invalid: metadata.name: Invalid value: "team.a": must not contain dots"#,
        ),
        Case::create(
            "ValidateServiceAccountName (NameIsDNSSubdomain)",
            object("v1", "ServiceAccount", "Robot", json!({})),
            concat!(r#"ServiceAccount "Robot" is invalid: metadata.name: Invalid value: "Robot": "#, subdomain!()),
        ),
        Case::create(
            "rbac minimalNameRequirements (IsValidPathSegmentName: '%')",
            rbac("Role", "50%", json!({})),
            r#"Role.rbac.authorization.k8s.io "50%" is invalid: metadata.name: Invalid value: "50%": may not contain '%'"#,
        ),
        Case::create(
            "ValidateObjectMeta: label keys (ValidateLabelName, IsQualifiedName)",
            object("v1", "ConfigMap", "bad-label-key", json!({"metadata": {"labels": {"bad key": "v"}}})),
            concat!(r#"ConfigMap "bad-label-key" is invalid: metadata.labels: Invalid value: "bad key": name part "#, qualified!()),
        )
        .causes(&[("FieldValueInvalid", "metadata.labels")]),
        Case::create(
            "ValidateObjectMeta: label values (IsValidLabelValue)",
            object("v1", "ConfigMap", "bad-label", json!({"metadata": {"labels": {"a": "-x"}}})),
            concat!(r#"ConfigMap "bad-label" is invalid: metadata.labels: Invalid value: "-x": "#, label_value!()),
        )
        .causes(&[("FieldValueInvalid", "metadata.labels")]),
        Case::create(
            "ValidateObjectMeta: label values are at most 63 characters (IsValidLabelValue)",
            object("v1", "ConfigMap", "long-label", json!({"metadata": {"labels": {"a": "b".repeat(64)}}})),
            "ConfigMap \"long-label\" is invalid: metadata.labels: Invalid value: \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\": must be no more than 63 characters",
        ),
        Case::create(
            "ValidateAnnotations: keys are qualified names (one '/' at most)",
            object("v1", "ConfigMap", "bad-annotation", json!({"metadata": {"annotations": {"a/b/c": "x"}}})),
            concat!(r#"ConfigMap "bad-annotation" is invalid: metadata.annotations: Invalid value: "a/b/c": a qualified name "#, qualified!(), r#" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#),
        ),
        Case::create(
            "ValidateAnnotations: total size (TotalAnnotationSizeLimitB)",
            object("v1", "ConfigMap", "fat-annotations", json!({"metadata": {"annotations": {"k": big_annotation}}})),
            r#"ConfigMap "fat-annotations" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"#,
        )
        .causes(&[("FieldValueTooLong", "metadata.annotations")]),
        Case::create(
            "validateOwnerReference: uid must not be empty",
            object("v1", "ConfigMap", "owner-no-uid", json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "o"}]}})),
            r#"ConfigMap "owner-no-uid" is invalid: metadata.ownerReferences.uid: Invalid value: "": must not be empty"#,
        ),
        Case::create(
            "validateOwnerReference: version must not be empty",
            object("v1", "ConfigMap", "owner-no-version", json!({"metadata": {"ownerReferences": [
                {"apiVersion": "apps/", "kind": "Deployment", "name": "o", "uid": "u1"}]}})),
            r#"ConfigMap "owner-no-version" is invalid: metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty"#,
        ),
        Case::create(
            "validateOwnerReference: BannedOwners (core v1 Event)",
            object("v1", "ConfigMap", "owned-by-event", json!({"metadata": {"ownerReferences": [
                {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u1"}]}})),
            r#"ConfigMap "owned-by-event" is invalid: metadata.ownerReferences: Invalid value: v1.OwnerReference{APIVersion:"v1", Kind:"Event", Name:"e", UID:"u1", Controller:(*bool)(nil), BlockOwnerDeletion:(*bool)(nil)}: /v1, Kind=Event is disallowed from being an owner"#,
        ),
        Case::create(
            "validateKubeFinalizerName: neither standard nor domain-qualified",
            object("v1", "ConfigMap", "plain-finalizer", json!({"metadata": {"finalizers": ["cleanup"]}})),
            r#"ConfigMap "plain-finalizer" is invalid: metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is it fully qualified"#,
        )
        .causes(&[("FieldValueInvalid", "metadata.finalizers[0]")]),
        Case::create(
            "ValidateFinalizerName: a qualified name (IsQualifiedName)",
            object("v1", "ConfigMap", "bad-finalizer", json!({"metadata": {"finalizers": ["example.com/a/b"]}})),
            concat!(r#"ConfigMap "bad-finalizer" is invalid: metadata.finalizers: Invalid value: "example.com/a/b": a qualified name "#, qualified!(), r#" with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#),
        )
        .causes(&[("FieldValueInvalid", "metadata.finalizers")]),
        Case::create(
            "ValidateFinalizers: orphan and foregroundDeletion cannot be both set",
            object("v1", "ConfigMap", "both-gc-finalizers", json!({"metadata": {"finalizers": ["orphan", "foregroundDeletion"]}})),
            r#"ConfigMap "both-gc-finalizers" is invalid: metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set"#,
        ),
        // --- ConfigMap (ValidateConfigMap)
        Case::create(
            "ValidateConfigMap: data keys (IsConfigMapKey)",
            object("v1", "ConfigMap", "bad-key", json!({"data": {"bad key": "x"}})),
            concat!(r#"ConfigMap "bad-key" is invalid: data[bad key]: Invalid value: "bad key": "#, config_key!()),
        )
        .causes(&[("FieldValueInvalid", "data[bad key]")]),
        Case::create(
            "ValidateConfigMap: data keys (IsConfigMapKey, hasChDirPrefix)",
            object("v1", "ConfigMap", "dotdot-key", json!({"data": {"..x": "x"}})),
            r#"ConfigMap "dotdot-key" is invalid: data[..x]: Invalid value: "..x": must not start with '..'"#,
        ),
        Case::create(
            "ValidateConfigMap: binaryData keys (IsConfigMapKey)",
            object("v1", "ConfigMap", "bad-binary-key", json!({"binaryData": {"a:b": "eA=="}})),
            concat!(r#"ConfigMap "bad-binary-key" is invalid: binaryData[a:b]: Invalid value: "a:b": "#, config_key!()),
        ),
        Case::create(
            "ValidateConfigMap: a key in both data and binaryData",
            object("v1", "ConfigMap", "dup-key", json!({"data": {"k": "v"}, "binaryData": {"k": "dg=="}})),
            r#"ConfigMap "dup-key" is invalid: data[k]: Invalid value: "k": duplicate of key present in binaryData"#,
        ),
        Case::create(
            "ValidateConfigMap: total size (core.MaxSecretSize, on the empty path)",
            object("v1", "ConfigMap", "too-big", json!({"data": {"big": big}})),
            r#"ConfigMap "too-big" is invalid: []: Too long: may not be more than 1048576 bytes"#,
        )
        .causes(&[("FieldValueTooLong", "[]")]),
        // --- Secret (ValidateSecret, ValidateSecretUpdate)
        Case::create(
            "ValidateSecret: data keys (IsConfigMapKey)",
            object("v1", "Secret", "bad-secret-key", json!({"data": {"bad key": "eA=="}})),
            concat!(r#"Secret "bad-secret-key" is invalid: data[bad key]: Invalid value: "bad key": "#, config_key!()),
        ),
        Case::create(
            "ValidateSecret: kubernetes.io/tls requires tls.crt and tls.key",
            object("v1", "Secret", "tls-empty", json!({"type": "kubernetes.io/tls", "data": {}})),
            r#"Secret "tls-empty" is invalid: [data[tls.crt]: Required value, data[tls.key]: Required value]"#,
        )
        .causes(&[("FieldValueRequired", "data[tls.crt]"), ("FieldValueRequired", "data[tls.key]")]),
        Case::create(
            "ValidateSecret: kubernetes.io/dockerconfigjson requires .dockerconfigjson",
            object("v1", "Secret", "docker-empty", json!({"type": "kubernetes.io/dockerconfigjson"})),
            r#"Secret "docker-empty" is invalid: data[.dockerconfigjson]: Required value"#,
        ),
        Case::create(
            "ValidateSecret: .dockerconfigjson is JSON (json.Unmarshal's error)",
            object("v1", "Secret", "docker-not-json", json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eA=="}})),
            r#"Secret "docker-not-json" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": invalid character 'x' looking for beginning of value"#,
        ),
        Case::create(
            "ValidateSecret: .dockerconfigjson is a JSON object (json.Unmarshal's error)",
            object("v1", "Secret", "docker-array", json!({"type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "W10="}})),
            r#"Secret "docker-array" is invalid: data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into Go value of type map[string]interface {}"#,
        ),
        Case::create(
            "ValidateSecret: kubernetes.io/basic-auth requires username or password",
            object("v1", "Secret", "basic-empty", json!({"type": "kubernetes.io/basic-auth"})),
            r#"Secret "basic-empty" is invalid: [data[username]: Required value, data[password]: Required value]"#,
        ),
        Case::create(
            "ValidateSecret: kubernetes.io/ssh-auth requires ssh-privatekey",
            object("v1", "Secret", "ssh-empty", json!({"type": "kubernetes.io/ssh-auth", "data": {"ssh-privatekey": ""}})),
            r#"Secret "ssh-empty" is invalid: data[ssh-privatekey]: Required value"#,
        ),
        Case::create(
            "ValidateSecret: service-account-token requires the service-account.name annotation",
            object("v1", "Secret", "token-no-sa", json!({"type": "kubernetes.io/service-account-token"})),
            r#"Secret "token-no-sa" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value"#,
        ),
        Case::update(
            "ValidateSecretUpdate: type is immutable (ValidateImmutableField)",
            object("v1", "Secret", "retyped", json!({"data": {"tls.crt": "", "tls.key": ""}})),
            object("v1", "Secret", "retyped", json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})),
            r#"Secret "retyped" is invalid: type: Invalid value: "kubernetes.io/tls": field is immutable"#,
        ),
        Case::update(
            "ValidateConfigMapUpdate: immutable data",
            object("v1", "ConfigMap", "frozen", json!({"immutable": true, "data": {"a": "1"}})),
            object("v1", "ConfigMap", "frozen", json!({"immutable": true, "data": {"a": "2"}})),
            "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
        ),
        // --- Service (ValidateService, validateServicePort, ValidateServiceUpdate)
        Case::create(
            "validateServicePort: port (IsValidPortNum), targetPort set",
            svc("port-high", json!({"ports": [{"port": 99999, "targetPort": 8080}]})),
            r#"Service "port-high" is invalid: spec.ports[0].port: Invalid value: 99999: must be between 1 and 65535, inclusive"#,
        )
        .causes(&[("FieldValueInvalid", "spec.ports[0].port")]),
        Case::create(
            "validateServicePort: port and the targetPort defaulted from it (IsValidPortNum, ValidatePortNumOrName)",
            svc("port-high-default", json!({"ports": [{"port": 99999}]})),
            r#"Service "port-high-default" is invalid: [spec.ports[0].port: Invalid value: 99999: must be between 1 and 65535, inclusive, spec.ports[0].targetPort: Invalid value: 99999: must be between 1 and 65535, inclusive]"#,
        ),
        Case::create(
            "validateServicePort: every problem of a port, in upstream's order",
            svc("port-zero-icmp", json!({"ports": [{"port": 0, "protocol": "ICMP", "targetPort": 80}]})),
            r#"Service "port-zero-icmp" is invalid: [spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"]"#,
        )
        .causes(&[("FieldValueInvalid", "spec.ports[0].port"), ("FieldValueNotSupported", "spec.ports[0].protocol")]),
        Case::create(
            "validateServicePort: a name is required when there is more than one port",
            svc("unnamed-ports", json!({"ports": [{"port": 80}, {"port": 443}]})),
            r#"Service "unnamed-ports" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]"#,
        ),
        Case::create(
            "validateServicePort: duplicate names",
            svc("dup-port-names", json!({"ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}]})),
            r#"Service "dup-port-names" is invalid: spec.ports[1].name: Duplicate value: "http""#,
        )
        .causes(&[("FieldValueDuplicate", "spec.ports[1].name")]),
        Case::create(
            "ValidateService: duplicate (protocol, port) pairs",
            svc("dup-ports", json!({"ports": [{"name": "a", "port": 80}, {"name": "b", "port": 80}]})),
            r#"Service "dup-ports" is invalid: spec.ports[1]: Duplicate value: core.ServicePort{Name:"", Protocol:"TCP", AppProtocol:(*string)(nil), Port:80, TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, NodePort:0}"#,
        ),
        Case::create(
            "validateServicePort: protocol (supportedPortProtocols)",
            svc("bad-protocol", json!({"ports": [{"port": 80, "protocol": "HTTP"}]})),
            r#"Service "bad-protocol" is invalid: spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
        )
        .causes(&[("FieldValueNotSupported", "spec.ports[0].protocol")]),
        Case::create(
            "validateServicePort: a named targetPort (IsValidPortName)",
            svc("bad-target-name", json!({"ports": [{"port": 80, "targetPort": "web_port"}]})),
            r#"Service "bad-target-name" is invalid: spec.ports[0].targetPort: Invalid value: "web_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"#,
        ),
        Case::create(
            "ValidateService: type (supportedServiceType)",
            svc("bad-type", json!({"type": "Internal", "ports": [{"port": 80}]})),
            r#"Service "bad-type" is invalid: spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#,
        ),
        Case::create(
            "ValidateService: nodePort may not be used when type is ClusterIP",
            svc("clusterip-nodeport", json!({"ports": [{"port": 80, "nodePort": 30080}]})),
            "Service \"clusterip-nodeport\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        )
        .causes(&[("FieldValueForbidden", "spec.ports[0].nodePort")]),
        Case::create(
            "ValidateService: ExternalName requires externalName",
            svc("no-cname", json!({"type": "ExternalName"})),
            r#"Service "no-cname" is invalid: spec.externalName: Required value"#,
        ),
        Case::create(
            "ValidateService: externalName is a DNS-1123 subdomain",
            svc("bad-cname", json!({"type": "ExternalName", "externalName": "Bad_Host."})),
            concat!(r#"Service "bad-cname" is invalid: spec.externalName: Invalid value: "Bad_Host": "#, subdomain!()),
        ),
        Case::create(
            "ValidateService: sessionAffinity (supportedSessionAffinityType)",
            svc("sticky", json!({"sessionAffinity": "Sticky", "ports": [{"port": 80}]})),
            r#"Service "sticky" is invalid: spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None""#,
        ),
        Case::create(
            "ValidateService: selector labels (ValidateLabels)",
            svc("bad-selector", json!({"selector": {"app": "-x"}, "ports": [{"port": 80}]})),
            concat!(r#"Service "bad-selector" is invalid: spec.selector: Invalid value: "-x": "#, label_value!()),
        ),
        Case::create(
            "ValidateServiceClusterIPsRelatedFields: clusterIPs are IPs (IsValidIP)",
            svc("bad-ip", json!({"clusterIP": "10.96.0.300", "ports": [{"port": 80}]})),
            r#"Service "bad-ip" is invalid: spec.clusterIPs[0]: Invalid value: "10.96.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"#,
        ),
        Case::create(
            "ValidateService: a LoadBalancer is not headless",
            svc("headless-lb", json!({"type": "LoadBalancer", "clusterIP": "None", "ports": [{"port": 80}]})),
            r#"Service "headless-lb" is invalid: spec.clusterIPs[0]: Invalid value: "None": may not be set to 'None' for LoadBalancer services"#,
        ),
        Case::update(
            "validateUpgradeDowngradeClusterIPs: clusterIPs may not change once set",
            svc("moved", json!({"ports": [{"port": 80}]})),
            svc("moved", json!({"clusterIP": "10.96.200.1", "clusterIPs": ["10.96.200.1"], "ports": [{"port": 80}]})),
            r#"Service "moved" is invalid: spec.clusterIPs[0]: Invalid value: []string{"10.96.200.1"}: may not change once set"#,
        ),
        // --- Namespace (ValidateNamespace)
        Case::create(
            "ValidateNamespace: spec.finalizers (validateKubeFinalizerName)",
            object("v1", "Namespace", "ns-custom-finalizer", json!({"spec": {"finalizers": ["custom"]}})),
            r#"Namespace "ns-custom-finalizer" is invalid: spec.finalizers: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified"#,
        ),
        // --- Event (events.go: legacyValidateEvent, ValidateEventCreate)
        Case::create(
            "legacyValidateEvent: involvedObject.namespace matches the Event's",
            object("v1", "Event", "ev-elsewhere", json!({"involvedObject": {"kind": "Pod", "name": "p", "namespace": "other"}, "reason": "Started"})),
            r#"Event "ev-elsewhere" is invalid: involvedObject.namespace: Invalid value: "other": does not match event.namespace"#,
        ),
        Case::create(
            "legacyValidateEvent: a new-style Event (eventTime) requires action",
            object("v1", "Event", "ev-no-action", json!({"involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Started", "reportingComponent": "example.com/ctl",
                "reportingInstance": "ctl-1"})),
            r#"Event "ev-no-action" is invalid: action: Required value"#,
        ),
        Case::create(
            "ValidateEventCreate (events.k8s.io/v1): eventTime is required",
            object("events.k8s.io/v1", "Event", "ev-no-time", json!({"regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
                "reason": "Started", "action": "Start", "type": "Normal", "reportingController": "example.com/ctl",
                "reportingInstance": "ctl-1"})),
            r#"Event.events.k8s.io "ev-no-time" is invalid: eventTime: Required value"#,
        ),
        Case::create(
            "ValidateEventCreate (events.k8s.io/v1): type is Normal or Warning",
            object("events.k8s.io/v1", "Event", "ev-info", json!({"regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Started", "action": "Start", "type": "Info",
                "reportingController": "example.com/ctl", "reportingInstance": "ctl-1"})),
            r#"Event.events.k8s.io "ev-info" is invalid: type: Invalid value: "": has invalid value: Info"#,
        ),
        Case::update(
            "ValidateEventUpdate (events.k8s.io/v1): reason is immutable (checked twice upstream; the summary dedupes)",
            object("events.k8s.io/v1", "Event", "ev-reason", json!({"regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Started", "action": "Start", "type": "Normal",
                "reportingController": "example.com/ctl", "reportingInstance": "ctl-1"})),
            object("events.k8s.io/v1", "Event", "ev-reason", json!({"regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Restarted", "action": "Start", "type": "Normal",
                "reportingController": "example.com/ctl", "reportingInstance": "ctl-1"})),
            r#"Event.events.k8s.io "ev-reason" is invalid: reason: Invalid value: "Restarted": field is immutable"#,
        )
        .causes(&[("FieldValueInvalid", "reason"), ("FieldValueInvalid", "reason")]),
        // --- Lease (ValidateLeaseSpec)
        Case::create(
            "ValidateLeaseSpec: leaseDurationSeconds must be greater than 0",
            object("coordination.k8s.io/v1", "Lease", "lease-zero", json!({"spec": {"leaseDurationSeconds": 0}})),
            r#"Lease.coordination.k8s.io "lease-zero" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"#,
        ),
        Case::create(
            "ValidateLeaseSpec: leaseTransitions must be non-negative",
            object("coordination.k8s.io/v1", "Lease", "lease-negative", json!({"spec": {"leaseTransitions": -1}})),
            r#"Lease.coordination.k8s.io "lease-negative" is invalid: spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"#,
        ),
        // --- RBAC (validatePolicyRule, ValidateRoleBinding, validateRoleBindingSubject)
        Case::create(
            "validatePolicyRule: verbs are required",
            rbac("Role", "no-verbs", json!({"rules": [{"apiGroups": [""], "resources": ["pods"]}]})),
            r#"Role.rbac.authorization.k8s.io "no-verbs" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"#,
        )
        .causes(&[("FieldValueRequired", "rules[0].verbs")]),
        Case::create(
            "validatePolicyRule: namespaced rules cannot apply to non-resource URLs",
            rbac("Role", "role-urls", json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]})),
            r#"Role.rbac.authorization.k8s.io "role-urls" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/healthz"}: namespaced rules cannot apply to non-resource URLs"#,
        ),
        Case::create(
            "validatePolicyRule: resource rules supply an api group",
            rbac("ClusterRole", "no-groups", json!({"rules": [{"verbs": ["get"], "resources": ["pods"]}]})),
            r#"ClusterRole.rbac.authorization.k8s.io "no-groups" is invalid: rules[0].apiGroups: Required value: resource rules must supply at least one api group"#,
        ),
        Case::create(
            "validatePolicyRule: resource names apply to one resource",
            rbac("ClusterRole", "names-many", json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["x"]}]})),
            r#"ClusterRole.rbac.authorization.k8s.io "names-many" is invalid: rules[0].resourceNames: Required value: resource names cannot apply to multiple resources"#,
        ),
        Case::create(
            "validatePolicyRule: not both resources and non-resource URLs",
            rbac("ClusterRole", "urls-and-pods", json!({"rules": [{"verbs": ["get"], "resources": ["pods"], "nonResourceURLs": ["/metrics"]}]})),
            r#"ClusterRole.rbac.authorization.k8s.io "urls-and-pods" is invalid: rules[0].nonResourceURLs: Invalid value: []string{"/metrics"}: rules cannot apply to both regular resources and non-resource URLs"#,
        ),
        Case::create(
            "ValidateRoleBinding: roleRef.kind is Role or ClusterRole",
            rbac("RoleBinding", "rb-user-ref", json!({"roleRef": role_ref("User", "x")})),
            r#"RoleBinding.rbac.authorization.k8s.io "rb-user-ref" is invalid: roleRef.kind: Unsupported value: "User": supported values: "Role", "ClusterRole""#,
        ),
        Case::create(
            "ValidateClusterRoleBinding: roleRef.kind is ClusterRole",
            rbac("ClusterRoleBinding", "crb-role-ref", json!({"roleRef": role_ref("Role", "x")})),
            r#"ClusterRoleBinding.rbac.authorization.k8s.io "crb-role-ref" is invalid: roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
        ),
        Case::create(
            "ValidateRoleBinding: roleRef.apiGroup is rbac.authorization.k8s.io",
            rbac("RoleBinding", "rb-other-group", json!({"roleRef": {"apiGroup": "example.com", "kind": "Role", "name": "x"}})),
            r#"RoleBinding.rbac.authorization.k8s.io "rb-other-group" is invalid: roleRef.apiGroup: Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io""#,
        ),
        Case::create(
            "validateRoleBindingSubject: kind is ServiceAccount, User or Group",
            rbac("RoleBinding", "rb-robot", json!({"roleRef": role_ref("Role", "x"), "subjects": [{"kind": "Robot", "name": "r"}]})),
            r#"RoleBinding.rbac.authorization.k8s.io "rb-robot" is invalid: subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
        ),
        Case::create(
            "validateRoleBindingSubject: a cluster binding's ServiceAccount names its namespace",
            rbac("ClusterRoleBinding", "crb-sa-no-ns", json!({"roleRef": role_ref("ClusterRole", "view"), "subjects": [{"kind": "ServiceAccount", "name": "sa"}]})),
            r#"ClusterRoleBinding.rbac.authorization.k8s.io "crb-sa-no-ns" is invalid: subjects[0].namespace: Required value"#,
        ),
        Case::create(
            "validateRoleBindingSubject: a ServiceAccount's apiGroup is empty",
            rbac("RoleBinding", "rb-sa-group", json!({"roleRef": role_ref("Role", "x"), "subjects": [{"kind": "ServiceAccount", "name": "sa", "apiGroup": "rbac.authorization.k8s.io"}]})),
            r#"RoleBinding.rbac.authorization.k8s.io "rb-sa-group" is invalid: subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: """#,
        ),
        Case::update(
            "ValidateRoleBindingUpdate: cannot change roleRef",
            rbac("RoleBinding", "rb-moved", json!({"roleRef": role_ref("ClusterRole", "view")})),
            rbac("RoleBinding", "rb-moved", json!({"roleRef": role_ref("ClusterRole", "edit")})),
            r#"RoleBinding.rbac.authorization.k8s.io "rb-moved" is invalid: roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: cannot change roleRef"#,
        )
        .causes(&[("FieldValueInvalid", "roleRef")]),
    ])
    .await;
}

/// Valid objects of the same kinds pass: the rules above refuse only what upstream refuses.
#[tokio::test]
async fn core_valid_counterparts_are_accepted() {
    let server = crate::common::server().await;
    let client = crate::common::client(&server).await;
    let ok = [
        object(
            "v1",
            "ConfigMap",
            "cm-ok",
            json!({"metadata": {"labels": {"app.kubernetes.io/name": "web"},
            "annotations": {"Example.com/Note": "x"}, "finalizers": ["example.com/cleanup", "kubernetes"]},
            "data": {"app.properties": "a=b", "KEY_1": "v"}, "binaryData": {"blob": "AAE="}}),
        ),
        object(
            "v1",
            "Secret",
            "tls-ok",
            json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}}),
        ),
        object(
            "v1",
            "Secret",
            "basic-ok",
            json!({"type": "kubernetes.io/basic-auth", "stringData": {"username": "u"}}),
        ),
        svc(
            "web-ok",
            json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"},
            {"name": "dns", "port": 53, "protocol": "UDP"}, {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}),
        ),
        svc(
            "headless-ok",
            json!({"clusterIP": "None", "selector": {"app": "web"}}),
        ),
        svc(
            "external-ok",
            json!({"type": "ExternalName", "externalName": "db.example.com."}),
        ),
        svc(
            "np-ok",
            json!({"type": "NodePort", "externalTrafficPolicy": "Local", "ports": [{"port": 80, "nodePort": 30081}]}),
        ),
        object(
            "v1",
            "Namespace",
            "ns-ok",
            json!({"spec": {"finalizers": ["kubernetes", "example.com/x"]}}),
        ),
        object(
            "coordination.k8s.io/v1",
            "Lease",
            "lease-ok",
            json!({"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}}),
        ),
        rbac(
            "Role",
            "system:reader",
            json!({"rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["p"]}]}),
        ),
        rbac(
            "ClusterRole",
            "metrics-ok",
            json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]}),
        ),
        rbac(
            "RoleBinding",
            "rb-ok",
            json!({"roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "sa", "namespace": "default"}]}),
        ),
        rbac(
            "ClusterRoleBinding",
            "crb-ok",
            json!({"roleRef": role_ref("ClusterRole", "view"),
            "subjects": [{"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"}]}),
        ),
        object(
            "events.k8s.io/v1",
            "Event",
            "ev-ok",
            json!({"regarding": {"kind": "Pod", "name": "p", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Started", "action": "Start", "type": "Normal",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1", "note": "ok"}),
        ),
    ];
    for obj in ok {
        let uri = super::collection(&obj);
        let (code, _, body) = crate::common::raw(
            &client,
            "POST",
            &uri,
            "application/json",
            serde_json::to_vec(&obj).unwrap(),
        )
        .await;
        assert_eq!(code, 201, "{} was refused: {body}", obj["metadata"]["name"]);
    }
}
