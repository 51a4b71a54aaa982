use serde_json::json;

use super::*;
use crate::auth::serviceaccount::{Claims, ObjectClaim, new_token_id};
use crate::auth::x509::ClientCertificateParams;
use crate::storage::{DeleteOptions, Storage, WriteOptions};

fn headers(value: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    if let Some(v) = value {
        h.insert(header::AUTHORIZATION, v.parse().unwrap());
    }
    h
}

fn bearer(token: &str) -> HeaderMap {
    headers(Some(&format!("Bearer {token}")))
}

#[test]
fn bearer_tokens_are_read_as_upstream_reads_them() {
    let authn = Authenticator::new("tok".into());
    for accepted in [
        "Bearer tok",
        "bearer tok",
        "  Bearer tok  ",
        "Bearer tok more",
    ] {
        let user = authn.authenticate(&headers(Some(accepted)), None).unwrap();
        assert_eq!(user, UserInfo::admin(), "{accepted:?}");
    }
    for refused in [
        "Bearer",
        "Bearer ",
        "Bearer  tok",
        "Basic tok",
        "Bearer wrong",
        "Bearertok",
    ] {
        let err = authn
            .authenticate(&headers(Some(refused)), None)
            .unwrap_err();
        assert_eq!(err.code, 401, "{refused:?}");
    }
    assert_eq!(
        authn.authenticate(&headers(None), None).unwrap(),
        UserInfo::anonymous()
    );
}

#[test]
fn static_users_are_authenticated_and_in_system_authenticated() {
    let authn = Authenticator::new("admin-tok".into()).with_users(&[
        StaticUser::new("jane-tok", "jane", &["devs"]).with_uid("42"),
        StaticUser::new("bob-tok", "bob", &[]),
        // An empty token never matches anything.
        StaticUser::new("", "nobody", &[]),
    ]);
    let jane = authn.authenticate(&bearer("jane-tok"), None).unwrap();
    assert_eq!(
        (jane.name.as_str(), jane.uid.as_str(), jane.groups.clone()),
        ("jane", "42", vec!["devs".to_string(), AUTHENTICATED.into()])
    );
    let bob = authn.authenticate(&bearer("bob-tok"), None).unwrap();
    assert_eq!(bob.groups, [AUTHENTICATED]);
    assert_eq!(
        authn.authenticate(&bearer("admin-tok"), None).unwrap(),
        UserInfo::admin()
    );
    assert_eq!(
        authn
            .authenticate(&bearer("jane-tok2"), None)
            .unwrap_err()
            .code,
        401
    );
    // Static tokens are valid for the API audiences only.
    let api = authn.api_audiences().to_vec();
    assert_eq!(authn.review_token("jane-tok", &[]).unwrap().1, api);
    assert!(authn.review_token("jane-tok", &["other".into()]).is_none());
    let both = vec!["other".to_string(), api[0].clone()];
    assert_eq!(authn.review_token("jane-tok", &both).unwrap().1, api);
    // Debug output never shows a token.
    let shown = format!("{authn:?} {:?}", StaticUser::new("jane-tok", "jane", &[]));
    assert!(!shown.contains("tok"), "{shown}");
}

struct Sa {
    storage: Storage,
    signer: Arc<TokenSigner>,
    authn: Authenticator,
    uid: String,
}

fn with_service_account() -> Sa {
    let storage = Storage::default();
    let res = storage.resolve("", "v1", "serviceaccounts").unwrap();
    let sa = storage
        .create(
            &res,
            Some("ns1"),
            json!({"metadata": {"name": "app"}}),
            &WriteOptions::default(),
        )
        .or_else(|_| {
            let nss = storage.resolve("", "v1", "namespaces").unwrap();
            storage
                .create(
                    &nss,
                    None,
                    json!({"metadata": {"name": "ns1"}}),
                    &WriteOptions::default(),
                )
                .unwrap();
            storage.create(
                &res,
                Some("ns1"),
                json!({"metadata": {"name": "app"}}),
                &WriteOptions::default(),
            )
        })
        .unwrap();
    let signer = Arc::new(TokenSigner::generate().unwrap());
    let authn = Authenticator::new("admin".into())
        .with_service_accounts(signer.clone(), Arc::new(storage.clone()));
    Sa {
        uid: sa["metadata"]["uid"].as_str().unwrap().to_string(),
        storage,
        signer,
        authn,
    }
}

