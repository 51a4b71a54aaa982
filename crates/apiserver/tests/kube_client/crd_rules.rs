//! CRD validation rules checked when the CRD is written, over HTTP: a rule that does not
//! type-check against its schema, or whose estimated cost is over budget, refuses the CRD with
//! the 422 a kube-apiserver 1.33 answers; fixed, the CRD installs.

use serde_json::{Value, json};

use crate::common::{client, raw, server};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// A Gateway-like CRD whose `spec.hostnames` carries `rule`.
fn crd(hostnames: Value, rule: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.example.net"},
        "spec": {
            "group": "example.net", "scope": "Namespaced",
            "names": {"plural": "routes", "kind": "Route"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"hostnames": hostnames, "weight": {"type": "integer"}},
                    "x-kubernetes-validations": [{"rule": rule, "message": "bad hostnames"}],
                }}}}}],
        },
    })
}

fn bounded() -> Value {
    json!({"type": "array", "maxItems": 16, "items": {"type": "string", "maxLength": 253}})
}

const AT: &str =
    "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";

#[tokio::test]
async fn crd_rules_are_type_checked_and_cost_estimated_on_write() {
    let server = server().await;
    let client = client(&server).await;
    let post = |body: Value| {
        let client = client.clone();
        async move { raw(&client, "POST", CRDS, "application/json", body.to_string()).await }
    };

    // A type error: an int added to a string.
    let rule = "self.hostnames.all(h, h + self.weight != '')";
    let (code, _, status) = post(crd(bounded(), rule)).await;
    assert_eq!(
        (code, &status["reason"]),
        (422, &json!("Invalid")),
        "{status}"
    );
    let detail = format!(
        "Invalid value: apiextensions.ValidationRule{{Rule:{rule:?}, Message:\"bad hostnames\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:25: found no matching overload for '_+_' applied to '(string, int)'\n | {rule}\n | ........................^"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": AT, "message": detail}])
    );
    assert_eq!(
        status["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"routes.example.net\" is invalid: {AT}: {detail}"
        )
    );

    // Over budget: a regex over every item of an unbounded list of unbounded strings.
    let rule = "self.hostnames.all(h, h.matches('^[a-z.]+$'))";
    let unbounded = json!({"type": "array", "items": {"type": "string"}});
    let (code, _, status) = post(crd(unbounded, rule)).await;
    assert_eq!(
        (code, &status["reason"]),
        (422, &json!("Invalid")),
        "{status}"
    );
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "FieldValueForbidden", "field": AT,
               "message": format!("Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}")})
    );
    assert_eq!(
        status["details"]["causes"][2],
        json!({"reason": "FieldValueForbidden",
               "field": "spec.validation.openAPIV3Schema",
               "message": format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}")})
    );

    // Bounded as Gateway API bounds hostnames, the same rule installs and runs.
    let (code, _, body) = post(crd(bounded(), rule)).await;
    assert_eq!(code, 201, "{body}");
    let routes = "/apis/example.net/v1/namespaces/default/routes";
    let route = |host: &str| {
        json!({"apiVersion": "example.net/v1", "kind": "Route",
               "metadata": {"name": "r"}, "spec": {"hostnames": [host]}})
        .to_string()
    };
    let (code, _, body) = raw(
        &client,
        "POST",
        routes,
        "application/json",
        route("Bad_Host"),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["details"]["causes"][0]["message"],
        "Invalid value: \"object\": bad hostnames"
    );
    let (code, _, body) = raw(
        &client,
        "POST",
        routes,
        "application/json",
        route("a.example.net"),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}

/// A CRD with `rule` on the items of `list` (a `spec.list` array schema without `items`).
fn crd_with_item_rule(list: Value, items: Value) -> Value {
    let mut list = list;
    list["items"] = items;
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.example.net"},
        "spec": {
            "group": "example.net", "scope": "Namespaced",
            "names": {"plural": "routes", "kind": "Route"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "properties": {"list": list},
                }}}}}],
        },
    })
}

