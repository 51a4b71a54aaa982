use super::*;
use crate::resource::ScaleInfo;

fn info(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> ResourceInfo {
    ResourceInfo {
        group: group.into(),
        version: version.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: vec![],
        categories: vec![],
        status_subresource: false,
        scale: None,
        generation: true,
        custom: false,
        deprecation_warning: None,
        selectable_fields: Vec::new(),
        storage_version_hash: Some(crate::resource::storage_version_hash(group, version, kind)),
    }
}

fn sample() -> Vec<ResourceInfo> {
    let mut pods = info("", "v1", "pods", "Pod", true);
    pods.status_subresource = true;
    pods.short_names = vec!["po".into()];
    pods.categories = vec!["all".into()];
    let mut deploy = info("apps", "v1", "deployments", "Deployment", true);
    deploy.status_subresource = true;
    deploy.scale = Some(ScaleInfo {
        spec_replicas_path: ".spec.replicas".into(),
        status_replicas_path: ".status.replicas".into(),
        label_selector_path: None,
    });
    vec![
        pods,
        info("", "v1", "namespaces", "Namespace", false),
        deploy,
        info("example.com", "v1alpha1", "widgets", "Widget", true),
        info("example.com", "v1", "widgets", "Widget", true),
        info("example.com", "v2beta1", "widgets", "Widget", true),
    ]
}

#[test]
fn versions_sort_by_kubernetes_priority() {
    let mut v = vec![
        "v1alpha1", "v2beta1", "v1", "foo", "v2", "v1beta2", "v1beta1",
    ];
    v.sort_by_key(|v| version_priority(v));
    assert_eq!(
        v,
        vec![
            "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo"
        ]
    );
}

#[test]
fn group_list_prefers_the_ga_version() {
    let doc = group_list(&sample());
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0]["name"], "apps");
    assert_eq!(
        groups[1]["preferredVersion"]["groupVersion"],
        "example.com/v1"
    );
    assert_eq!(groups[1]["versions"].as_array().unwrap().len(), 3);
    assert_eq!(group(&sample(), "apps").unwrap()["kind"], "APIGroup");
    assert!(group(&sample(), "nope").is_none());
}

#[test]
fn resource_list_has_subresources() {
    let doc = resource_list(&sample(), "apps", "v1").unwrap();
    let names: Vec<&str> = doc["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    // Sorted by name, as the real server lists them.
    assert_eq!(
        names,
        vec!["deployments", "deployments/scale", "deployments/status"]
    );
    let core = resource_list(&sample(), "", "v1").unwrap();
    assert_eq!(core["groupVersion"], "v1");
    assert_eq!(core["resources"][0]["shortNames"][0], "po");
    assert_eq!(core["resources"][0]["verbs"].as_array().unwrap().len(), 8);
    assert!(resource_list(&sample(), "apps", "v2").is_none());
}

#[test]
fn aggregated_discovery() {
    assert_eq!(
        wants_aggregated(Some(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
        )),
        Some("v2")
    );
    assert_eq!(wants_aggregated(Some("application/json")), None);
    let core = aggregated(&sample(), true, "v2");
    assert_eq!(core["items"][0]["metadata"]["name"], "");
    let res = &core["items"][0]["versions"][0]["resources"];
    assert_eq!(res.as_array().unwrap().len(), 2);
    assert_eq!(res[0]["scope"], "Namespaced");
    assert_eq!(res[1]["scope"], "Cluster");
    let apis = aggregated(&sample(), false, "v2");
    assert_eq!(
        apis["items"][0]["versions"][0]["resources"][0]["subresources"][0]["subresource"],
        "scale"
    );
    assert_eq!(apis["items"][1]["versions"][0]["version"], "v1");
}
