//! The field tables: one per message, numbered as in the kinds' upstream `generated.proto`
//! (`k8s.io/api/core/v1`, `apps/v1`, `batch/v1`, and apimachinery's `meta/v1`). A table lists
//! the fields kubectl's typed commands send; any other field number is a 415.

#[derive(Clone, Copy)]
pub(super) enum Kind {
    Str,
    Bytes,
    Int,
    /// An `omitempty` integer: absent when zero.
    Int0,
    Bool,
    /// An `omitempty` bool: absent when false.
    Flag,
    Time,
    MapStr,
    MapBytes,
    Msg(&'static [Field]),
    /// Read and dropped (a status the server resets anyway).
    Skip,
    /// An `intstr.IntOrString`: a number or a string in JSON; absent when zero or empty.
    IntOrStr,
    /// A `map<string, resource.Quantity>` (a `ResourceList`): each quantity its string.
    MapQuantity,
    /// An embedded Go struct (`json:",inline"`): its fields land in the parent's object.
    Inline(&'static [Field]),
}

/// A message field: number, JSON name, how its value decodes, and whether it repeats.
#[derive(Clone, Copy)]
pub(super) struct Field(pub u32, pub &'static str, pub Kind, pub bool);

const OWNER_REFERENCE: &[Field] = &[
    Field(1, "kind", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
    Field(4, "uid", Kind::Str, false),
    Field(5, "apiVersion", Kind::Str, false),
    Field(6, "controller", Kind::Bool, false),
    Field(7, "blockOwnerDeletion", Kind::Bool, false),
];

const OBJECT_META: &[Field] = &[
    Field(1, "name", Kind::Str, false),
    Field(2, "generateName", Kind::Str, false),
    Field(3, "namespace", Kind::Str, false),
    Field(4, "selfLink", Kind::Str, false),
    Field(5, "uid", Kind::Str, false),
    Field(6, "resourceVersion", Kind::Str, false),
    Field(7, "generation", Kind::Int0, false),
    Field(8, "creationTimestamp", Kind::Time, false),
    Field(9, "deletionTimestamp", Kind::Time, false),
    Field(10, "deletionGracePeriodSeconds", Kind::Int, false),
    Field(11, "labels", Kind::MapStr, false),
    Field(12, "annotations", Kind::MapStr, false),
    Field(13, "ownerReferences", Kind::Msg(OWNER_REFERENCE), true),
    Field(15, "finalizers", Kind::Str, true),
];

const OBJECT_REFERENCE: &[Field] = &[
    Field(1, "kind", Kind::Str, false),
    Field(2, "namespace", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
    Field(4, "uid", Kind::Str, false),
    Field(5, "apiVersion", Kind::Str, false),
    Field(6, "resourceVersion", Kind::Str, false),
    Field(7, "fieldPath", Kind::Str, false),
];

const NAMESPACE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[Field(1, "finalizers", Kind::Str, true)]),
        false,
    ),
    Field(
        3,
        "status",
        Kind::Msg(&[Field(1, "phase", Kind::Str, false)]),
        false,
    ),
];

const CONFIG_MAP: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "data", Kind::MapStr, false),
    Field(3, "binaryData", Kind::MapBytes, false),
    Field(4, "immutable", Kind::Bool, false),
];

const SECRET: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "data", Kind::MapBytes, false),
    Field(3, "type", Kind::Str, false),
    Field(4, "stringData", Kind::MapStr, false),
    Field(5, "immutable", Kind::Bool, false),
];

const SERVICE_ACCOUNT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "secrets", Kind::Msg(OBJECT_REFERENCE), true),
    Field(
        3,
        "imagePullSecrets",
        Kind::Msg(&[Field(1, "name", Kind::Str, false)]),
        true,
    ),
    Field(4, "automountServiceAccountToken", Kind::Bool, false),
];

const LABEL_SELECTOR: &[Field] = &[
    Field(1, "matchLabels", Kind::MapStr, false),
    Field(
        2,
        "matchExpressions",
        Kind::Msg(&[
            Field(1, "key", Kind::Str, false),
            Field(2, "operator", Kind::Str, false),
            Field(3, "values", Kind::Str, true),
        ]),
        true,
    ),
];

