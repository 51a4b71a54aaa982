//! Authentication and authorization of metrics requests against the API server
//! (controller-runtime's `filters.WithAuthenticationAndAuthorization`).
//!
//! Every request to `/metrics` must carry `Authorization: Bearer <token>`. The filter asks the
//! API server who the token belongs to with a `TokenReview` (`authentication.k8s.io/v1`), then
//! whether that user may `get` the request's path with a `SubjectAccessReview`
//! (`authorization.k8s.io/v1`, non-resource attributes: verb = the request's method in lower
//! case, path = the request's path), as kube-apiserver's delegating authenticator and
//! authorizer do for the components that run beside it:
//!
//! | the request | the answer |
//! | --- | --- |
//! | no bearer token, or a token the `TokenReview` does not authenticate | `401 Unauthorized` |
//! | an authenticated user the `SubjectAccessReview` does not allow | `403 Authorization denied for user NAME` |
//! | an allowed user | the metrics |
//! | a review that fails (the API server unreachable or refusing the review itself) | `500` |
//!
//! The manager's own identity needs to create both reviews (a ClusterRole with `create` on
//! `tokenreviews.authentication.k8s.io` and `subjectaccessreviews.authorization.k8s.io`; the
//! scraper needs `get` on the non-resource URL `/metrics`), as with controller-runtime:
//!
//! ```yaml
//! # the manager's
//! - apiGroups: [authentication.k8s.io]
//!   resources: [tokenreviews]
//!   verbs: [create]
//! - apiGroups: [authorization.k8s.io]
//!   resources: [subjectaccessreviews]
//!   verbs: [create]
//! # the scraper's (Prometheus')
//! - nonResourceURLs: [/metrics]
//!   verbs: [get]
//! ```
//!
//! ## Caching
//!
//! Answers are cached as controller-runtime configures kube-apiserver's delegating
//! authenticator and authorizer, so a scraper every 15 s costs the API server two reviews a
//! few times an hour, not two per scrape:
//!
//! - a `TokenReview`'s answer, authenticated or not, for
//!   [`with_authentication_cache_ttl`](AuthFilterOptions::with_authentication_cache_ttl)
//!   (default 1 minute: a revoked token or a deleted ServiceAccount is refused within a
//!   minute);
//! - an allowed `SubjectAccessReview` for
//!   [`with_allow_cache_ttl`](AuthFilterOptions::with_allow_cache_ttl) (default 5 minutes: a
//!   permission taken away is noticed within five), a denied one for
//!   [`with_deny_cache_ttl`](AuthFilterOptions::with_deny_cache_ttl) (default 30 s, shorter,
//!   so a permission just granted works soon).
//!
//! Failed reviews are never cached: they are retried (with a backoff of 500 ms times 1.5, at
//! most 5 attempts, as upstream) when the failure may pass (a connection error, a 429 or a 5xx
//! answer), and the request gets a 500 when they keep failing. Tokens are never logged, and the
//! cache keeps only their SHA-256 digests.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use http::{HeaderMap, header};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewStatus};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec, SubjectAccessReviewStatus,
};
use kube_client::Api;
use kube_client::api::PostParams;
use parking_lot::Mutex;
use tokio::time::Instant;

/// The settings of the authentication and authorization filter: cache lifetimes and the
/// bound on one review. Every field has controller-runtime's value; set the others with the
/// `with_*` setters.
///
/// ```
/// use std::time::Duration;
/// use controller_runtime::metrics::filters::AuthFilterOptions;
///
/// let options = AuthFilterOptions::default().with_deny_cache_ttl(Duration::from_secs(5));
/// # let _ = options;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct AuthFilterOptions {
    /// How long a `TokenReview`'s answer is reused (default 1 minute).
    pub(crate) authentication_cache_ttl: Duration,
    /// How long an allowed `SubjectAccessReview` is reused (default 5 minutes).
    pub(crate) allow_cache_ttl: Duration,
    /// How long a denied `SubjectAccessReview` is reused (default 30 s).
    pub(crate) deny_cache_ttl: Duration,
    /// The bound on one review request (default 10 s).
    pub(crate) review_timeout: Duration,
}

