//! Bad inputs of pods, pod templates and the workloads that carry them (apps, batch), each
//! checked against upstream's `pkg/apis/{core,apps,batch}/validation/validation.go` (and
//! robfig/cron v3 for schedules): the rule, the field path and the whole message.

use serde_json::{Value, json};

use super::{Case, check_all, object};

const DNS_LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn app() -> Value {
    json!({"name": "app", "image": "nginx:1.27"})
}

/// A Pod named `name` whose single container is `app()` merged with `container`, and whose
/// spec is merged with `spec`.
fn pod(name: &str, container: Value, spec: Value) -> Value {
    let mut c = app();
    merge(&mut c, container);
    let mut s = json!({ "containers": [c] });
    merge(&mut s, spec);
    object("v1", "Pod", name, json!({ "spec": s }))
}

fn merge(base: &mut Value, extra: Value) {
    if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
        b.extend(e);
    }
}

fn template(labels: Value, restart: &str) -> Value {
    json!({"metadata": {"labels": labels},
           "spec": {"restartPolicy": restart, "containers": [app()]}})
}

/// An apps/v1 object of `kind` selecting and labelling `app: web`, its spec merged with
/// `spec`.
fn workload(kind: &str, name: &str, spec: Value) -> Value {
    let mut s = json!({"selector": {"matchLabels": {"app": "web"}},
                       "template": template(json!({"app": "web"}), "Always")});
    merge(&mut s, spec);
    object("apps/v1", kind, name, json!({ "spec": s }))
}

fn job(name: &str, spec: Value) -> Value {
    let mut s = json!({"template": template(json!({}), "Never")});
    merge(&mut s, spec);
    object("batch/v1", "Job", name, json!({ "spec": s }))
}

fn cron_job(name: &str, spec: Value) -> Value {
    let mut s = json!({"schedule": "*/5 * * * *",
        "jobTemplate": {"spec": {"template": template(json!({}), "OnFailure")}}});
    merge(&mut s, spec);
    object("batch/v1", "CronJob", name, json!({ "spec": s }))
}