const CONTAINER: &[Field] = &[
    Field(1, "name", Kind::Str, false),
    Field(2, "image", Kind::Str, false),
    Field(3, "command", Kind::Str, true),
    Field(4, "args", Kind::Str, true),
    Field(5, "workingDir", Kind::Str, false),
    Field(
        6,
        "ports",
        Kind::Msg(&[
            Field(1, "name", Kind::Str, false),
            Field(2, "hostPort", Kind::Int0, false),
            Field(3, "containerPort", Kind::Int, false),
            Field(4, "protocol", Kind::Str, false),
            Field(5, "hostIP", Kind::Str, false),
        ]),
        true,
    ),
    Field(
        7,
        "env",
        Kind::Msg(&[
            Field(1, "name", Kind::Str, false),
            Field(2, "value", Kind::Str, false),
        ]),
        true,
    ),
    Field(8, "resources", Kind::Msg(&[]), false),
    Field(13, "terminationMessagePath", Kind::Str, false),
    Field(14, "imagePullPolicy", Kind::Str, false),
    Field(16, "stdin", Kind::Flag, false),
    Field(17, "stdinOnce", Kind::Flag, false),
    Field(18, "tty", Kind::Flag, false),
    Field(20, "terminationMessagePolicy", Kind::Str, false),
];

const POD_SPEC: &[Field] = &[
    Field(2, "containers", Kind::Msg(CONTAINER), true),
    Field(3, "restartPolicy", Kind::Str, false),
    Field(4, "terminationGracePeriodSeconds", Kind::Int, false),
    Field(6, "dnsPolicy", Kind::Str, false),
    Field(7, "nodeSelector", Kind::MapStr, false),
    Field(8, "serviceAccountName", Kind::Str, false),
    Field(9, "serviceAccount", Kind::Str, false),
    Field(10, "nodeName", Kind::Str, false),
    Field(11, "hostNetwork", Kind::Flag, false),
    Field(12, "hostPID", Kind::Flag, false),
    Field(13, "hostIPC", Kind::Flag, false),
    // Only empty (as the server defaults it): any setting in it is a 415.
    Field(14, "securityContext", Kind::Msg(&[]), false),
    Field(16, "hostname", Kind::Str, false),
    Field(17, "subdomain", Kind::Str, false),
    Field(19, "schedulerName", Kind::Str, false),
    Field(20, "initContainers", Kind::Msg(CONTAINER), true),
    Field(24, "priorityClassName", Kind::Str, false),
];

const POD_TEMPLATE_SPEC: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(POD_SPEC), false),
];

const DEPLOYMENT_SPEC: &[Field] = &[
    Field(1, "replicas", Kind::Int, false),
    Field(2, "selector", Kind::Msg(LABEL_SELECTOR), false),
    Field(3, "template", Kind::Msg(POD_TEMPLATE_SPEC), false),
    Field(
        4,
        "strategy",
        Kind::Msg(&[Field(1, "type", Kind::Str, false)]),
        false,
    ),
    Field(5, "minReadySeconds", Kind::Int0, false),
    Field(6, "revisionHistoryLimit", Kind::Int, false),
    Field(7, "paused", Kind::Flag, false),
    Field(9, "progressDeadlineSeconds", Kind::Int, false),
];

/// A Deployment as `kubectl create deployment` sends it; its status is ignored on create.
const DEPLOYMENT: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(DEPLOYMENT_SPEC), false),
    Field(3, "status", Kind::Skip, false),
];

const SERVICE_PORT: &[Field] = &[
    Field(1, "name", Kind::Str, false),
    Field(2, "protocol", Kind::Str, false),
    Field(3, "port", Kind::Int, false),
    Field(4, "targetPort", Kind::IntOrStr, false),
    Field(5, "nodePort", Kind::Int0, false),
    Field(6, "appProtocol", Kind::Str, false),
];

const SERVICE_SPEC: &[Field] = &[
    Field(1, "ports", Kind::Msg(SERVICE_PORT), true),
    Field(2, "selector", Kind::MapStr, false),
    Field(3, "clusterIP", Kind::Str, false),
    Field(4, "type", Kind::Str, false),
    Field(5, "externalIPs", Kind::Str, true),
    Field(7, "sessionAffinity", Kind::Str, false),
    Field(8, "loadBalancerIP", Kind::Str, false),
    Field(9, "loadBalancerSourceRanges", Kind::Str, true),
    Field(10, "externalName", Kind::Str, false),
    Field(11, "externalTrafficPolicy", Kind::Str, false),
    Field(12, "healthCheckNodePort", Kind::Int0, false),
    Field(13, "publishNotReadyAddresses", Kind::Flag, false),
    Field(17, "ipFamilyPolicy", Kind::Str, false),
    Field(18, "clusterIPs", Kind::Str, true),
    Field(19, "ipFamilies", Kind::Str, true),
    Field(20, "allocateLoadBalancerNodePorts", Kind::Bool, false),
    Field(21, "loadBalancerClass", Kind::Str, false),
    Field(22, "internalTrafficPolicy", Kind::Str, false),
    Field(23, "trafficDistribution", Kind::Str, false),
];

