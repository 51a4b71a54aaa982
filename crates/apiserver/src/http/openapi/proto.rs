//! `/openapi/v2` in protobuf: the Swagger 2.0 document encoded as gnostic's
//! `openapi.v2.Document` (gnostic-models' `openapiv2/OpenAPIv2.proto`), the form client-go's
//! discovery and kubectl ask for with `Accept:
//! application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (`kubectl explain --output
//! plaintext-openapiv2`, and their fallback when a v3 document is missing).
//!
//! The messages are written here with `prost`'s derive for the part of the schema a Kubernetes
//! document uses (no `protoc` at build time); their field numbers are the `.proto`'s. JSON values
//! the messages do not type (defaults, enums, examples, vendor extensions such as
//! `x-kubernetes-group-version-kind`) travel as gnostic carries them, as YAML text in
//! `Any.yaml`: their JSON text, which is YAML. What Swagger 2.0 cannot say (`anyOf`, `oneOf`,
//! `nullable`) is left out, as upstream's v2 document leaves it out.

use prost::Message;
use serde_json::{Map, Value};

/// The Content-Type of the protobuf document (upstream's answer to both media types it accepts).
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The media types that ask for the protobuf document: the one clients send, and the one
/// upstream answers with.
const MEDIA_TYPES: [&str; 2] = [
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    CONTENT_TYPE,
];

/// Whether an `Accept` header asks for the protobuf document before JSON: the first media
/// range that names either decides.
pub fn wants_protobuf(accept: Option<&str>) -> bool {
    let Some(accept) = accept else {
        return false;
    };
    for range in accept.split(',') {
        let media = range.split(';').next().unwrap_or("").trim();
        if MEDIA_TYPES.iter().any(|m| m.eq_ignore_ascii_case(media)) {
            return true;
        }
        if matches!(media, "application/json" | "application/*" | "*/*") {
            return false;
        }
    }
    false
}

/// The Swagger 2.0 JSON `doc` in protobuf.
pub fn encode(doc: &Value) -> Vec<u8> {
    document(doc).encode_to_vec()
}

/// `openapi.v2.Document`.
#[derive(Clone, PartialEq, Message)]
pub struct Document {
    /// The Swagger version (`2.0`).
    #[prost(string, tag = "1")]
    pub swagger: String,
    /// Title and version.
    #[prost(message, optional, tag = "2")]
    pub info: Option<Info>,
    /// The operations, by path.
    #[prost(message, optional, tag = "8")]
    pub paths: Option<Paths>,
    /// The schemas, by definition name.
    #[prost(message, optional, tag = "9")]
    pub definitions: Option<Definitions>,
}

/// `openapi.v2.Info`.
#[derive(Clone, PartialEq, Message)]
pub struct Info {
    /// The API's title.
    #[prost(string, tag = "1")]
    pub title: String,
    /// The API's version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `openapi.v2.Paths`.
#[derive(Clone, PartialEq, Message)]
pub struct Paths {
    /// `x-` keys.
    #[prost(message, repeated, tag = "1")]
    pub vendor_extension: Vec<NamedAny>,
    /// The paths, in the document's order.
    #[prost(message, repeated, tag = "2")]
    pub path: Vec<NamedPathItem>,
}

/// `openapi.v2.NamedPathItem`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedPathItem {
    /// The path.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its operations.
    #[prost(message, optional, tag = "2")]
    pub value: Option<PathItem>,
}