fn claims(sa: &Sa, now: i64) -> Claims {
    Claims {
        namespace: "ns1".into(),
        service_account: ObjectClaim {
            name: "app".into(),
            uid: sa.uid.clone(),
        },
        audiences: sa.signer.api_audiences().to_vec(),
        issued_at: now,
        expires_at: now + 3600,
        id: new_token_id(),
        ..Default::default()
    }
}

#[test]
fn service_account_tokens_authenticate_as_upstream_names_them() {
    let sa = with_service_account();
    let now = unix_now();
    let c = claims(&sa, now);
    let token = sa.signer.sign(&c).unwrap();
    let user = sa.authn.authenticate(&bearer(&token), None).unwrap();
    assert_eq!(user.name, "system:serviceaccount:ns1:app");
    assert_eq!(user.uid, sa.uid);
    assert_eq!(
        user.groups,
        [
            "system:serviceaccounts",
            "system:serviceaccounts:ns1",
            AUTHENTICATED
        ]
    );
    assert_eq!(
        user.extra["authentication.kubernetes.io/credential-id"],
        [format!("JTI={}", c.id)]
    );
    let api = sa.signer.api_audiences().to_vec();
    assert_eq!(sa.authn.review_token(&token, &[]).unwrap().1, api);
}

#[test]
fn expired_wrong_audience_forged_and_malformed_tokens_are_refused() {
    let sa = with_service_account();
    let now = unix_now();
    let api = sa.signer.api_audiences().to_vec();
    let token = sa.signer.sign(&claims(&sa, now)).unwrap();
    assert!(sa.authn.token_user(&token, &api, now + 3600).is_ok());
    assert_eq!(
        sa.authn
            .token_user(&token, &api, now + 3600 + 61)
            .unwrap_err(),
        TokenError::Expired
    );
    // Audiences: a token for "vault" is no good for the API server, and vice versa.
    let mut for_vault = claims(&sa, now);
    for_vault.audiences = vec!["vault".into()];
    let vault_token = sa.signer.sign(&for_vault).unwrap();
    assert_eq!(
        sa.authn.token_user(&vault_token, &api, now).unwrap_err(),
        TokenError::WrongAudience
    );
    assert_eq!(
        sa.authn
            .authenticate(&bearer(&vault_token), None)
            .unwrap_err()
            .code,
        401
    );
    let (_, auds) = sa
        .authn
        .review_token(&vault_token, &["vault".into()])
        .unwrap();
    assert_eq!(auds, ["vault"]);
    assert!(sa.authn.review_token(&token, &["vault".into()]).is_none());
    // Another key's token.
    let other = TokenSigner::generate().unwrap();
    let forged = other.sign(&claims(&sa, now)).unwrap();
    assert_eq!(
        sa.authn.token_user(&forged, &api, now).unwrap_err(),
        TokenError::BadSignature
    );
    for bad in [forged.as_str(), "x.y.z", "eyJhbGciOiJFUzI1NiJ9", "🙂"] {
        assert_eq!(
            sa.authn.authenticate(&bearer(bad), None).unwrap_err().code,
            401,
            "{bad}"
        );
    }
    // Without a ServiceAccount authenticator, a JWT is just an unknown token.
    let plain = Authenticator::new("admin".into());
    assert_eq!(
        plain.authenticate(&bearer(&token), None).unwrap_err().code,
        401
    );
}