/// A Service as `kubectl create service` sends it; its status is ignored on create.
const SERVICE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(SERVICE_SPEC), false),
    Field(3, "status", Kind::Skip, false),
];

const POD_FAILURE_POLICY_RULE: &[Field] = &[
    Field(1, "action", Kind::Str, false),
    Field(
        2,
        "onExitCodes",
        Kind::Msg(&[
            Field(1, "containerName", Kind::Str, false),
            Field(2, "operator", Kind::Str, false),
            Field(3, "values", Kind::Int, true),
        ]),
        false,
    ),
    Field(
        3,
        "onPodConditions",
        Kind::Msg(&[
            Field(1, "type", Kind::Str, false),
            Field(2, "status", Kind::Str, false),
        ]),
        true,
    ),
];

const JOB_SPEC: &[Field] = &[
    Field(1, "parallelism", Kind::Int, false),
    Field(2, "completions", Kind::Int, false),
    Field(3, "activeDeadlineSeconds", Kind::Int, false),
    Field(4, "selector", Kind::Msg(LABEL_SELECTOR), false),
    Field(5, "manualSelector", Kind::Bool, false),
    Field(6, "template", Kind::Msg(POD_TEMPLATE_SPEC), false),
    Field(7, "backoffLimit", Kind::Int, false),
    Field(8, "ttlSecondsAfterFinished", Kind::Int, false),
    Field(9, "completionMode", Kind::Str, false),
    Field(10, "suspend", Kind::Bool, false),
    Field(
        11,
        "podFailurePolicy",
        Kind::Msg(&[Field(1, "rules", Kind::Msg(POD_FAILURE_POLICY_RULE), true)]),
        false,
    ),
    Field(12, "backoffLimitPerIndex", Kind::Int, false),
    Field(13, "maxFailedIndexes", Kind::Int, false),
    Field(14, "podReplacementPolicy", Kind::Str, false),
    Field(15, "managedBy", Kind::Str, false),
    Field(
        16,
        "successPolicy",
        Kind::Msg(&[Field(
            1,
            "rules",
            Kind::Msg(&[
                Field(1, "succeededIndexes", Kind::Str, false),
                Field(2, "succeededCount", Kind::Int, false),
            ]),
            true,
        )]),
        false,
    ),
];

/// A Job as `kubectl create job` sends it (also `--from=cronjob/NAME`, which copies the
/// CronJob's job template); its status is ignored on create.
const JOB: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(JOB_SPEC), false),
    Field(3, "status", Kind::Skip, false),
];

const CRON_JOB_SPEC: &[Field] = &[
    Field(1, "schedule", Kind::Str, false),
    Field(2, "startingDeadlineSeconds", Kind::Int, false),
    Field(3, "concurrencyPolicy", Kind::Str, false),
    Field(4, "suspend", Kind::Bool, false),
    Field(
        5,
        "jobTemplate",
        Kind::Msg(&[
            Field(1, "metadata", Kind::Msg(OBJECT_META), false),
            Field(2, "spec", Kind::Msg(JOB_SPEC), false),
        ]),
        false,
    ),
    Field(6, "successfulJobsHistoryLimit", Kind::Int, false),
    Field(7, "failedJobsHistoryLimit", Kind::Int, false),
    Field(8, "timeZone", Kind::Str, false),
];

/// A CronJob as `kubectl create cronjob` sends it; its status is ignored on create.
const CRON_JOB: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "spec", Kind::Msg(CRON_JOB_SPEC), false),
    Field(3, "status", Kind::Skip, false),
];

const POLICY_RULE: &[Field] = &[
    Field(1, "verbs", Kind::Str, true),
    Field(2, "apiGroups", Kind::Str, true),
    Field(3, "resources", Kind::Str, true),
    Field(4, "resourceNames", Kind::Str, true),
    Field(5, "nonResourceURLs", Kind::Str, true),
];