/// `openapi.v2.PathItem`.
#[derive(Clone, PartialEq, Message)]
pub struct PathItem {
    /// GET.
    #[prost(message, optional, tag = "2")]
    pub get: Option<Operation>,
    /// PUT.
    #[prost(message, optional, tag = "3")]
    pub put: Option<Operation>,
    /// POST.
    #[prost(message, optional, tag = "4")]
    pub post: Option<Operation>,
    /// DELETE.
    #[prost(message, optional, tag = "5")]
    pub delete: Option<Operation>,
    /// HEAD.
    #[prost(message, optional, tag = "7")]
    pub head: Option<Operation>,
    /// PATCH.
    #[prost(message, optional, tag = "8")]
    pub patch: Option<Operation>,
    /// Parameters of every operation.
    #[prost(message, repeated, tag = "9")]
    pub parameters: Vec<ParametersItem>,
    /// `x-` keys.
    #[prost(message, repeated, tag = "10")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.Operation`.
#[derive(Clone, PartialEq, Message)]
pub struct Operation {
    /// Tags.
    #[prost(string, repeated, tag = "1")]
    pub tags: Vec<String>,
    /// Summary.
    #[prost(string, tag = "2")]
    pub summary: String,
    /// Description.
    #[prost(string, tag = "3")]
    pub description: String,
    /// The operation's id.
    #[prost(string, tag = "5")]
    pub operation_id: String,
    /// The media types it answers with.
    #[prost(string, repeated, tag = "6")]
    pub produces: Vec<String>,
    /// The media types it accepts.
    #[prost(string, repeated, tag = "7")]
    pub consumes: Vec<String>,
    /// Its parameters.
    #[prost(message, repeated, tag = "8")]
    pub parameters: Vec<ParametersItem>,
    /// Its responses.
    #[prost(message, optional, tag = "9")]
    pub responses: Option<Responses>,
    /// Schemes.
    #[prost(string, repeated, tag = "10")]
    pub schemes: Vec<String>,
    /// Whether deprecated.
    #[prost(bool, tag = "11")]
    pub deprecated: bool,
    /// `x-` keys: `x-kubernetes-group-version-kind`, `x-kubernetes-action`.
    #[prost(message, repeated, tag = "13")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.ParametersItem`.
#[derive(Clone, PartialEq, Message)]
pub struct ParametersItem {
    /// A parameter or a reference to one.
    #[prost(oneof = "ParametersItemOneof", tags = "1, 2")]
    pub oneof: Option<ParametersItemOneof>,
}

/// The choice of [`ParametersItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParametersItemOneof {
    /// A parameter.
    #[prost(message, tag = "1")]
    Parameter(Box<Parameter>),
    /// A reference to one.
    #[prost(message, tag = "2")]
    JsonReference(JsonReference),
}

/// `openapi.v2.Parameter`.
#[derive(Clone, PartialEq, Message)]
pub struct Parameter {
    /// The body, or another parameter.
    #[prost(oneof = "ParameterOneof", tags = "1, 2")]
    pub oneof: Option<ParameterOneof>,
}

/// The choice of [`Parameter`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ParameterOneof {
    /// The request body.
    #[prost(message, tag = "1")]
    BodyParameter(Box<BodyParameter>),
    /// A query, path, header or form parameter.
    #[prost(message, tag = "2")]
    NonBodyParameter(NonBodyParameter),
}

/// `openapi.v2.BodyParameter`.
#[derive(Clone, PartialEq, Message)]
pub struct BodyParameter {
    /// Description.
    #[prost(string, tag = "1")]
    pub description: String,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// `body`.
    #[prost(string, tag = "3")]
    pub r#in: String,
    /// Whether required.
    #[prost(bool, tag = "4")]
    pub required: bool,
    /// The body's schema.
    #[prost(message, optional, tag = "5")]
    pub schema: Option<Schema>,
    /// `x-` keys.
    #[prost(message, repeated, tag = "6")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NonBodyParameter`.
#[derive(Clone, PartialEq, Message)]
pub struct NonBodyParameter {
    /// By location.
    #[prost(oneof = "NonBodyParameterOneof", tags = "1, 2, 3, 4")]
    pub oneof: Option<NonBodyParameterOneof>,
}

/// The choice of [`NonBodyParameter`]: header and path parameters share a layout, as do query
/// and form parameters.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum NonBodyParameterOneof {
    /// `in: header`.
    #[prost(message, tag = "1")]
    HeaderParameterSubSchema(SimpleParameter),
    /// `in: formData`.
    #[prost(message, tag = "2")]
    FormDataParameterSubSchema(QueryParameter),
    /// `in: query`.
    #[prost(message, tag = "3")]
    QueryParameterSubSchema(QueryParameter),
    /// `in: path`.
    #[prost(message, tag = "4")]
    PathParameterSubSchema(SimpleParameter),
}

