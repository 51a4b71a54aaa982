use super::*;

fn res(path: &str) -> ResourcePath {
    match parse_path(path) {
        Route::Resource(r) => r,
        other => panic!("{path}: {other:?}"),
    }
}

#[test]
fn discovery_paths() {
    assert_eq!(parse_path("/api"), Route::CoreApi);
    assert_eq!(
        parse_path("/api/v1"),
        Route::GroupVersion("".into(), "v1".into())
    );
    assert_eq!(parse_path("/apis/"), Route::Apis);
    assert_eq!(parse_path("/apis/apps"), Route::Group("apps".into()));
    assert_eq!(
        parse_path("/apis/apps/v1"),
        Route::GroupVersion("apps".into(), "v1".into())
    );
    assert_eq!(parse_path("/healthz/ping"), Route::Health);
    assert_eq!(parse_path("/version"), Route::Version);
    assert_eq!(
        parse_path("/openapi/v3/apis/apps/v1"),
        Route::OpenApiV3("apps".into(), "v1".into())
    );
    assert_eq!(parse_path("/nope"), Route::NotFound);
}

#[test]
fn namespaced_and_cluster_paths() {
    let r = res("/api/v1/namespaces/default/pods/p1/status");
    assert_eq!(
        (
            r.group.as_str(),
            r.plural.as_str(),
            r.namespace.as_deref(),
            r.name.as_deref(),
            r.subresource.as_deref()
        ),
        ("", "pods", Some("default"), Some("p1"), Some("status"))
    );
    let r = res("/apis/apps/v1/deployments");
    assert_eq!(
        (r.group.as_str(), r.plural.as_str(), r.namespace),
        ("apps", "deployments", None)
    );
    let r = res("/api/v1/namespaces");
    assert_eq!((r.plural.as_str(), r.name), ("namespaces", None));
    let r = res("/api/v1/namespaces/foo");
    assert_eq!(
        (r.plural.as_str(), r.name.as_deref()),
        ("namespaces", Some("foo"))
    );
    let r = res("/api/v1/namespaces/foo/finalize");
    assert_eq!(
        (
            r.plural.as_str(),
            r.name.as_deref(),
            r.subresource.as_deref()
        ),
        ("namespaces", Some("foo"), Some("finalize"))
    );
    let r = res("/api/v1/namespaces/foo/configmaps");
    assert_eq!(
        (r.plural.as_str(), r.namespace.as_deref(), r.name),
        ("configmaps", Some("foo"), None)
    );
    assert_eq!(
        parse_path("/api/v1/namespaces/a/pods/b/c/d"),
        Route::NotFound
    );
}

#[test]
fn legacy_watch_paths() {
    let r = res("/api/v1/watch/namespaces/ns/configmaps");
    assert!(r.legacy_watch);
    assert_eq!(
        (r.plural.as_str(), r.namespace.as_deref()),
        ("configmaps", Some("ns"))
    );
    let r = res("/apis/apps/v1/watch/deployments");
    assert!(r.legacy_watch && r.namespace.is_none());
}

#[test]
fn query_parameters() {
    let q = parse_query(Some(
        "labelSelector=app%3Dweb%2Ctier+in+(a)&limit=5&continue=abc&watch=true&timeoutSeconds=3&dryRun=All&pretty=true&allowWatchBookmarks=1",
    ))
    .unwrap();
    assert_eq!(q.label_selector.as_deref(), Some("app=web,tier in (a)"));
    assert_eq!(q.limit, Some(5));
    assert_eq!(q.continue_token.as_deref(), Some("abc"));
    assert!(q.watch && q.dry_run && q.allow_watch_bookmarks);
    assert_eq!(q.timeout_seconds, Some(3));
    assert_eq!(parse_query(Some("limit=x")).unwrap_err().code, 400);
    assert_eq!(parse_query(Some("dryRun=Some")).unwrap_err().code, 400);
}

#[test]
fn watch_on_a_name_narrows_the_field_selector() {
    let q = parse_query(Some("fieldSelector=status.phase%3DRunning")).unwrap();
    let w = q.watch_options(Some("p1"));
    assert_eq!(
        w.field_selector.as_deref(),
        Some("status.phase=Running,metadata.name=p1")
    );
}

#[test]
fn delete_options_from_body_override_query() {
    let q = parse_query(Some("propagationPolicy=Background")).unwrap();
    let o = q
        .delete_options(None, br#"{"kind":"DeleteOptions","propagationPolicy":"Foreground","preconditions":{"uid":"u1"},"dryRun":["All"]}"#)
        .unwrap();
    assert_eq!(o.propagation_policy.as_deref(), Some("Foreground"));
    assert_eq!(o.precondition_uid.as_deref(), Some("u1"));
    assert!(o.dry_run);
    assert_eq!(q.delete_options(None, b"{").unwrap_err().code, 400);
    assert_eq!(
        q.delete_options(None, br#"{"propagationPolicy":"Sideways"}"#)
            .unwrap_err()
            .code,
        422
    );
    assert_eq!(
        q.delete_options(None, b"")
            .unwrap()
            .propagation_policy
            .as_deref(),
        Some("Background")
    );
}

#[test]
fn patch_types_and_accept() {
    assert_eq!(
        patch_type(Some("application/merge-patch+json")).unwrap(),
        PatchType::Merge
    );
    assert_eq!(
        patch_type(Some("application/json-patch+json; charset=utf-8")).unwrap(),
        PatchType::Json
    );
    assert_eq!(
        patch_type(Some("application/strategic-merge-patch+json")).unwrap(),
        PatchType::Strategic
    );
    assert_eq!(patch_type(Some("text/plain")).unwrap_err().code, 415);
    assert_eq!(patch_type(None).unwrap_err().code, 415);
    assert_eq!(
        accept(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        )),
        Accept::Table
    );
    assert_eq!(
        accept(Some(
            "application/vnd.kubernetes.protobuf, application/json"
        )),
        Accept::Json
    );
    assert_eq!(
        accept(Some(
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        )),
        Accept::Metadata
    );
}

#[test]
fn malformed_objects_are_400_with_the_real_wording() {
    let e = parse_object(b"{not json").unwrap_err();
    assert_eq!(e.code, 400);
    assert!(
        e.message
            .starts_with("couldn't get version/kind; json parse error:"),
        "{}",
        e.message
    );
    assert_eq!(parse_object(b"[1]").unwrap_err().code, 400);
    assert!(parse_object(br#"{"kind":"ConfigMap"}"#).is_ok());
}

#[test]
fn escaped_path_segments_are_decoded() {
    let p = res("/api/v1/namespaces/default/configmaps/a%2Db");
    assert_eq!(p.name.as_deref(), Some("a-b"));
    assert_eq!(p.namespace.as_deref(), Some("default"));
    let p = res("/apis/example%2Ecom/v1/widgets");
    assert_eq!(
        (p.group.as_str(), p.plural.as_str()),
        ("example.com", "widgets")
    );
    assert_eq!(
        parse_path("/api/v1/namespaces/default/configmaps/a%2Fb"),
        Route::Resource(ResourcePath {
            version: "v1".into(),
            plural: "configmaps".into(),
            namespace: Some("default".into()),
            name: Some("a/b".into()),
            ..Default::default()
        })
    );
}