impl Default for AuthFilterOptions {
    fn default() -> Self {
        AuthFilterOptions {
            authentication_cache_ttl: Duration::from_secs(60),
            allow_cache_ttl: Duration::from_secs(300),
            deny_cache_ttl: Duration::from_secs(30),
            review_timeout: Duration::from_secs(10),
        }
    }
}

impl AuthFilterOptions {
    /// How long a `TokenReview`'s answer, authenticated or not, is reused (default 1 minute,
    /// controller-runtime's `CacheTTL`); zero: ask on every request.
    pub fn with_authentication_cache_ttl(self, ttl: Duration) -> Self {
        AuthFilterOptions {
            authentication_cache_ttl: ttl,
            ..self
        }
    }

    /// How long an allowed `SubjectAccessReview` is reused (default 5 minutes,
    /// controller-runtime's `AllowCacheTTL`); zero: ask on every request.
    pub fn with_allow_cache_ttl(self, ttl: Duration) -> Self {
        AuthFilterOptions {
            allow_cache_ttl: ttl,
            ..self
        }
    }

    /// How long a denied `SubjectAccessReview` is reused (default 30 s, controller-runtime's
    /// `DenyCacheTTL`); zero: ask on every request.
    pub fn with_deny_cache_ttl(self, ttl: Duration) -> Self {
        AuthFilterOptions {
            deny_cache_ttl: ttl,
            ..self
        }
    }

    /// The bound on one review request, each attempt (default 10 s, controller-runtime's
    /// `TokenAccessReviewTimeout`).
    pub fn with_review_timeout(self, timeout: Duration) -> Self {
        AuthFilterOptions {
            review_timeout: timeout,
            ..self
        }
    }
}

/// Who a token belongs to, as a `TokenReview` answered.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) struct User {
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

/// A review that could not be answered.
#[derive(Debug)]
pub(crate) struct ReviewError {
    message: String,
    /// Whether asking again may give an answer (a connection failure, 429, 5xx).
    retriable: bool,
}

impl std::fmt::Display for ReviewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<kube_client::Error> for ReviewError {
    fn from(e: kube_client::Error) -> Self {
        let retriable = match &e {
            kube_client::Error::Api(status) => status.code == 429 || status.code >= 500,
            _ => true,
        };
        ReviewError {
            message: e.to_string(),
            retriable,
        }
    }
}

/// Who answers the reviews: the API server through a kube client, or a test's fake.
pub(crate) trait Reviewer: Send + Sync + 'static {
    /// The `TokenReview` of `token`.
    fn token_review(&self, token: String) -> BoxFuture<'_, Result<TokenReviewStatus, ReviewError>>;
    /// The `SubjectAccessReview` of `spec`.
    fn access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<SubjectAccessReviewStatus, ReviewError>>;
}

impl Reviewer for kube_client::Client {
    fn token_review(&self, token: String) -> BoxFuture<'_, Result<TokenReviewStatus, ReviewError>> {
        Box::pin(async move {
            // Built from JSON: `spec.token`'s Rust type differs between the Kubernetes versions
            // k8s-openapi offers, and a library compiles against whichever its user picked.
            let review: TokenReview = serde_json::from_value(
                serde_json::json!({ "spec": { "token": token } }),
            )
            .map_err(|e| ReviewError {
                message: format!("building the TokenReview: {e}"),
                retriable: false,
            })?;
            let answered = Api::<TokenReview>::all(self.clone())
                .create(&PostParams::default(), &review)
                .await?;
            Ok(answered.status.unwrap_or_default())
        })
    }

    fn access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<SubjectAccessReviewStatus, ReviewError>> {
        Box::pin(async move {
            let review = SubjectAccessReview {
                spec,
                ..Default::default()
            };
            let answered = Api::<SubjectAccessReview>::all(self.clone())
                .create(&PostParams::default(), &review)
                .await?;
            Ok(answered.status.unwrap_or_default())
        })
    }
}

/// Why a request is refused, and how it is answered.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// 401: no bearer token, or one not authenticated.
    Unauthorized,
    /// 403: the user may not.
    Forbidden(String),
    /// 500: a review failed.
    Failed(String),
}