/// `openapi.v2.QueryParameterSubSchema` (and `FormDataParameterSubSchema`), the fields kept.
#[derive(Clone, PartialEq, Message)]
pub struct QueryParameter {
    /// Whether required.
    #[prost(bool, tag = "1")]
    pub required: bool,
    /// `query` or `formData`.
    #[prost(string, tag = "2")]
    pub r#in: String,
    /// Description.
    #[prost(string, tag = "3")]
    pub description: String,
    /// Name.
    #[prost(string, tag = "4")]
    pub name: String,
    /// Type.
    #[prost(string, tag = "6")]
    pub r#type: String,
    /// Format.
    #[prost(string, tag = "7")]
    pub format: String,
    /// Whether items are unique.
    #[prost(bool, tag = "20")]
    pub unique_items: bool,
    /// `x-` keys.
    #[prost(message, repeated, tag = "23")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.PathParameterSubSchema` (and `HeaderParameterSubSchema`), the fields kept.
#[derive(Clone, PartialEq, Message)]
pub struct SimpleParameter {
    /// Whether required.
    #[prost(bool, tag = "1")]
    pub required: bool,
    /// `path` or `header`.
    #[prost(string, tag = "2")]
    pub r#in: String,
    /// Description.
    #[prost(string, tag = "3")]
    pub description: String,
    /// Name.
    #[prost(string, tag = "4")]
    pub name: String,
    /// Type.
    #[prost(string, tag = "5")]
    pub r#type: String,
    /// Format.
    #[prost(string, tag = "6")]
    pub format: String,
    /// Whether items are unique.
    #[prost(bool, tag = "19")]
    pub unique_items: bool,
    /// `x-` keys.
    #[prost(message, repeated, tag = "22")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.JsonReference`.
#[derive(Clone, PartialEq, Message)]
pub struct JsonReference {
    /// `$ref`.
    #[prost(string, tag = "1")]
    pub r#ref: String,
    /// Description.
    #[prost(string, tag = "2")]
    pub description: String,
}

/// `openapi.v2.Responses`.
#[derive(Clone, PartialEq, Message)]
pub struct Responses {
    /// By status code (or `default`).
    #[prost(message, repeated, tag = "1")]
    pub response_code: Vec<NamedResponseValue>,
    /// `x-` keys.
    #[prost(message, repeated, tag = "2")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.NamedResponseValue`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedResponseValue {
    /// The status code.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The response.
    #[prost(message, optional, tag = "2")]
    pub value: Option<ResponseValue>,
}

/// `openapi.v2.ResponseValue`.
#[derive(Clone, PartialEq, Message)]
pub struct ResponseValue {
    /// A response or a reference to one.
    #[prost(oneof = "ResponseValueOneof", tags = "1, 2")]
    pub oneof: Option<ResponseValueOneof>,
}

/// The choice of [`ResponseValue`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum ResponseValueOneof {
    /// A response.
    #[prost(message, tag = "1")]
    Response(Box<Response>),
    /// A reference to one.
    #[prost(message, tag = "2")]
    JsonReference(JsonReference),
}

/// `openapi.v2.Response`.
#[derive(Clone, PartialEq, Message)]
pub struct Response {
    /// Description.
    #[prost(string, tag = "1")]
    pub description: String,
    /// The body's schema.
    #[prost(message, optional, tag = "2")]
    pub schema: Option<SchemaItem>,
    /// `x-` keys.
    #[prost(message, repeated, tag = "5")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.SchemaItem`: a schema (a file schema is never written here).
#[derive(Clone, PartialEq, Message)]
pub struct SchemaItem {
    /// The schema.
    #[prost(oneof = "SchemaItemOneof", tags = "1")]
    pub oneof: Option<SchemaItemOneof>,
}

/// The choice of [`SchemaItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum SchemaItemOneof {
    /// A schema.
    #[prost(message, tag = "1")]
    Schema(Schema),
}

/// `openapi.v2.Definitions`.
#[derive(Clone, PartialEq, Message)]
pub struct Definitions {
    /// The schemas by name.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.NamedSchema`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedSchema {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The schema.
    #[prost(message, optional, tag = "2")]
    pub value: Option<Schema>,
}

/// `openapi.v2.Schema`.
#[derive(Clone, PartialEq, Message)]
pub struct Schema {
    /// `$ref`.
    #[prost(string, tag = "1")]
    pub r#ref: String,
    /// `format`.
    #[prost(string, tag = "2")]
    pub format: String,
    /// `title`.
    #[prost(string, tag = "3")]
    pub title: String,
    /// `description`.
    #[prost(string, tag = "4")]
    pub description: String,
    /// `default`.
    #[prost(message, optional, tag = "5")]
    pub default: Option<Any>,
    /// `multipleOf`.
    #[prost(double, tag = "6")]
    pub multiple_of: f64,
    /// `maximum`.
    #[prost(double, tag = "7")]
    pub maximum: f64,
    /// `exclusiveMaximum`.
    #[prost(bool, tag = "8")]
    pub exclusive_maximum: bool,
    /// `minimum`.
    #[prost(double, tag = "9")]
    pub minimum: f64,
    /// `exclusiveMinimum`.
    #[prost(bool, tag = "10")]
    pub exclusive_minimum: bool,
    /// `maxLength`.
    #[prost(int64, tag = "11")]
    pub max_length: i64,
    /// `minLength`.
    #[prost(int64, tag = "12")]
    pub min_length: i64,
    /// `pattern`.
    #[prost(string, tag = "13")]
    pub pattern: String,
    /// `maxItems`.
    #[prost(int64, tag = "14")]
    pub max_items: i64,
    /// `minItems`.
    #[prost(int64, tag = "15")]
    pub min_items: i64,
    /// `uniqueItems`.
    #[prost(bool, tag = "16")]
    pub unique_items: bool,
    /// `maxProperties`.
    #[prost(int64, tag = "17")]
    pub max_properties: i64,
    /// `minProperties`.
    #[prost(int64, tag = "18")]
    pub min_properties: i64,
    /// `required`.
    #[prost(string, repeated, tag = "19")]
    pub required: Vec<String>,
    /// `enum`.
    #[prost(message, repeated, tag = "20")]
    pub r#enum: Vec<Any>,
    /// `additionalProperties`.
    #[prost(message, optional, boxed, tag = "21")]
    pub additional_properties: Option<Box<AdditionalPropertiesItem>>,
    /// `type`.
    #[prost(message, optional, tag = "22")]
    pub r#type: Option<TypeItem>,
    /// `items`.
    #[prost(message, optional, tag = "23")]
    pub items: Option<ItemsItem>,
    /// `allOf`.
    #[prost(message, repeated, tag = "24")]
    pub all_of: Vec<Schema>,
    /// `properties`.
    #[prost(message, optional, tag = "25")]
    pub properties: Option<Properties>,
    /// `discriminator`.
    #[prost(string, tag = "26")]
    pub discriminator: String,
    /// `readOnly`.
    #[prost(bool, tag = "27")]
    pub read_only: bool,
    /// `example`.
    #[prost(message, optional, tag = "30")]
    pub example: Option<Any>,
    /// `x-` keys: `x-kubernetes-group-version-kind`, patch strategies, ...
    #[prost(message, repeated, tag = "31")]
    pub vendor_extension: Vec<NamedAny>,
}

/// `openapi.v2.AdditionalPropertiesItem`.
#[derive(Clone, PartialEq, Message)]
pub struct AdditionalPropertiesItem {
    /// A schema or a boolean.
    #[prost(oneof = "AdditionalPropertiesOneof", tags = "1, 2")]
    pub oneof: Option<AdditionalPropertiesOneof>,
}

/// The choice of [`AdditionalPropertiesItem`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AdditionalPropertiesOneof {
    /// The values' schema.
    #[prost(message, tag = "1")]
    Schema(Box<Schema>),
    /// Whether other properties are allowed.
    #[prost(bool, tag = "2")]
    Boolean(bool),
}

