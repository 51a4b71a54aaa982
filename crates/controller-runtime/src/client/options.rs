//! [`WriteDefaults`]: what every write of a [`Client`](super::Client) carries unless the call
//! says otherwise (controller-runtime's `client.WithFieldOwner`, `client.WithFieldValidation`
//! and `client.WithDryRun` wrappers).

use kube_client::api::{DeleteParams, PatchParams, PostParams, ValidationDirective};

/// What the API server does with fields of a written object that its schema does not know,
/// or that appear twice (the `fieldValidation` query parameter).
///
/// controller-runtime: `metav1.FieldValidation*` (`client.WithFieldValidation`); kube-rs:
/// `ValidationDirective`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldValidation {
    /// Refuse the write with 400 `BadRequest`, naming each unknown or duplicate field.
    Strict,
    /// Drop the unknown fields, keep the last of duplicates, and say so in `Warning` headers
    /// (the server's default).
    Warn,
    /// Drop the unknown fields and keep the last of duplicates silently.
    Ignore,
}

impl FieldValidation {
    /// The query parameter's value: `Strict`, `Warn` or `Ignore`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldValidation::Strict => "Strict",
            FieldValidation::Warn => "Warn",
            FieldValidation::Ignore => "Ignore",
        }
    }

    fn directive(self) -> ValidationDirective {
        match self {
            FieldValidation::Strict => ValidationDirective::Strict,
            FieldValidation::Warn => ValidationDirective::Warn,
            FieldValidation::Ignore => ValidationDirective::Ignore,
        }
    }
}

/// Defaults a [`Client`](super::Client) applies to every write it makes (create, update,
/// patch, server-side apply, delete, and the writes of subresources, `status` and `scale`
/// included), set once with [`Client::with_defaults`](super::Client::with_defaults). A call's
/// own parameters win: a `PatchParams::field_manager` or an [`ApplyOptions`](super::ApplyOptions)
/// field manager replaces the default field owner, a `field_validation` the default
/// validation, and a call's `dry_run: true` is a dry run whatever the default.
///
/// ```
/// use controller_runtime::client::{FieldValidation, WriteDefaults};
///
/// let defaults = WriteDefaults::default()
///     .with_field_owner("my-controller")
///     .with_field_validation(FieldValidation::Strict);
/// assert_eq!(defaults.field_owner(), Some("my-controller"));
/// assert!(!defaults.dry_run());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteDefaults {
    field_owner: Option<String>,
    field_validation: Option<FieldValidation>,
    dry_run: bool,
}

impl WriteDefaults {
    /// The field manager of every write that does not name one: the name its fields are
    /// recorded under in `metadata.managedFields` (for a server-side apply, the manager it
    /// applies as when its [`ApplyOptions`](super::ApplyOptions) name none).
    ///
    /// Default: `None` (the server records the client's user agent). controller-runtime:
    /// `client.WithFieldOwner`, `client.FieldOwner`; kube-rs: `PostParams::field_manager`,
    /// `PatchParams::field_manager`.
    pub fn with_field_owner(mut self, owner: impl Into<String>) -> Self {
        self.field_owner = Some(owner.into());
        self
    }

    /// The `fieldValidation` of every create, update, patch and apply that does not set one.
    ///
    /// Default: `None` (the server's default, `Warn`). controller-runtime:
    /// `client.WithFieldValidation`; kube-rs: `PatchParams::field_validation` (patches only).
    pub fn with_field_validation(mut self, validation: FieldValidation) -> Self {
        self.field_validation = Some(validation);
        self
    }