#[test]
fn tokens_of_a_deleted_or_recreated_service_account_stop_working() {
    let sa = with_service_account();
    let now = unix_now();
    let api = sa.signer.api_audiences().to_vec();
    let token = sa.signer.sign(&claims(&sa, now)).unwrap();
    assert!(sa.authn.token_user(&token, &api, now).is_ok());
    let res = sa.storage.resolve("", "v1", "serviceaccounts").unwrap();
    sa.storage
        .delete(&res, Some("ns1"), "app", &DeleteOptions::default())
        .unwrap();
    assert!(matches!(
        sa.authn.token_user(&token, &api, now),
        Err(TokenError::Revoked(_))
    ));
    // Recreated under the same name: a new uid, so the old token stays dead.
    sa.storage
        .create(
            &res,
            Some("ns1"),
            json!({"metadata": {"name": "app"}}),
            &WriteOptions::default(),
        )
        .unwrap();
    assert!(matches!(
        sa.authn.token_user(&token, &api, now),
        Err(TokenError::Revoked(_))
    ));
    assert_eq!(
        sa.authn
            .authenticate(&bearer(&token), None)
            .unwrap_err()
            .code,
        401
    );
}

#[test]
fn pod_bound_tokens_name_the_pod_and_die_with_it() {
    let sa = with_service_account();
    let now = unix_now();
    let api = sa.signer.api_audiences().to_vec();
    let mut c = claims(&sa, now);
    c.pod = Some(ObjectClaim {
        name: "web".into(),
        uid: "not-there".into(),
    });
    let token = sa.signer.sign(&c).unwrap();
    assert!(matches!(
        sa.authn.token_user(&token, &api, now),
        Err(TokenError::Revoked(_))
    ));
    let pods = sa.storage.resolve("", "v1", "pods").unwrap();
    let pod = sa
        .storage
        .create(
            &pods,
            Some("ns1"),
            json!({"metadata": {"name": "web"}, "spec": {"serviceAccountName": "app",
                   "containers": [{"name": "c", "image": "nginx"}]}}),
            &WriteOptions::default(),
        )
        .unwrap();
    c.pod.as_mut().unwrap().uid = pod["metadata"]["uid"].as_str().unwrap().into();
    let token = sa.signer.sign(&c).unwrap();
    let (user, _) = sa.authn.token_user(&token, &api, now).unwrap();
    assert_eq!(user.extra["authentication.kubernetes.io/pod-name"], ["web"]);
    assert_eq!(
        user.extra["authentication.kubernetes.io/pod-uid"],
        [c.pod.unwrap().uid]
    );
}

#[test]
fn client_certificates_authenticate_before_tokens_and_bad_ones_are_401() {
    let ca = Arc::new(ClientCa::generate().unwrap());
    let authn = Authenticator::new("admin".into()).with_client_ca(ca.clone());
    let chain = |pem: &str| {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        PeerCertificates(certs.into())
    };
    let (good, _) = ca
        .issue(&ClientCertificateParams::new("jane", &["devs"]))
        .unwrap();
    let user = authn
        .authenticate(&headers(None), Some(&chain(&good)))
        .unwrap();
    assert_eq!(
        (user.name.as_str(), user.groups.clone()),
        ("jane", vec!["devs".to_string(), AUTHENTICATED.into()])
    );
    // The certificate wins over a token, as upstream's x509 authenticator comes first.
    let user = authn
        .authenticate(&bearer("admin"), Some(&chain(&good)))
        .unwrap();
    assert_eq!(user.name, "jane");

    let other = ClientCa::generate().unwrap();
    let (foreign, _) = other
        .issue(&ClientCertificateParams::new(
            "mallory",
            &["system:masters"],
        ))
        .unwrap();
    let err = authn
        .authenticate(&headers(None), Some(&chain(&foreign)))
        .unwrap_err();
    assert_eq!((err.code, err.message.as_str()), (401, "Unauthorized"));
    // A bad certificate next to a good token: the token authenticates (upstream's union).
    assert_eq!(
        authn
            .authenticate(&bearer("admin"), Some(&chain(&foreign)))
            .unwrap(),
        UserInfo::admin()
    );
    // An empty CN names no one: the request is anonymous.
    let (no_cn, _) = ca.issue(&ClientCertificateParams::new("", &[])).unwrap();
    assert_eq!(
        authn
            .authenticate(&headers(None), Some(&chain(&no_cn)))
            .unwrap(),
        UserInfo::anonymous()
    );
    // Without a client CA, certificates are not looked at.
    let plain = Authenticator::new("admin".into());
    assert_eq!(
        plain
            .authenticate(&headers(None), Some(&chain(&good)))
            .unwrap(),
        UserInfo::anonymous()
    );
}