/// `openapi.v2.TypeItem`.
#[derive(Clone, PartialEq, Message)]
pub struct TypeItem {
    /// The types.
    #[prost(string, repeated, tag = "1")]
    pub value: Vec<String>,
}

/// `openapi.v2.ItemsItem`.
#[derive(Clone, PartialEq, Message)]
pub struct ItemsItem {
    /// The items' schema.
    #[prost(message, repeated, tag = "1")]
    pub schema: Vec<Schema>,
}

/// `openapi.v2.Properties`.
#[derive(Clone, PartialEq, Message)]
pub struct Properties {
    /// The properties, by name.
    #[prost(message, repeated, tag = "1")]
    pub additional_properties: Vec<NamedSchema>,
}

/// `openapi.v2.Any`: a JSON value as YAML text.
#[derive(Clone, PartialEq, Message)]
pub struct Any {
    /// The value as YAML (here its JSON text, which is YAML).
    #[prost(string, tag = "2")]
    pub yaml: String,
}

/// `openapi.v2.NamedAny`.
#[derive(Clone, PartialEq, Message)]
pub struct NamedAny {
    /// The key.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<Any>,
}

fn string(v: &Map<String, Value>, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: &Map<String, Value>, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn boolean(v: &Map<String, Value>, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(v: &Map<String, Value>, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn integer(v: &Map<String, Value>, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn any(v: &Value) -> Any {
    Any {
        yaml: v.to_string(),
    }
}

/// The `x-` keys of an object, in its order.
fn extensions(v: &Map<String, Value>) -> Vec<NamedAny> {
    v.iter()
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}

fn document(doc: &Value) -> Document {
    let empty = Map::new();
    let obj = doc.as_object().unwrap_or(&empty);
    let info = obj.get("info").and_then(Value::as_object).unwrap_or(&empty);
    let paths = obj
        .get("paths")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let definitions = obj
        .get("definitions")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    Document {
        swagger: string(obj, "swagger"),
        info: Some(Info {
            title: string(info, "title"),
            version: string(info, "version"),
        }),
        paths: Some(Paths {
            vendor_extension: extensions(paths),
            path: paths
                .iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .map(|(name, item)| NamedPathItem {
                    name: name.clone(),
                    value: Some(path_item(item.as_object().unwrap_or(&empty))),
                })
                .collect(),
        }),
        definitions: Some(Definitions {
            additional_properties: named_schemas(definitions),
        }),
    }
}

fn named_schemas(map: &Map<String, Value>) -> Vec<NamedSchema> {
    map.iter()
        .map(|(name, s)| NamedSchema {
            name: name.clone(),
            value: Some(schema(s)),
        })
        .collect()
}

fn path_item(item: &Map<String, Value>) -> PathItem {
    let op = |verb: &str| item.get(verb).and_then(Value::as_object).map(operation);
    PathItem {
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        head: op("head"),
        patch: op("patch"),
        parameters: parameters(item),
        vendor_extension: extensions(item),
    }
}

fn operation(op: &Map<String, Value>) -> Operation {
    let empty = Map::new();
    let responses = op
        .get("responses")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    Operation {
        tags: strings(op, "tags"),
        summary: string(op, "summary"),
        description: string(op, "description"),
        operation_id: string(op, "operationId"),
        produces: strings(op, "produces"),
        consumes: strings(op, "consumes"),
        parameters: parameters(op),
        responses: Some(Responses {
            response_code: responses
                .iter()
                .filter(|(k, _)| !k.starts_with("x-"))
                .map(|(code, r)| NamedResponseValue {
                    name: code.clone(),
                    value: Some(response(r.as_object().unwrap_or(&empty))),
                })
                .collect(),
            vendor_extension: extensions(responses),
        }),
        schemes: strings(op, "schemes"),
        deprecated: boolean(op, "deprecated"),
        vendor_extension: extensions(op),
    }
}

fn response(r: &Map<String, Value>) -> ResponseValue {
    let oneof = if r.contains_key("$ref") {
        ResponseValueOneof::JsonReference(JsonReference {
            r#ref: string(r, "$ref"),
            description: string(r, "description"),
        })
    } else {
        ResponseValueOneof::Response(Box::new(Response {
            description: string(r, "description"),
            schema: r.get("schema").map(|s| SchemaItem {
                oneof: Some(SchemaItemOneof::Schema(schema(s))),
            }),
            vendor_extension: extensions(r),
        }))
    };
    ResponseValue { oneof: Some(oneof) }
}

fn parameters(owner: &Map<String, Value>) -> Vec<ParametersItem> {
    let empty = Map::new();
    owner
        .get("parameters")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|p| parameter(p.as_object().unwrap_or(&empty)))
                .collect()
        })
        .unwrap_or_default()
}

fn parameter(p: &Map<String, Value>) -> ParametersItem {
    if p.contains_key("$ref") {
        return ParametersItem {
            oneof: Some(ParametersItemOneof::JsonReference(JsonReference {
                r#ref: string(p, "$ref"),
                description: string(p, "description"),
            })),
        };
    }
    let query = || QueryParameter {
        required: boolean(p, "required"),
        r#in: string(p, "in"),
        description: string(p, "description"),
        name: string(p, "name"),
        r#type: string(p, "type"),
        format: string(p, "format"),
        unique_items: boolean(p, "uniqueItems"),
        vendor_extension: extensions(p),
    };
    let simple = || SimpleParameter {
        required: boolean(p, "required"),
        r#in: string(p, "in"),
        description: string(p, "description"),
        name: string(p, "name"),
        r#type: string(p, "type"),
        format: string(p, "format"),
        unique_items: boolean(p, "uniqueItems"),
        vendor_extension: extensions(p),
    };
    let non_body = |choice| {
        ParameterOneof::NonBodyParameter(NonBodyParameter {
            oneof: Some(choice),
        })
    };
    let oneof = match p.get("in").and_then(Value::as_str) {
        Some("body") => ParameterOneof::BodyParameter(Box::new(BodyParameter {
            description: string(p, "description"),
            name: string(p, "name"),
            r#in: "body".into(),
            required: boolean(p, "required"),
            schema: p.get("schema").map(schema),
            vendor_extension: extensions(p),
        })),
        Some("path") => non_body(NonBodyParameterOneof::PathParameterSubSchema(simple())),
        Some("header") => non_body(NonBodyParameterOneof::HeaderParameterSubSchema(simple())),
        Some("formData") => non_body(NonBodyParameterOneof::FormDataParameterSubSchema(query())),
        _ => non_body(NonBodyParameterOneof::QueryParameterSubSchema(query())),
    };
    ParametersItem {
        oneof: Some(ParametersItemOneof::Parameter(Box::new(Parameter {
            oneof: Some(oneof),
        }))),
    }
}

/// A JSON schema as a Swagger 2.0 `Schema`. A schema that is not an object (`true`) is the
/// empty schema, which allows anything.
fn schema(v: &Value) -> Schema {
    let Some(s) = v.as_object() else {
        return Schema::default();
    };
    let types: Vec<String> = match s.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    let items = match s.get("items") {
        Some(Value::Array(a)) => Some(ItemsItem {
            schema: a.iter().map(schema).collect(),
        }),
        Some(item) => Some(ItemsItem {
            schema: vec![schema(item)],
        }),
        // An array says what its items are, or they are anything: kubectl's reader of this
        // document refuses an array without exactly one item schema.
        None if types.iter().any(|t| t == "array") => Some(ItemsItem {
            schema: vec![Schema::default()],
        }),
        None => None,
    };
    Schema {
        r#ref: string(s, "$ref"),
        format: string(s, "format"),
        title: string(s, "title"),
        description: string(s, "description"),
        default: s.get("default").map(any),
        multiple_of: number(s, "multipleOf"),
        maximum: number(s, "maximum"),
        exclusive_maximum: boolean(s, "exclusiveMaximum"),
        minimum: number(s, "minimum"),
        exclusive_minimum: boolean(s, "exclusiveMinimum"),
        max_length: integer(s, "maxLength"),
        min_length: integer(s, "minLength"),
        pattern: string(s, "pattern"),
        max_items: integer(s, "maxItems"),
        min_items: integer(s, "minItems"),
        unique_items: boolean(s, "uniqueItems"),
        max_properties: integer(s, "maxProperties"),
        min_properties: integer(s, "minProperties"),
        required: strings(s, "required"),
        r#enum: s
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: s.get("additionalProperties").and_then(|a| {
            let oneof = match a {
                Value::Bool(b) => AdditionalPropertiesOneof::Boolean(*b),
                Value::Object(_) => AdditionalPropertiesOneof::Schema(Box::new(schema(a))),
                _ => return None,
            };
            Some(Box::new(AdditionalPropertiesItem { oneof: Some(oneof) }))
        }),
        r#type: (!types.is_empty()).then_some(TypeItem { value: types }),
        items,
        all_of: s
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: s
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| Properties {
                additional_properties: named_schemas(p),
            }),
        discriminator: string(s, "discriminator"),
        read_only: boolean(s, "readOnly"),
        example: s.get("example").map(any),
        vendor_extension: extensions(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_asks_for_protobuf_when_its_type_comes_first() {
        assert!(wants_protobuf(Some(MEDIA_TYPES[0])));
        assert!(wants_protobuf(Some(CONTENT_TYPE)));
        assert!(wants_protobuf(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf;q=0.9, application/json"
        )));
        assert!(!wants_protobuf(None));
        assert!(!wants_protobuf(Some("application/json")));
        assert!(!wants_protobuf(Some("*/*")));
        assert!(!wants_protobuf(Some(&format!(
            "application/json, {}",
            MEDIA_TYPES[0]
        ))));
    }

    #[test]
    fn schemas_keep_what_swagger_2_says_and_extensions_as_yaml() {
        let s = schema(&json!({
            "type": ["string", "null"],
            "description": "d",
            "enum": ["a", "b"],
            "default": "a",
            "maxLength": 3,
            "x-kubernetes-patch-strategy": "merge",
            "anyOf": [{ "type": "integer" }],
        }));
        assert_eq!(s.r#type.unwrap().value, ["string"]);
        assert_eq!(s.description, "d");
        assert_eq!(s.max_length, 3);
        assert_eq!(
            s.r#enum.iter().map(|a| a.yaml.as_str()).collect::<Vec<_>>(),
            ["\"a\"", "\"b\""]
        );
        assert_eq!(s.default.unwrap().yaml, "\"a\"");
        assert_eq!(s.vendor_extension[0].name, "x-kubernetes-patch-strategy");

        // An array without items gets the empty item schema kubectl's reader requires.
        let s = schema(&json!({ "type": "array" }));
        assert_eq!(s.items.unwrap().schema, [Schema::default()]);
        let s = schema(&json!({ "type": "object", "additionalProperties": false }));
        assert_eq!(
            s.additional_properties.unwrap().oneof,
            Some(AdditionalPropertiesOneof::Boolean(false))
        );
        let s = schema(&json!({ "$ref": "#/definitions/x", "description": "y" }));
        assert_eq!(
            (s.r#ref.as_str(), s.description.as_str()),
            ("#/definitions/x", "y")
        );
    }

    #[test]
    fn a_document_round_trips_through_the_wire() {
        let doc = json!({
            "swagger": "2.0",
            "info": { "title": "Kubernetes", "version": "v1.33.0" },
            "paths": { "/api/v1/namespaces/{namespace}/configmaps/{name}": { "patch": {
                "operationId": "patchConfigMap",
                "consumes": ["application/merge-patch+json"],
                "parameters": [
                    { "name": "fieldValidation", "in": "query", "type": "string" },
                    { "name": "body", "in": "body", "required": true, "schema": { "type": "object" } },
                ],
                "responses": { "200": { "description": "OK", "schema": { "$ref": "#/definitions/cm" } } },
                "x-kubernetes-group-version-kind": { "group": "", "version": "v1", "kind": "ConfigMap" },
            } } },
            "definitions": { "cm": { "type": "object", "properties": { "data": {
                "type": "object", "additionalProperties": { "type": "string" },
            } } } },
        });
        let bytes = encode(&doc);
        let back = Document::decode(bytes.as_slice()).unwrap();
        assert_eq!(back, document(&doc));
        let path = &back.paths.unwrap().path[0];
        let patch = path.value.as_ref().unwrap().patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchConfigMap");
        assert!(matches!(
            &patch.parameters[0].oneof,
            Some(ParametersItemOneof::Parameter(p)) if matches!(
                &p.oneof,
                Some(ParameterOneof::NonBodyParameter(NonBodyParameter {
                    oneof: Some(NonBodyParameterOneof::QueryParameterSubSchema(q)),
                })) if q.name == "fieldValidation"
            )
        ));
        assert_eq!(
            serde_json::from_str::<Value>(&patch.vendor_extension[0].value.as_ref().unwrap().yaml)
                .unwrap()["kind"],
            "ConfigMap"
        );
        let defs = back.definitions.unwrap().additional_properties;
        assert_eq!(defs[0].name, "cm");
    }
}
