//! `/openapi/v2` in protobuf, as client-go's discovery (and so kubectl) asks for it, decoded with
//! message definitions written here from gnostic's `openapiv2/OpenAPIv2.proto` independently of
//! the server's: the same definitions and paths as the JSON document, with their vendor
//! extensions readable as YAML.

use http_body_util::BodyExt;
use prost::Message;
use serde_json::Value;

use crate::common::{client, server};

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

#[derive(Clone, PartialEq, Message)]
struct Document {
    #[prost(string, tag = "1")]
    swagger: String,
    #[prost(message, optional, tag = "8")]
    paths: Option<Paths>,
    #[prost(message, optional, tag = "9")]
    definitions: Option<Definitions>,
}

#[derive(Clone, PartialEq, Message)]
struct Paths {
    #[prost(message, repeated, tag = "2")]
    path: Vec<NamedPathItem>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedPathItem {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<PathItem>,
}

#[derive(Clone, PartialEq, Message)]
struct PathItem {
    #[prost(message, optional, tag = "8")]
    patch: Option<Operation>,
}

#[derive(Clone, PartialEq, Message)]
struct Operation {
    #[prost(message, repeated, tag = "8")]
    parameters: Vec<ParametersItem>,
    #[prost(message, repeated, tag = "13")]
    vendor_extension: Vec<NamedAny>,
}

/// `ParametersItem.parameter` (1) > `Parameter.non_body_parameter` (2) >
/// `NonBodyParameter.query_parameter_sub_schema` (3) > `name` (4).
#[derive(Clone, PartialEq, Message)]
struct ParametersItem {
    #[prost(message, optional, tag = "1")]
    parameter: Option<Parameter>,
}

#[derive(Clone, PartialEq, Message)]
struct Parameter {
    #[prost(message, optional, tag = "2")]
    non_body_parameter: Option<NonBodyParameter>,
}

#[derive(Clone, PartialEq, Message)]
struct NonBodyParameter {
    #[prost(message, optional, tag = "3")]
    query_parameter_sub_schema: Option<NamedOnly>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedOnly {
    #[prost(string, tag = "4")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct Definitions {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedSchema {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Schema>,
}

#[derive(Clone, PartialEq, Message)]
struct Schema {
    #[prost(string, tag = "4")]
    description: String,
    #[prost(message, optional, tag = "25")]
    properties: Option<Properties>,
    #[prost(message, repeated, tag = "31")]
    vendor_extension: Vec<NamedAny>,
}

#[derive(Clone, PartialEq, Message)]
struct Properties {
    #[prost(message, repeated, tag = "1")]
    additional_properties: Vec<NamedSchema>,
}

#[derive(Clone, PartialEq, Message)]
struct NamedAny {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(message, optional, tag = "2")]
    value: Option<Any>,
}

#[derive(Clone, PartialEq, Message)]
struct Any {
    #[prost(string, tag = "2")]
    yaml: String,
}

async fn get(client: &kube_client::Client, accept: &str) -> (u16, String, bytes::Bytes) {
    let req = http::Request::builder()
        .uri("/openapi/v2")
        .header("accept", accept)
        .body(kube_client::client::Body::empty())
        .unwrap();
    let resp = client.send(req).await.expect("request sent");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        status,
        ct,
        resp.into_body().collect().await.unwrap().to_bytes(),
    )
}

fn extension(exts: &[NamedAny], name: &str) -> Value {
    let yaml = &exts
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .value
        .as_ref()
        .unwrap()
        .yaml;
    serde_yaml_ng::from_str(yaml).unwrap_or_else(|e| panic!("{name}: {yaml}: {e}"))
}

#[tokio::test]
async fn openapi_v2_answers_in_protobuf_with_the_json_documents_content() {
    let server = server().await;
    let client = client(&server).await;
    let (status, ct, body) = get(&client, "application/json").await;
    assert_eq!((status, ct.as_str()), (200, "application/json"));
    let json: Value = serde_json::from_slice(&body).unwrap();

    let (status, ct, body) = get(&client, PROTOBUF).await;
    assert_eq!(status, 200);
    assert_eq!(
        ct,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let doc = Document::decode(body).expect("a gnostic openapi.v2.Document");
    assert_eq!(doc.swagger, "2.0");

    let defs = doc.definitions.unwrap().additional_properties;
    let json_defs = json["definitions"].as_object().unwrap();
    assert!(json_defs.len() > 100, "{}", json_defs.len());
    assert_eq!(defs.len(), json_defs.len());
    let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
    let json_names: Vec<&str> = json_defs.keys().map(String::as_str).collect();
    assert_eq!(names, json_names);

    let deployment = defs
        .iter()
        .find(|d| d.name == "io.k8s.api.apps.v1.Deployment")
        .and_then(|d| d.value.as_ref())
        .unwrap();
    assert_eq!(
        deployment.description,
        json_defs["io.k8s.api.apps.v1.Deployment"]["description"]
    );
    assert_eq!(
        extension(
            &deployment.vendor_extension,
            "x-kubernetes-group-version-kind"
        ),
        serde_json::json!([{ "group": "apps", "kind": "Deployment", "version": "v1" }])
    );
    let props: Vec<&str> = deployment
        .properties
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(props, ["apiVersion", "kind", "metadata", "spec", "status"]);

    // The paths, and what kubectl looks for in them to leave field validation to the server: a
    // PATCH for the kind that takes a `fieldValidation` query parameter.
    let paths = doc.paths.unwrap().path;
    assert_eq!(paths.len(), json["paths"].as_object().unwrap().len());
    let patch = paths
        .iter()
        .filter_map(|p| p.value.as_ref()?.patch.as_ref())
        .find(|op| {
            op.vendor_extension.iter().any(|e| {
                e.name == "x-kubernetes-group-version-kind"
                    && extension(&op.vendor_extension, &e.name)["kind"] == "Deployment"
            })
        })
        .expect("a PATCH operation for deployments");
    assert!(
        patch.parameters.iter().any(|p| {
            p.parameter
                .as_ref()
                .and_then(|p| p.non_body_parameter.as_ref())
                .and_then(|p| p.query_parameter_sub_schema.as_ref())
                .is_some_and(|q| q.name == "fieldValidation")
        }),
        "{patch:?}"
    );

    // A client that asks for JSON first, or for anything, gets JSON.
    for accept in [
        "application/json, application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        "*/*",
    ] {
        let (_, ct, _) = get(&client, accept).await;
        assert_eq!(ct, "application/json", "{accept}");
    }
}
