//! [`RequestAttributes`]: what a request asks to do, as authorizers see it, derived as
//! upstream's `RequestInfoFactory` derives it (see [`super::authz`]).

use http::Method;

/// What a request asks to do, as an authorizer sees it (upstream's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestAttributes {
    /// The verb (`get`, `list`, ... for resources; the lowercased method otherwise).
    pub verb: String,
    /// Whether the request is for a resource (otherwise for `path`).
    pub resource_request: bool,
    /// The request path (non-resource requests are authorized by it).
    pub path: String,
    /// The API group (`""` for core).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, `""` for none.
    pub subresource: String,
    /// The namespace, `""` for none.
    pub namespace: String,
    /// The object's name, `""` for none.
    pub name: String,
}

/// The resource a resource request addresses (what the HTTP layer parsed from its path).
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceTarget<'a> {
    /// The API group (`""` for core).
    pub group: &'a str,
    /// The API version.
    pub version: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource, `""` for none.
    pub subresource: &'a str,
    /// The namespace, `""` for none.
    pub namespace: &'a str,
    /// The object's name, `""` for a collection.
    pub name: &'a str,
}

impl RequestAttributes {
    /// A non-resource request: the path, the lowercased method as verb.
    pub fn non_resource(method: &Method, path: &str) -> RequestAttributes {
        RequestAttributes {
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
            ..Default::default()
        }
    }

    /// A resource request with this method at `target`; `watch` when it asks to watch (the
    /// `watch` parameter, or the legacy `/watch/` path); `field_name` the name a
    /// `metadata.name=` field selector selects, which names a `list` or `watch`.
    pub fn resource(
        method: &Method,
        path: &str,
        target: ResourceTarget<'_>,
        watch: bool,
        field_name: Option<&str>,
    ) -> RequestAttributes {
        let verb = resource_verb(method, !target.name.is_empty(), watch);
        let name = match (target.name, field_name) {
            ("", Some(n)) if matches!(verb, "list" | "watch") => n,
            (n, _) => n,
        };
        RequestAttributes {
            verb: verb.to_string(),
            resource_request: true,
            path: path.to_string(),
            api_group: target.group.to_string(),
            api_version: target.version.to_string(),
            resource: target.resource.to_string(),
            subresource: target.subresource.to_string(),
            namespace: target.namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// `resource.group` (`resource` in the core group), as a forbidden message's subject.
    pub fn group_resource(&self) -> String {
        if self.api_group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.api_group)
        }
    }
}

/// The verb of a request on a resource, as RBAC and discovery name verbs (`""` for a method
/// no verb maps: the route refuses it).
pub(crate) fn resource_verb(method: &Method, named: bool, watch: bool) -> &'static str {
    match *method {
        Method::GET | Method::HEAD if watch => "watch",
        Method::GET | Method::HEAD if named => "get",
        Method::GET | Method::HEAD => "list",
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ => "",
    }
}