#[tokio::test]
async fn transition_rules_are_refused_where_old_values_cannot_be_correlated() {
    let server = server().await;
    let client = client(&server).await;
    let post = |body: Value| {
        let client = client.clone();
        async move { raw(&client, "POST", CRDS, "application/json", body.to_string()).await }
    };
    let root = "spec.validation.openAPIV3Schema";
    let item = json!({"type": "object", "maxProperties": 4,
        "properties": {"name": {"type": "string", "maxLength": 16},
                       "port": {"type": "integer",
                                "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
        "required": ["name"]});

    // An atomic list (the default) and a set: refused, the message naming the list.
    for list in [
        json!({"type": "array", "maxItems": 8}),
        json!({"type": "array", "maxItems": 8, "x-kubernetes-list-type": "atomic"}),
    ] {
        let (code, _, status) = post(crd_with_item_rule(list, item.clone())).await;
        assert_eq!(
            (code, &status["reason"]),
            (422, &json!("Invalid")),
            "{status}"
        );
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "FieldValueInvalid",
                "field": format!("{root}.properties[spec].properties[list].items.properties[port].x-kubernetes-validations[0].rule"),
                "message": format!("Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {root}.properties[spec].properties[list]")}])
        );
    }
    let set_item = json!({"type": "string", "maxLength": 8,
        "x-kubernetes-validations": [{"rule": "self == oldSelf"}]});
    let set = json!({"type": "array", "maxItems": 8, "x-kubernetes-list-type": "set"});
    let (code, _, status) = post(crd_with_item_rule(set, set_item)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["field"],
        json!(format!(
            "{root}.properties[spec].properties[list].items.x-kubernetes-validations[0].rule"
        ))
    );

    // The properties of an atomic map: refused too, naming the map.
    let atomic_map = json!({"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"]});
    let mut atomic_item = item.clone();
    atomic_item["x-kubernetes-map-type"] = json!("atomic");
    let (code, _, status) = post(crd_with_item_rule(atomic_map.clone(), atomic_item)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        json!(format!(
            "Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {root}.properties[spec].properties[list].items"
        ))
    );

    // A map list correlates its items by key: the same rule installs.
    let (code, _, body) = post(crd_with_item_rule(atomic_map, item)).await;
    assert_eq!(code, 201, "{body}");
}

/// Upstream's conformance test of the runtime cost limit: a CRD whose rule passes the static
/// estimate installs, and an object on which that rule would cost more than the per-call
/// limit is refused with upstream's message; a small one is accepted.
#[tokio::test]
async fn rules_over_the_runtime_cost_limit_refuse_the_object() {
    let server = server().await;
    let client = client(&server).await;
    let rule = "self.largeArray.all(x, self.largeArray.all(y, y == x))";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "arrays.example.net"},
        "spec": {
            "group": "example.net", "scope": "Namespaced",
            "names": {"plural": "arrays", "kind": "Array"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                    "type": "object",
                    "x-kubernetes-validations": [{"rule": "self.x + self.y > 0"}, {"rule": rule}],
                    "properties": {
                        "x": {"type": "integer"}, "y": {"type": "integer"},
                        "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}},
                    },
                }}}}}],
        },
    });
    let (code, _, body) = raw(&client, "POST", CRDS, "application/json", crd.to_string()).await;
    assert_eq!(code, 201, "{body}");
    let arrays = "/apis/example.net/v1/namespaces/default/arrays";
    let array = |name: &str, n: usize| {
        json!({"apiVersion": "example.net/v1", "kind": "Array", "metadata": {"name": name},
               "spec": {"x": 1, "y": 1, "largeArray": vec![20; n]}})
        .to_string()
    };
    let (code, _, body) = raw(
        &client,
        "POST",
        arrays,
        "application/json",
        array("large", 725),
    )
    .await;
    assert_eq!((code, &body["reason"]), (422, &json!("Invalid")), "{body}");
    assert_eq!(
        body["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "spec", "message": format!(
            "Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {rule}"
        )}])
    );
    let (code, _, body) = raw(
        &client,
        "POST",
        arrays,
        "application/json",
        array("small", 100),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}