/// A Role as `kubectl create role` sends it (`rbac.authorization.k8s.io/v1`).
const ROLE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "rules", Kind::Msg(POLICY_RULE), true),
];

/// A ClusterRole as `kubectl create clusterrole` sends it.
const CLUSTER_ROLE: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "rules", Kind::Msg(POLICY_RULE), true),
    Field(
        3,
        "aggregationRule",
        Kind::Msg(&[Field(
            1,
            "clusterRoleSelectors",
            Kind::Msg(LABEL_SELECTOR),
            true,
        )]),
        false,
    ),
];

const SUBJECT: &[Field] = &[
    Field(1, "kind", Kind::Str, false),
    Field(2, "apiGroup", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
    Field(4, "namespace", Kind::Str, false),
];

const ROLE_REF: &[Field] = &[
    Field(1, "apiGroup", Kind::Str, false),
    Field(2, "kind", Kind::Str, false),
    Field(3, "name", Kind::Str, false),
];

/// A RoleBinding or ClusterRoleBinding as `kubectl create rolebinding|clusterrolebinding`
/// sends it.
const ROLE_BINDING: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "subjects", Kind::Msg(SUBJECT), true),
    Field(3, "roleRef", Kind::Msg(ROLE_REF), false),
];

/// A PodDisruptionBudget as `kubectl create poddisruptionbudget` sends it (`policy/v1`).
const POD_DISRUPTION_BUDGET: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "minAvailable", Kind::IntOrStr, false),
            Field(2, "selector", Kind::Msg(LABEL_SELECTOR), false),
            Field(3, "maxUnavailable", Kind::IntOrStr, false),
            Field(4, "unhealthyPodEvictionPolicy", Kind::Str, false),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// A PriorityClass as `kubectl create priorityclass` sends it (`scheduling.k8s.io/v1`).
const PRIORITY_CLASS: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(2, "value", Kind::Int, false),
    Field(3, "globalDefault", Kind::Flag, false),
    Field(4, "description", Kind::Str, false),
    Field(5, "preemptionPolicy", Kind::Str, false),
];

const RESOURCE_ATTRIBUTES: &[Field] = &[
    Field(1, "namespace", Kind::Str, false),
    Field(2, "verb", Kind::Str, false),
    Field(3, "group", Kind::Str, false),
    Field(4, "version", Kind::Str, false),
    Field(5, "resource", Kind::Str, false),
    Field(6, "subresource", Kind::Str, false),
    Field(7, "name", Kind::Str, false),
    Field(8, "fieldSelector", Kind::Skip, false),
    Field(9, "labelSelector", Kind::Skip, false),
];

const NON_RESOURCE_ATTRIBUTES: &[Field] = &[
    Field(1, "path", Kind::Str, false),
    Field(2, "verb", Kind::Str, false),
];

/// A SelfSubjectAccessReview as `kubectl auth can-i` sends it (`authorization.k8s.io/v1`).
const SELF_SUBJECT_ACCESS_REVIEW: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(
                1,
                "resourceAttributes",
                Kind::Msg(RESOURCE_ATTRIBUTES),
                false,
            ),
            Field(
                2,
                "nonResourceAttributes",
                Kind::Msg(NON_RESOURCE_ATTRIBUTES),
                false,
            ),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// A SubjectAccessReview or LocalSubjectAccessReview (`extra` is not decoded: a 415).
const SUBJECT_ACCESS_REVIEW: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(
                1,
                "resourceAttributes",
                Kind::Msg(RESOURCE_ATTRIBUTES),
                false,
            ),
            Field(
                2,
                "nonResourceAttributes",
                Kind::Msg(NON_RESOURCE_ATTRIBUTES),
                false,
            ),
            Field(3, "user", Kind::Str, false),
            Field(4, "groups", Kind::Str, true),
            Field(6, "uid", Kind::Str, false),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// A SelfSubjectRulesReview as `kubectl auth can-i --list` sends it.
const SELF_SUBJECT_RULES_REVIEW: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[Field(1, "namespace", Kind::Str, false)]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// `authentication.k8s.io/v1` TokenRequest (`kubectl create token`).
const TOKEN_REQUEST: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "audiences", Kind::Str, true),
            Field(
                3,
                "boundObjectRef",
                Kind::Msg(&[
                    Field(1, "kind", Kind::Str, false),
                    Field(2, "apiVersion", Kind::Str, false),
                    Field(3, "name", Kind::Str, false),
                    Field(4, "uid", Kind::Str, false),
                ]),
                false,
            ),
            Field(4, "expirationSeconds", Kind::Int, false),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// `authentication.k8s.io/v1` TokenReview.