fn pod_cases() -> Vec<Case> {
    vec![
        Case::create(
            "ValidatePodSpec/validateContainers: containers required",
            object("v1", "Pod", "empty", json!({"spec": {"containers": []}})),
            "Pod \"empty\" is invalid: spec.containers: Required value",
        ),
        Case::create(
            "validateContainerCommon: container name is a DNS-1123 label",
            pod("bad-container-name", json!({"name": "Web_1"}), json!({})),
            Box::leak(format!("Pod \"bad-container-name\" is invalid: spec.containers[0].name: Invalid value: \"Web_1\": {DNS_LABEL}").into_boxed_str()),
        ),
        Case::create(
            "validateContainers: container names unique",
            pod("dup-containers", json!({}), json!({"containers": [app(), {"name": "app", "image": "busybox"}]})),
            "Pod \"dup-containers\" is invalid: spec.containers[1].name: Duplicate value: \"app\"",
        )
        .causes(&[("FieldValueDuplicate", "spec.containers[1].name")]),
        Case::create(
            "validateContainerCommon: image required",
            pod("no-image", json!({}), json!({"containers": [{"name": "app"}]})),
            "Pod \"no-image\" is invalid: spec.containers[0].image: Required value",
        )
        .causes(&[("FieldValueRequired", "spec.containers[0].image")]),
        Case::create(
            "validateContainerPorts: containerPort in 1..65535 (IsValidPortNum)",
            pod("big-port", json!({"ports": [{"containerPort": 70000}]}), json!({})),
            "Pod \"big-port\" is invalid: spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        Case::create(
            "validateContainerPorts: containerPort required",
            pod("no-port", json!({"ports": [{"name": "http"}]}), json!({})),
            "Pod \"no-port\" is invalid: spec.containers[0].ports[0].containerPort: Required value",
        ),
        Case::create(
            "validateContainerPorts: hostPort in 1..65535",
            pod("big-host-port", json!({"ports": [{"containerPort": 80, "hostPort": 70000}]}), json!({})),
            "Pod \"big-host-port\" is invalid: spec.containers[0].ports[0].hostPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        Case::create(
            "validateContainerPorts: protocol is one of supportedPortProtocols",
            pod("http-proto", json!({"ports": [{"containerPort": 80, "protocol": "HTTP"}]}), json!({})),
            "Pod \"http-proto\" is invalid: spec.containers[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        )
        .causes(&[("FieldValueNotSupported", "spec.containers[0].ports[0].protocol")]),
        Case::create(
            "validateContainerPorts: port name is an IANA_SVC_NAME (IsValidPortName)",
            pod("port-name", json!({"ports": [{"name": "Http", "containerPort": 80}]}), json!({})),
            "Pod \"port-name\" is invalid: spec.containers[0].ports[0].name: Invalid value: \"Http\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        ),
        Case::create(
            "validateContainerPorts: port names unique",
            pod("dup-port-names", json!({"ports": [{"name": "http", "containerPort": 80}, {"name": "http", "containerPort": 81}]}), json!({})),
            "Pod \"dup-port-names\" is invalid: spec.containers[0].ports[1].name: Duplicate value: \"http\"",
        ),
        Case::create(
            "checkHostPortConflicts: protocol/hostIP/hostPort unique across containers",
            pod("host-ports", json!({"ports": [{"containerPort": 80, "hostPort": 8080}]}),
                json!({"containers": [{"name": "a", "image": "nginx", "ports": [{"containerPort": 80, "hostPort": 8080}]},
                                      {"name": "b", "image": "nginx", "ports": [{"containerPort": 81, "hostPort": 8080}]}]})),
            "Pod \"host-ports\" is invalid: spec.containers[1].ports[0].hostPort: Duplicate value: \"TCP//8080\"",
        ),
        Case::create(
            "ValidateEnv: env names (IsRelaxedEnvVarName, RelaxedEnvironmentVariableValidation on in 1.33)",
            pod("env-name", json!({"env": [{"name": "MY=VAR", "value": "1"}]}), json!({})),
            "Pod \"env-name\" is invalid: spec.containers[0].env[0].name: Invalid value: \"MY=VAR\": a valid environment variable name must consist only of printable ASCII characters other than '='",
        ),
        Case::create(
            "validateEnvVarValueFrom: one source required",
            pod("env-no-source", json!({"env": [{"name": "A", "valueFrom": {}}]}), json!({})),
            "Pod \"env-no-source\" is invalid: spec.containers[0].env[0].valueFrom: Invalid value: \"\": must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        ),
        Case::create(
            "validateEnvVarValueFrom: not with value",
            pod("env-value-and-from", json!({"env": [{"name": "A", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}), json!({})),
            "Pod \"env-value-and-from\" is invalid: spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
        ),
        Case::create(
            "validateEnvVarValueFrom: at most one source",
            pod("env-two-sources", json!({"env": [{"name": "A", "valueFrom": {
                "secretKeyRef": {"name": "s", "key": "k"}, "configMapKeyRef": {"name": "c", "key": "k"}}}]}), json!({})),
            "Pod \"env-two-sources\" is invalid: spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not have more than one field specified at a time",
        ),
        Case::create(
            "validateResourceRequirements: requests <= limits",
            pod("cpu-over", json!({"resources": {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}}), json!({})),
            "Pod \"cpu-over\" is invalid: spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        )
        .causes(&[("FieldValueInvalid", "spec.containers[0].resources.requests")]),
        Case::create(
            "validateResourceRequirements: requests <= limits, quantities printed canonically",
            pod("memory-over", json!({"resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}}}), json!({})),
            "Pod \"memory-over\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1Gi\": must be less than or equal to memory limit of 512Mi",
        ),
        Case::create(
            "ValidateResourceQuantityValue: quantities non-negative",
            pod("negative-cpu", json!({"resources": {"limits": {"cpu": "-1"}}}), json!({})),
            "Pod \"negative-cpu\" is invalid: spec.containers[0].resources.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
        ),
        Case::create(
            "validateContainerResourceName: standard resource names",
            pod("foo-resource", json!({"resources": {"limits": {"foo": "1"}}}), json!({})),
            "Pod \"foo-resource\" is invalid: [spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified, spec.containers[0].resources.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers]",
        ),
        Case::create(
            "validateResourceRequirements: extended resources cannot be overcommitted",
            pod("gpu-overcommit", json!({"resources": {"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "2"}}}), json!({})),
            "Pod \"gpu-overcommit\" is invalid: spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/gpu limit of 2",
        ),
        Case::create(
            "ValidateVolumes: volume names unique",
            pod("dup-volumes", json!({}), json!({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]})),
            "Pod \"dup-volumes\" is invalid: spec.volumes[1].name: Duplicate value: \"data\"",
        ),
        Case::create(
            "ValidateVolumes: volume names are DNS-1123 labels",
            pod("volume-name", json!({}), json!({"volumes": [{"name": "Data", "emptyDir": {}}]})),
            Box::leak(format!("Pod \"volume-name\" is invalid: spec.volumes[0].name: Invalid value: \"Data\": {DNS_LABEL}").into_boxed_str()),
        ),
        Case::create(
            "validateVolumeSource: one volume type",
            pod("two-sources", json!({}), json!({"volumes": [{"name": "data", "emptyDir": {}, "configMap": {"name": "c"}}]})),
            "Pod \"two-sources\" is invalid: spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
        )
        .causes(&[("FieldValueForbidden", "spec.volumes[0].configMap")]),
        Case::create(
            "ValidateVolumeMounts: mounts name a volume",
            pod("mount-missing", json!({"volumeMounts": [{"name": "missing", "mountPath": "/data"}]}), json!({})),
            "Pod \"mount-missing\" is invalid: spec.containers[0].volumeMounts[0].name: Not found: \"missing\"",
        )
        .causes(&[("FieldValueNotFound", "spec.containers[0].volumeMounts[0].name")]),
        Case::create(
            "ValidateVolumeMounts: mountPath required",
            pod("mount-no-path", json!({"volumeMounts": [{"name": "data"}]}), json!({"volumes": [{"name": "data", "emptyDir": {}}]})),
            "Pod \"mount-no-path\" is invalid: spec.containers[0].volumeMounts[0].mountPath: Required value",
        ),
        Case::create(
            "ValidateVolumeMounts: mountPath unique",
            pod("mount-twice", json!({"volumeMounts": [{"name": "data", "mountPath": "/data"}, {"name": "data", "mountPath": "/data"}]}),
                json!({"volumes": [{"name": "data", "emptyDir": {}}]})),
            "Pod \"mount-twice\" is invalid: spec.containers[0].volumeMounts[1].mountPath: Invalid value: \"/data\": must be unique",
        ),
        Case::create(
            "validateRestartPolicy: supported values",
            pod("restart-sometimes", json!({}), json!({"restartPolicy": "Sometimes"})),
            "Pod \"restart-sometimes\" is invalid: spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ),
        Case::create(
            "validateDNSPolicy: supported values",
            pod("dns-custom", json!({}), json!({"dnsPolicy": "Custom"})),
            "Pod \"dns-custom\" is invalid: spec.dnsPolicy: Unsupported value: \"Custom\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\"",
        ),
        Case::create(
            "validatePodDNSConfig: dnsConfig required with dnsPolicy None",
            pod("dns-none", json!({}), json!({"dnsPolicy": "None"})),
            "Pod \"dns-none\" is invalid: spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None",
        ),
        Case::create(
            "validatePullPolicy: supported values",
            pod("pull-sometimes", json!({"imagePullPolicy": "Sometimes"}), json!({})),
            "Pod \"pull-sometimes\" is invalid: spec.containers[0].imagePullPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\"",
        ),
        Case::create(
            "ValidatePodSpec: activeDeadlineSeconds in 1..MaxInt32",
            pod("deadline-zero", json!({}), json!({"activeDeadlineSeconds": 0})),
            "Pod \"deadline-zero\" is invalid: spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive",
        ),
        Case::create(
            "validateLivenessProbe: successThreshold must be 1",
            pod("liveness-threshold", json!({"livenessProbe": {"exec": {"command": ["true"]}, "successThreshold": 2}}), json!({})),
            "Pod \"liveness-threshold\" is invalid: spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
        ),
        Case::create(
            "validateHandler: a probe needs a handler",
            pod("probe-no-handler", json!({"readinessProbe": {"periodSeconds": 5}}), json!({})),
            "Pod \"probe-no-handler\" is invalid: spec.containers[0].readinessProbe: Required value: must specify a handler type",
        ),
        Case::create(
            "validateInitContainers: probes need restartPolicy=Always",
            pod("init-probe", json!({}), json!({"initContainers": [{"name": "init", "image": "busybox",
                "livenessProbe": {"exec": {"command": ["true"]}}}]})),
            "Pod \"init-probe\" is invalid: spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
        ),
        Case::create(
            "validateContainers: restartPolicy only on init containers",
            pod("container-restart", json!({"restartPolicy": "Always"}), json!({})),
            "Pod \"container-restart\" is invalid: spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        ),
        Case::create(
            "validateContainerOnlyForPod: image without surrounding whitespace",
            pod("image-space", json!({"image": "nginx "}), json!({})),
            "Pod \"image-space\" is invalid: spec.containers[0].image: Invalid value: \"nginx \": must not have leading or trailing whitespace",
        ),
        Case::update(
            "ValidateContainerUpdates: pod updates may not add or remove containers",
            pod("grow", json!({}), json!({})),
            pod("grow", json!({}), json!({"containers": [app(), {"name": "side", "image": "busybox"}]})),
            "Pod \"grow\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers",
        ),
        Case::update(
            "ValidatePodUpdate: activeDeadlineSeconds may only decrease",
            pod("deadline", json!({}), json!({"activeDeadlineSeconds": 30})),
            pod("deadline", json!({}), json!({"activeDeadlineSeconds": 60})),
            "Pod \"deadline\" is invalid: spec.activeDeadlineSeconds: Invalid value: 60: must be less than or equal to previous value",
        ),
        Case::create(
            "validateInitContainers: names unique across containers and init containers",
            pod("init-dup", json!({}), json!({"initContainers": [{"name": "app", "image": "busybox"}]})),
            "Pod \"init-dup\" is invalid: spec.initContainers[0].name: Duplicate value: \"app\"",
        ),
        Case::create(
            "ValidatePodTemplateSpecForRC: selector matches the template's labels",
            object("v1", "ReplicationController", "rc-mismatch", json!({"spec": {"selector": {"app": "web"},
                "template": {"metadata": {"labels": {"app": "other"}}, "spec": {"containers": [app()]}}}})),
            "ReplicationController \"rc-mismatch\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`",
        ),
        Case::create(
            "ValidatePodTemplateSpecForRC: restartPolicy Always",
            object("v1", "ReplicationController", "rc-never", json!({"spec": {"selector": {"app": "web"},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"restartPolicy": "Never", "containers": [app()]}}}})),
            "ReplicationController \"rc-never\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ),
        Case::create(
            "ValidatePodTemplateSpec: a PodTemplate's containers need images",
            object("v1", "PodTemplate", "tpl", json!({"template": {"spec": {"containers": [{"name": "app"}]}}})),
            "PodTemplate \"tpl\" is invalid: template.spec.containers[0].image: Required value",
        ),
    ]
}

fn apps_cases() -> Vec<Case> {
    vec![
        Case::create(
            "ValidateDeploymentSpec: selector required (and the nil selector matches no labels)",
            object("apps/v1", "Deployment", "no-selector", json!({"spec": {"template": template(json!({"app": "web"}), "Always")}})),
            "Deployment.apps \"no-selector\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`]",
        )
        .causes(&[("FieldValueRequired", "spec.selector"), ("FieldValueInvalid", "spec.template.metadata.labels")]),
        Case::create(
            "ValidatePodTemplateSpecForReplicaSet: selector matches the template's labels",
            workload("Deployment", "mismatch", json!({"template": template(json!({"app": "other"}), "Always")})),
            "Deployment.apps \"mismatch\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"other\"}: `selector` does not match template `labels`",
        ),
        Case::create(
            "ValidateDeploymentSpec: empty selector",
            workload("Deployment", "empty-selector", json!({"selector": {}})),
            "Deployment.apps \"empty-selector\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
        ),
        Case::create(
            "ValidateDeploymentSpec: replicas non-negative",
            workload("Deployment", "negative", json!({"replicas": -1})),
            "Deployment.apps \"negative\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ),
        Case::create(
            "ValidatePodTemplateSpecForReplicaSet: restartPolicy Always",
            workload("Deployment", "never", json!({"template": template(json!({"app": "web"}), "Never")})),
            "Deployment.apps \"never\" is invalid: spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ),
        Case::create(
            "ValidatePodTemplateSpec: the template's pod spec is validated",
            workload("Deployment", "tpl-no-image", json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app"}]}}})),
            "Deployment.apps \"tpl-no-image\" is invalid: spec.template.spec.containers[0].image: Required value",
        ),
        Case::create(
            "ValidateRollingUpdateDeployment: maxUnavailable and maxSurge not both 0",
            workload("Deployment", "zero-zero", json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}})),
            "Deployment.apps \"zero-zero\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0",
        ),
        Case::create(
            "ValidateRollingUpdateDeployment: maxUnavailable at most 100%",
            workload("Deployment", "over-100", json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}})),
            "Deployment.apps \"over-100\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
        ),
        Case::create(
            "ValidatePositiveIntOrPercent: percent strings (IsValidPercent)",
            workload("Deployment", "bad-percent", json!({"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "abc"}}})),
            "Deployment.apps \"bad-percent\" is invalid: spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"abc\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
        ),
        Case::create(
            "ValidateDeploymentStrategy: no rollingUpdate with Recreate",
            workload("Deployment", "recreate", json!({"strategy": {"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}})),
            "Deployment.apps \"recreate\" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
        ),
        Case::create(
            "ValidateDeploymentSpec: progressDeadlineSeconds > minReadySeconds",
            workload("Deployment", "deadline", json!({"minReadySeconds": 10, "progressDeadlineSeconds": 10})),
            "Deployment.apps \"deadline\" is invalid: spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds",
        ),
        Case::create(
            "ValidateDeploymentSpec: revisionHistoryLimit non-negative",
            workload("Deployment", "history", json!({"revisionHistoryLimit": -1})),
            "Deployment.apps \"history\" is invalid: spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        Case::update(
            "deploymentStrategy.ValidateUpdate: apps/v1 selector immutable",
            workload("Deployment", "moving", json!({})),
            workload("Deployment", "moving", json!({"selector": {"matchLabels": {"app": "web2"}},
                "template": template(json!({"app": "web2"}), "Always")})),
            "Deployment.apps \"moving\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
        ),
        Case::create(
            "ValidateReplicaSetSpec: empty selector (worded as for deployments)",
            workload("ReplicaSet", "empty-selector", json!({"selector": {}})),
            "ReplicaSet.apps \"empty-selector\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment",
        ),
        Case::create(
            "ValidateDaemonSetSpec: a missing selector matches no labels",
            object("apps/v1", "DaemonSet", "no-selector", json!({"spec": {"template": template(json!({"app": "web"}), "Always")}})),
            "DaemonSet.apps \"no-selector\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
        ),
        Case::create(
            "ValidateRollingUpdateDaemonSet: maxUnavailable and maxSurge not both 0",
            workload("DaemonSet", "zero-zero", json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}})),
            "DaemonSet.apps \"zero-zero\" is invalid: spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
        ),
        Case::create(
            "ValidateDaemonSetSpec: no activeDeadlineSeconds in the template",
            workload("DaemonSet", "deadline", json!({"template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"activeDeadlineSeconds": 30, "containers": [app()]}}})),
            "DaemonSet.apps \"deadline\" is invalid: spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported",
        ),
        Case::create(
            "ValidateStatefulSetSpec: podManagementPolicy",
            workload("StatefulSet", "random", json!({"podManagementPolicy": "Random"})),
            "StatefulSet.apps \"random\" is invalid: spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'",
        ),
        Case::create(
            "ValidateStatefulSetSpec: selector required",
            object("apps/v1", "StatefulSet", "no-selector", json!({"spec": {"template": template(json!({"app": "web"}), "Always")}})),
            "StatefulSet.apps \"no-selector\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`]",
        ),
        Case::update(
            "ValidateStatefulSetUpdate: only some spec fields may change",
            workload("StatefulSet", "frozen", json!({"serviceName": "a"})),
            workload("StatefulSet", "frozen", json!({"serviceName": "b"})),
            "StatefulSet.apps \"frozen\" is invalid: spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ),
    ]
}

fn batch_cases() -> Vec<Case> {
    vec![
        Case::create(
            "validateJobSpec: restartPolicy OnFailure or Never (Always is the default)",
            object(
                "batch/v1",
                "Job",
                "always",
                json!({"spec": {"template": {"spec": {"containers": [app()]}}}}),
            ),
            "Job.batch \"always\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        Case::create(
            "validateJobSpec: parallelism non-negative",
            job("parallelism", json!({"parallelism": -1})),
            "Job.batch \"parallelism\" is invalid: spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        ),
        Case::create(
            "validateJobSpec: backoffLimit non-negative",
            job("backoff", json!({"backoffLimit": -1})),
            "Job.batch \"backoff\" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        Case::create(
            "validateJobSpec: completionMode NonIndexed or Indexed",
            job("mode", json!({"completionMode": "Random"})),
            "Job.batch \"mode\" is invalid: spec.completionMode: Unsupported value: \"Random\": supported values: \"NonIndexed\", \"Indexed\"",
        ),
        Case::update(
            "validateCompletions: completions immutable for NonIndexed jobs",
            job("count", json!({"completions": 2})),
            job("count", json!({"completions": 3})),
            "Job.batch \"count\" is invalid: spec.completions: Invalid value: 3: field is immutable",
        ),
        Case::create(
            "validateScheduleFormat: cron.ParseStandard field count",
            cron_job("bad-schedule", json!({"schedule": "bad"})),
            "CronJob.batch \"bad-schedule\" is invalid: spec.schedule: Invalid value: \"bad\": expected exactly 5 fields, found 1: [bad]",
        ),
        Case::create(
            "validateScheduleFormat: cron.ParseStandard ranges",
            cron_job("minute-61", json!({"schedule": "61 * * * *"})),
            "CronJob.batch \"minute-61\" is invalid: spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61",
        ),
        Case::create(
            "validateScheduleFormat: cron.ParseStandard numbers",
            cron_job("minute-x", json!({"schedule": "x * * * *"})),
            "CronJob.batch \"minute-x\" is invalid: spec.schedule: Invalid value: \"x * * * *\": failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
        ),
        Case::create(
            "validateScheduleFormat: no TZ in schedule",
            cron_job("cron-tz", json!({"schedule": "CRON_TZ=UTC * * * * *"})),
            "CronJob.batch \"cron-tz\" is invalid: spec.schedule: Invalid value: \"CRON_TZ=UTC * * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
        Case::create(
            "validateTimeZone: IANA name characters",
            cron_job("bad-zone", json!({"timeZone": "Bad Zone"})),
            "CronJob.batch \"bad-zone\" is invalid: spec.timeZone: Invalid value: \"Bad Zone\": unknown time zone Bad Zone",
        ),
        Case::create(
            "validateConcurrencyPolicy: supported values",
            cron_job("policy", json!({"concurrencyPolicy": "Sometimes"})),
            "CronJob.batch \"policy\" is invalid: spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ),
        Case::create(
            "ValidateJobTemplateSpec: the job template's restartPolicy",
            cron_job(
                "job-always",
                json!({"jobTemplate": {"spec": {"template": {"spec": {"containers": [app()]}}}}}),
            ),
            "CronJob.batch \"job-always\" is invalid: spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ),
        Case::create(
            "validateCronJobSpec: startingDeadlineSeconds non-negative",
            cron_job("deadline", json!({"startingDeadlineSeconds": -5})),
            "CronJob.batch \"deadline\" is invalid: spec.startingDeadlineSeconds: Invalid value: -5: must be greater than or equal to 0",
        ),
        Case::create(
            "validateCronJobSpec: successfulJobsHistoryLimit non-negative",
            cron_job("history", json!({"successfulJobsHistoryLimit": -1})),
            "CronJob.batch \"history\" is invalid: spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
        ),
        Case::create(
            "ValidateCronJobCreate: names of at most 52 characters",
            cron_job(&"c".repeat(53), json!({})),
            "CronJob.batch \"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\" is invalid: metadata.name: Invalid value: \"ccccccccccccccccccccccccccccccccccccccccccccccccccccc\": must be no more than 52 characters",
        ),
    ]
}

#[tokio::test]
async fn workload_bad_inputs_are_refused_as_upstream_refuses_them() {
    let mut cases = pod_cases();
    cases.extend(apps_cases());
    cases.extend(batch_cases());
    assert!(cases.len() >= 35, "{} cases", cases.len());
    check_all(cases).await;
}

#[tokio::test]
async fn valid_workloads_are_accepted() {
    let server = crate::common::server().await;
    let client = crate::common::client(&server).await;
    for obj in [
        pod(
            "ok-pod",
            json!({"ports": [{"name": "http", "containerPort": 80}],
            "env": [{"name": "A", "value": "1"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "64Mi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
            "livenessProbe": {"httpGet": {"port": "http", "path": "/healthz"}}}),
            json!({"volumes": [{"name": "data", "emptyDir": {}}]}),
        ),
        workload("Deployment", "ok-deploy", json!({})),
        workload("ReplicaSet", "ok-rs", json!({})),
        workload("DaemonSet", "ok-ds", json!({})),
        workload("StatefulSet", "ok-sts", json!({"serviceName": "web"})),
        job("ok-job", json!({})),
        cron_job("ok-cron", json!({"timeZone": "Europe/Paris"})),
        object(
            "v1",
            "PodTemplate",
            "ok-tpl",
            json!({"template": template(json!({"app": "web"}), "Always")}),
        ),
        object(
            "v1",
            "ReplicationController",
            "ok-rc",
            json!({"spec": {"template": template(json!({"app": "web"}), "Always")}}),
        ),
    ] {
        let uri = super::collection(&obj);
        let (code, _, body) = crate::common::raw(
            &client,
            "POST",
            &uri,
            "application/json",
            serde_json::to_vec(&obj).unwrap(),
        )
        .await;
        assert_eq!(code, 201, "{}: {body}", obj["metadata"]["name"]);
    }
}