impl Refusal {
    /// The status code and plain-text body, as controller-runtime's filter writes them.
    pub(crate) fn answer(&self) -> (http::StatusCode, String) {
        match self {
            Refusal::Unauthorized => (http::StatusCode::UNAUTHORIZED, "Unauthorized\n".into()),
            Refusal::Forbidden(user) => (
                http::StatusCode::FORBIDDEN,
                format!("Authorization denied for user {user}\n"),
            ),
            Refusal::Failed(message) => (http::StatusCode::INTERNAL_SERVER_ERROR, message.clone()),
        }
    }
}

/// Entries a cache holds at most; past it, expired entries go, then everything.
const MAX_ENTRIES: usize = 4096;

/// A map whose entries expire.
struct TtlCache<K, V> {
    entries: Mutex<HashMap<K, (Instant, V)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn new() -> Self {
        TtlCache {
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock();
        let (expires, value) = entries.get(key)?;
        (Instant::now() < *expires).then(|| value.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (expires, _)| now < *expires);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (now + ttl, value));
    }
}

/// What a SubjectAccessReview is asked about, the authorization cache's key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Decision {
    user: User,
    verb: String,
    path: String,
}

/// The filter: see the [module docs](self).
pub(crate) struct AuthFilter {
    reviewer: Arc<dyn Reviewer>,
    options: AuthFilterOptions,
    /// By the SHA-256 of the token: `Some(user)` when authenticated.
    tokens: TtlCache<[u8; 32], Option<User>>,
    decisions: TtlCache<Decision, bool>,
}

impl AuthFilter {
    pub(crate) fn new(reviewer: Arc<dyn Reviewer>, options: AuthFilterOptions) -> Self {
        AuthFilter {
            reviewer,
            options,
            tokens: TtlCache::new(),
            decisions: TtlCache::new(),
        }
    }

    /// Authenticates and authorizes a request for `path` with `method`: `Ok` with the user
    /// when it may go on.
    pub(crate) async fn check(
        &self,
        headers: &HeaderMap,
        method: &http::Method,
        path: &str,
    ) -> Result<User, Refusal> {
        let token = bearer_token(headers).ok_or(Refusal::Unauthorized)?;
        let user = self
            .authenticate(token)
            .await?
            .ok_or(Refusal::Unauthorized)?;
        let decision = Decision {
            user,
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_string(),
        };
        if self.authorize(&decision).await? {
            Ok(decision.user)
        } else {
            tracing::debug!(user = %decision.user.name, path, "metrics: authorization denied");
            Err(Refusal::Forbidden(decision.user.name))
        }
    }