const TOKEN_REVIEW: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "token", Kind::Str, false),
            Field(2, "audiences", Kind::Str, true),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// `v1` ResourceQuota (`kubectl create quota`).
const RESOURCE_QUOTA: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "hard", Kind::MapQuantity, false),
            Field(2, "scopes", Kind::Str, true),
            Field(
                3,
                "scopeSelector",
                Kind::Msg(&[Field(
                    1,
                    "matchExpressions",
                    Kind::Msg(&[
                        Field(1, "scopeName", Kind::Str, false),
                        Field(2, "operator", Kind::Str, false),
                        Field(3, "values", Kind::Str, true),
                    ]),
                    true,
                )]),
                false,
            ),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// `networking.k8s.io/v1` IngressBackend: a Service (by port number or name) or a resource.
const INGRESS_BACKEND: &[Field] = &[
    Field(
        3,
        "resource",
        Kind::Msg(&[
            Field(1, "apiGroup", Kind::Str, false),
            Field(2, "kind", Kind::Str, false),
            Field(3, "name", Kind::Str, false),
        ]),
        false,
    ),
    Field(
        4,
        "service",
        Kind::Msg(&[
            Field(1, "name", Kind::Str, false),
            Field(
                2,
                "port",
                Kind::Msg(&[
                    Field(1, "name", Kind::Str, false),
                    Field(2, "number", Kind::Int0, false),
                ]),
                false,
            ),
        ]),
        false,
    ),
];

/// `networking.k8s.io/v1` Ingress (`kubectl create ingress`).
const INGRESS: &[Field] = &[
    Field(1, "metadata", Kind::Msg(OBJECT_META), false),
    Field(
        2,
        "spec",
        Kind::Msg(&[
            Field(1, "defaultBackend", Kind::Msg(INGRESS_BACKEND), false),
            Field(
                2,
                "tls",
                Kind::Msg(&[
                    Field(1, "hosts", Kind::Str, true),
                    Field(2, "secretName", Kind::Str, false),
                ]),
                true,
            ),
            Field(
                3,
                "rules",
                Kind::Msg(&[
                    Field(1, "host", Kind::Str, false),
                    // `IngressRuleValue`, inlined: its `http` is the rule's.
                    Field(
                        2,
                        "ingressRuleValue",
                        Kind::Inline(&[Field(
                            1,
                            "http",
                            Kind::Msg(&[Field(
                                1,
                                "paths",
                                Kind::Msg(&[
                                    Field(1, "path", Kind::Str, false),
                                    Field(2, "backend", Kind::Msg(INGRESS_BACKEND), false),
                                    Field(3, "pathType", Kind::Str, false),
                                ]),
                                true,
                            )]),
                            false,
                        )]),
                        false,
                    ),
                ]),
                true,
            ),
            Field(4, "ingressClassName", Kind::Str, false),
        ]),
        false,
    ),
    Field(3, "status", Kind::Skip, false),
];

/// The table of a kind's top-level message, if the kind is decoded at all.
pub(super) fn schema(api_version: &str, kind: &str) -> Option<&'static [Field]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Secret") => SECRET,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("v1", "Service") => SERVICE,
        ("v1", "ResourceQuota") => RESOURCE_QUOTA,
        ("networking.k8s.io/v1", "Ingress") => INGRESS,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        ("batch/v1", "Job") => JOB,
        ("batch/v1", "CronJob") => CRON_JOB,
        ("rbac.authorization.k8s.io/v1", "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => ROLE_BINDING,
        ("policy/v1", "PodDisruptionBudget") => POD_DISRUPTION_BUDGET,
        ("scheduling.k8s.io/v1", "PriorityClass") => PRIORITY_CLASS,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => {
            SUBJECT_ACCESS_REVIEW
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "TokenReview") => TOKEN_REVIEW,
        _ => return None,
    })
}

pub(super) const UNKNOWN: &[Field] = &[
    Field(
        1,
        "typeMeta",
        Kind::Msg(&[
            Field(1, "apiVersion", Kind::Str, false),
            Field(2, "kind", Kind::Str, false),
        ]),
        false,
    ),
    Field(2, "raw", Kind::Bytes, false),
    Field(3, "contentEncoding", Kind::Str, false),
    Field(4, "contentType", Kind::Str, false),
];