    /// Every write a dry run (`dryRun=All`): the server validates, admits and answers as if it
    /// stored the object, and stores nothing. Dry-run writes are not waited for by cached
    /// reads (there is nothing for the informer to see).
    ///
    /// Default: `false`. controller-runtime: `client.WithDryRun`, `client.DryRunAll`; kube-rs:
    /// `PostParams::dry_run`, `PatchParams::dry_run`, `DeleteParams::dry_run`.
    pub fn with_dry_run(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The default field owner, if any.
    pub fn field_owner(&self) -> Option<&str> {
        self.field_owner.as_deref()
    }

    /// The default field validation, if any.
    pub fn field_validation(&self) -> Option<FieldValidation> {
        self.field_validation
    }

    /// Whether every write is a dry run.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// `params` with the defaults filled in where it sets nothing.
    pub(crate) fn post_params(&self, params: &PostParams) -> PostParams {
        PostParams {
            dry_run: params.dry_run || self.dry_run,
            field_manager: params
                .field_manager
                .clone()
                .or_else(|| self.field_owner.clone()),
        }
    }

    /// `params` with the defaults filled in where it sets nothing; an empty field manager
    /// counts as none.
    pub(crate) fn patch_params(&self, params: &PatchParams) -> PatchParams {
        let mut out = params.clone();
        out.dry_run |= self.dry_run;
        if out.field_manager.as_deref().is_none_or(str::is_empty) {
            out.field_manager = self.field_owner.clone();
        }
        if out.field_validation.is_none() {
            out.field_validation = self.field_validation.map(FieldValidation::directive);
        }
        out
    }

    /// `params` with the default dry run.
    pub(crate) fn delete_params(&self, params: &DeleteParams) -> DeleteParams {
        let mut out = params.clone();
        out.dry_run |= self.dry_run;
        out
    }

    /// Adds the default `fieldValidation` to a built create or update (kube's `PostParams`
    /// has no field for it) unless the request carries one.
    pub(crate) fn validate_post(
        &self,
        built: Result<http::Request<Vec<u8>>, kube_core::request::Error>,
    ) -> Result<http::Request<Vec<u8>>, kube_core::request::Error> {
        let mut request = built?;
        let Some(validation) = self.field_validation else {
            return Ok(request);
        };
        let uri = request.uri().to_string();
        let (path, query) = uri.split_once('?').unwrap_or((&uri, ""));
        // kube-core leaves an empty pair first (`?&dryRun=All`).
        let query = query.trim_start_matches('&');
        if query
            .split('&')
            .any(|pair| pair.starts_with("fieldValidation="))
        {
            return Ok(request);
        }
        let pair = format!("fieldValidation={}", validation.as_str());
        let joined = if query.is_empty() {
            format!("{path}?{pair}")
        } else {
            format!("{path}?{query}&{pair}")
        };
        *request.uri_mut() = joined.parse().map_err(|e: http::uri::InvalidUri| {
            kube_core::request::Error::BuildRequest(e.into())
        })?;
        Ok(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_params_win_over_defaults() {
        let defaults = WriteDefaults::default()
            .with_field_owner("owner")
            .with_field_validation(FieldValidation::Strict)
            .with_dry_run(true);
        let pp = defaults.post_params(&PostParams::default());
        assert_eq!(pp.field_manager.as_deref(), Some("owner"));
        assert!(pp.dry_run);
        let mine = PatchParams {
            field_manager: Some("me".into()),
            field_validation: Some(ValidationDirective::Ignore),
            ..Default::default()
        };
        let patch = defaults.patch_params(&mine);
        assert_eq!(patch.field_manager.as_deref(), Some("me"));
        assert!(matches!(
            patch.field_validation,
            Some(ValidationDirective::Ignore)
        ));
        assert!(patch.dry_run);
        assert!(defaults.delete_params(&DeleteParams::default()).dry_run);
    }

    #[test]
    fn field_validation_is_added_to_the_query_once() {
        let defaults = WriteDefaults::default().with_field_validation(FieldValidation::Strict);
        let request = kube_core::Request::new("/api/v1/namespaces/ns/configmaps");
        let built = defaults
            .validate_post(request.create(&PostParams::default(), vec![]))
            .unwrap();
        assert_eq!(
            built.uri().to_string(),
            "/api/v1/namespaces/ns/configmaps?fieldValidation=Strict"
        );
        let pp = PostParams {
            dry_run: true,
            ..Default::default()
        };
        let built = defaults.validate_post(request.create(&pp, vec![])).unwrap();
        assert_eq!(
            built.uri().to_string(),
            "/api/v1/namespaces/ns/configmaps?dryRun=All&fieldValidation=Strict"
        );
        let again = defaults.validate_post(Ok(built)).unwrap();
        assert_eq!(
            again.uri().query(),
            Some("dryRun=All&fieldValidation=Strict")
        );
    }
}