    /// The user `token` belongs to (`None`: not authenticated), cached.
    async fn authenticate(&self, token: &str) -> Result<Option<User>, Refusal> {
        let key = sha256(token.as_bytes());
        if let Some(found) = self.tokens.get(&key) {
            return Ok(found);
        }
        let status = self
            .retrying(|| self.reviewer.token_review(token.to_string()))
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "metrics: authentication failed (TokenReview)");
                Refusal::Failed("Authentication failed\n".into())
            })?;
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Some(User {
                name: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default(),
            }),
            _ => {
                tracing::debug!(
                    reason = status.error.as_deref().unwrap_or(""),
                    "metrics: token not authenticated"
                );
                None
            }
        };
        self.tokens
            .put(key, user.clone(), self.options.authentication_cache_ttl);
        Ok(user)
    }

    /// Whether the SubjectAccessReview of `decision` allows it, cached.
    async fn authorize(&self, decision: &Decision) -> Result<bool, Refusal> {
        if let Some(allowed) = self.decisions.get(decision) {
            return Ok(allowed);
        }
        let user = &decision.user;
        let spec = SubjectAccessReviewSpec {
            user: Some(user.name.clone()),
            uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
            groups: Some(user.groups.clone()),
            extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
            non_resource_attributes: Some(NonResourceAttributes {
                path: Some(decision.path.clone()),
                verb: Some(decision.verb.clone()),
            }),
            resource_attributes: None,
        };
        let status = self
            .retrying(|| self.reviewer.access_review(spec.clone()))
            .await
            .map_err(|e| {
                let message = format!("Authorization for user {} failed", user.name);
                tracing::error!(error = %e, "metrics: {message} (SubjectAccessReview)");
                Refusal::Failed(message + "\n")
            })?;
        let allowed = status.allowed && status.denied != Some(true);
        let ttl = if allowed {
            self.options.allow_cache_ttl
        } else {
            self.options.deny_cache_ttl
        };
        self.decisions.put(decision.clone(), allowed, ttl);
        Ok(allowed)
    }

    /// Calls `review` (bounded by the review timeout) until it answers, a failure that will
    /// not pass, or the 5th attempt; 500 ms between the first two, 1.5 times more each time,
    /// with up to 20% jitter (upstream's `DefaultAuthWebhookRetryBackoff`).
    async fn retrying<T, F, Fut>(&self, review: F) -> Result<T, ReviewError>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, ReviewError>>,
    {
        const STEPS: usize = 5;
        let mut delay = Duration::from_millis(500);
        let mut attempt = 1;
        loop {
            let result = match tokio::time::timeout(self.options.review_timeout, review()).await {
                Ok(result) => result,
                Err(_) => Err(ReviewError {
                    message: format!("no answer within {:?}", self.options.review_timeout),
                    retriable: true,
                }),
            };
            match result {
                Err(e) if e.retriable && attempt < STEPS => {
                    tracing::debug!(error = %e, attempt, "metrics: review failed; retrying");
                    let jitter = 1.0 + 0.2 * rand::random::<f64>();
                    tokio::time::sleep(delay.mul_f64(jitter)).await;
                    delay = delay.mul_f64(1.5);
                    attempt += 1;
                }
                result => return result,
            }
        }
    }
}

/// The bearer token of `Authorization: Bearer <token>` (the scheme in any case), as
/// kube-apiserver's bearer-token authenticator reads it; `None` without one.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// SHA-256 of `bytes`, through rustls' provider (no other hashing dependency).
fn sha256(bytes: &[u8]) -> [u8; 32] {
    let hash = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .map(|suite| suite.common.hash_provider.hash(bytes));
    let mut out = [0u8; 32];
    if let Some(hash) = hash {
        let digest = hash.as_ref();
        let n = digest.len().min(32);
        out[..n].copy_from_slice(&digest[..n]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::authentication::v1::UserInfo;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers reviews as a test wants, and counts them.
    #[derive(Default)]
    struct FakeApi {
        /// Tokens the TokenReview authenticates, and as whom.
        users: HashMap<String, String>,
        /// Users the SubjectAccessReview allows to `get /metrics`.
        allowed: Vec<String>,
        /// Reviews fail with this code, this many times first.
        fail: Mutex<Option<(u16, usize)>>,
        token_reviews: AtomicUsize,
        access_reviews: AtomicUsize,
        /// The last SubjectAccessReview asked.
        last_spec: Mutex<Option<SubjectAccessReviewSpec>>,
    }

    impl FakeApi {
        fn failing(&self) -> Option<ReviewError> {
            let mut fail = self.fail.lock();
            match &mut *fail {
                Some((code, n)) if *n > 0 => {
                    *n -= 1;
                    Some(ReviewError {
                        message: format!("the server answered {code}"),
                        retriable: *code == 429 || *code >= 500,
                    })
                }
                _ => None,
            }
        }
    }

    impl Reviewer for FakeApi {
        fn token_review(
            &self,
            token: String,
        ) -> BoxFuture<'_, Result<TokenReviewStatus, ReviewError>> {
            self.token_reviews.fetch_add(1, Ordering::SeqCst);
            let failed = self.failing();
            let user = self.users.get(&token).cloned();
            Box::pin(async move {
                if let Some(e) = failed {
                    return Err(e);
                }
                Ok(match user {
                    Some(name) => TokenReviewStatus {
                        authenticated: Some(true),
                        user: Some(UserInfo {
                            username: Some(name),
                            groups: Some(vec!["system:authenticated".into()]),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                    None => TokenReviewStatus {
                        authenticated: Some(false),
                        error: Some("invalid bearer token".into()),
                        ..Default::default()
                    },
                })
            })
        }

        fn access_review(
            &self,
            spec: SubjectAccessReviewSpec,
        ) -> BoxFuture<'_, Result<SubjectAccessReviewStatus, ReviewError>> {
            self.access_reviews.fetch_add(1, Ordering::SeqCst);
            let failed = self.failing();
            let attributes = spec.non_resource_attributes.clone().unwrap_or_default();
            let allowed = attributes.verb.as_deref() == Some("get")
                && attributes.path.as_deref() == Some("/metrics")
                && spec.user.as_ref().is_some_and(|u| self.allowed.contains(u));
            *self.last_spec.lock() = Some(spec);
            Box::pin(async move {
                match failed {
                    Some(e) => Err(e),
                    None => Ok(SubjectAccessReviewStatus {
                        allowed,
                        ..Default::default()
                    }),
                }
            })
        }
    }

    fn api() -> Arc<FakeApi> {
        Arc::new(FakeApi {
            users: [
                ("scraper-token".to_string(), "prometheus".to_string()),
                ("other-token".to_string(), "someone".to_string()),
            ]
            .into(),
            allowed: vec!["prometheus".into()],
            ..Default::default()
        })
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            format!("Bearer {token}").parse().unwrap(),
        );
        headers
    }

    async fn get(filter: &AuthFilter, headers: &HeaderMap) -> Result<User, Refusal> {
        filter.check(headers, &http::Method::GET, "/metrics").await
    }

    #[tokio::test(start_paused = true)]
    async fn no_token_is_401_without_asking_the_api() {
        let api = api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        assert_eq!(
            get(&filter, &HeaderMap::new()).await,
            Err(Refusal::Unauthorized)
        );
        for value in ["Basic abc", "Bearer", "Bearer ", "scraper-token"] {
            let mut headers = HeaderMap::new();
            headers.insert(header::AUTHORIZATION, value.parse().unwrap());
            assert_eq!(
                get(&filter, &headers).await,
                Err(Refusal::Unauthorized),
                "{value:?}"
            );
        }
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 0);
        assert_eq!(Refusal::Unauthorized.answer().0, 401);
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_the_review_does_not_authenticate_is_401() {
        let api = api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        assert_eq!(
            get(&filter, &bearer("stolen")).await,
            Err(Refusal::Unauthorized)
        );
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 1);
        assert_eq!(api.access_reviews.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn an_authenticated_user_without_the_permission_is_403() {
        let api = api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        let refused = get(&filter, &bearer("other-token")).await.unwrap_err();
        assert_eq!(refused, Refusal::Forbidden("someone".into()));
        let (code, body) = refused.answer();
        assert_eq!(
            (code.as_u16(), body.as_str()),
            (403, "Authorization denied for user someone\n")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_allowed_user_passes_and_the_review_names_user_verb_and_path() {
        let api = api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        // The scheme in any case, as kube-apiserver reads it.
        let mut headers = HeaderMap::new();
        headers.insert(
            header::AUTHORIZATION,
            "bearer scraper-token".parse().unwrap(),
        );
        let user = get(&filter, &headers).await.unwrap();
        assert_eq!(user.name, "prometheus");
        let spec = api.last_spec.lock().clone().unwrap();
        assert_eq!(spec.user.as_deref(), Some("prometheus"));
        assert_eq!(spec.groups, Some(vec!["system:authenticated".to_string()]));
        let attributes = spec.non_resource_attributes.unwrap();
        assert_eq!(
            (attributes.verb.as_deref(), attributes.path.as_deref()),
            (Some("get"), Some("/metrics"))
        );
        assert!(spec.resource_attributes.is_none());
        // Another verb is another question: HEAD is not GET for this filter (as upstream's).
        let head = filter
            .check(&bearer("scraper-token"), &http::Method::HEAD, "/metrics")
            .await;
        assert_eq!(head, Err(Refusal::Forbidden("prometheus".into())));
    }

    #[tokio::test(start_paused = true)]
    async fn answers_are_cached_for_their_ttls() {
        let api = api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        let reviews = |api: &FakeApi| {
            (
                api.token_reviews.load(Ordering::SeqCst),
                api.access_reviews.load(Ordering::SeqCst),
            )
        };
        for _ in 0..3 {
            get(&filter, &bearer("scraper-token")).await.unwrap();
            get(&filter, &bearer("other-token")).await.unwrap_err();
            get(&filter, &bearer("stolen")).await.unwrap_err();
        }
        // One TokenReview per token, one SubjectAccessReview per user.
        assert_eq!(reviews(&api), (3, 2));

        // After 31 s the denial is asked again; tokens and the allowed user are still cached.
        tokio::time::advance(Duration::from_secs(31)).await;
        get(&filter, &bearer("scraper-token")).await.unwrap();
        get(&filter, &bearer("other-token")).await.unwrap_err();
        assert_eq!(reviews(&api), (3, 3));

        // After a minute the tokens are reviewed again; the allowance is still cached.
        tokio::time::advance(Duration::from_secs(30)).await;
        get(&filter, &bearer("scraper-token")).await.unwrap();
        get(&filter, &bearer("stolen")).await.unwrap_err();
        assert_eq!(reviews(&api), (5, 3));

        // After five minutes the allowance is reviewed again.
        tokio::time::advance(Duration::from_secs(300)).await;
        get(&filter, &bearer("scraper-token")).await.unwrap();
        assert_eq!(reviews(&api), (6, 4));

        // Zero TTLs: every request asks.
        let options = AuthFilterOptions::default()
            .with_authentication_cache_ttl(Duration::ZERO)
            .with_allow_cache_ttl(Duration::ZERO);
        let api = self::api();
        let filter = AuthFilter::new(api.clone(), options);
        get(&filter, &bearer("scraper-token")).await.unwrap();
        get(&filter, &bearer("scraper-token")).await.unwrap();
        assert_eq!(reviews(&api), (2, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn failed_reviews_are_retried_then_answered_500_and_never_cached() {
        let api = api();
        // Two 503s, then answers: the request passes after two retries.
        *api.fail.lock() = Some((503, 2));
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        let began = Instant::now();
        get(&filter, &bearer("scraper-token")).await.unwrap();
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 3);
        let waited = began.elapsed();
        assert!(
            waited >= Duration::from_millis(1250) && waited <= Duration::from_millis(1500),
            "{waited:?}"
        );

        // Failing for good: five attempts, then 500; the next request asks again.
        let api = self::api();
        *api.fail.lock() = Some((500, 5));
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        let refused = get(&filter, &bearer("scraper-token")).await.unwrap_err();
        assert_eq!(refused, Refusal::Failed("Authentication failed\n".into()));
        assert_eq!(refused.answer().0, 500);
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 5);
        get(&filter, &bearer("scraper-token")).await.unwrap();
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 6);

        // A 403 on the review itself (the manager may not create reviews) is not retried.
        let api = self::api();
        *api.fail.lock() = Some((403, 1));
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        assert!(matches!(
            get(&filter, &bearer("scraper-token")).await,
            Err(Refusal::Failed(_))
        ));
        assert_eq!(api.token_reviews.load(Ordering::SeqCst), 1);

        // A SubjectAccessReview failing: 500 naming the user.
        let api = self::api();
        let filter = AuthFilter::new(api.clone(), AuthFilterOptions::default());
        get(&filter, &bearer("other-token")).await.unwrap_err(); // caches the token
        *api.fail.lock() = Some((400, 1));
        tokio::time::advance(Duration::from_secs(31)).await; // the denial expires
        assert_eq!(
            get(&filter, &bearer("other-token")).await,
            Err(Refusal::Failed(
                "Authorization for user someone failed\n".into()
            ))
        );
    }

    #[test]
    fn token_digests_differ_and_are_sha256() {
        // SHA-256("abc"), FIPS 180-2's example.
        assert_eq!(
            sha256(b"abc")[..4],
            [0xba, 0x78, 0x16, 0xbf],
            "{:x?}",
            sha256(b"abc")
        );
        assert_ne!(sha256(b"a"), sha256(b"b"));
    }
}
