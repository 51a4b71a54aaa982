//! ServiceAccount tokens: the signed JWTs the TokenRequest subresource
//! (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`, `kubectl create token`) issues,
//! and their verification, as kube-apiserver's `pkg/serviceaccount` does both.
//!
//! A token is an ES256 JWS in the compact form (`header.claims.signature`, base64url without
//! padding), signed with a P-256 key generated when the server starts (so tokens never outlive
//! their server), its `kid` the base64url SHA-256 of the public key's PKIX DER, as upstream
//! computes it. Its claims are upstream's:
//!
//! ```json
//! { "iss": "https://kubernetes.default.svc.cluster.local",
//!   "sub": "system:serviceaccount:NS:NAME",
//!   "aud": ["https://kubernetes.default.svc.cluster.local"],
//!   "exp": 1700003600, "iat": 1700000000, "nbf": 1700000000, "jti": "…",
//!   "kubernetes.io": { "namespace": "NS", "serviceaccount": { "name": "NAME", "uid": "…" },
//!                      "pod": { "name": "…", "uid": "…" } } }
//! ```
//!
//! [`TokenSigner::verify`] checks what the token itself proves (form, algorithm, signature,
//! issuer, time window with upstream's one-minute leeway); the authenticator then checks the
//! audience and that the ServiceAccount (and a bound Pod or Secret) still exists with the uid
//! the token names.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use rand::Rng;
use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use crate::error::Error;

/// The issuer (`iss`) of the tokens, and the API audience they are issued for by default: what
/// kubeadm and kind clusters use (`--service-account-issuer`, `--api-audiences`).
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The prefix of a ServiceAccount's user name: `system:serviceaccount:NS:NAME`.
pub const USER_PREFIX: &str = "system:serviceaccount:";

/// The group of every ServiceAccount; each is also in `system:serviceaccounts:NS`.
pub const ALL_GROUP: &str = "system:serviceaccounts";

/// How far `exp` and `nbf` may be off, as upstream's JWT validation allows.
const LEEWAY_SECS: i64 = 60;

/// The DER prefix of a P-256 public key's `SubjectPublicKeyInfo` (the key's 65 bytes follow).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Why a token authenticates no one. Never logged: the reason is for tests and callers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a compact JWS with JSON header and claims.
    #[error("malformed token")]
    Malformed,
    /// Another issuer's token (or not a JWT of ours at all).
    #[error("token issued by another issuer")]
    OtherIssuer,
    /// The signature does not verify with this server's key.
    #[error("invalid signature")]
    BadSignature,
    /// Past `exp`.
    #[error("service account token has expired")]
    Expired,
    /// Before `nbf`.
    #[error("service account token is not valid yet")]
    NotYetValid,
    /// None of the token's audiences is among those asked for.
    #[error("token audiences are invalid for the target audiences")]
    WrongAudience,
    /// The ServiceAccount (or the bound Pod or Secret) is gone or has another uid.
    #[error("{0}")]
    Revoked(String),
}

/// An object a token names: the ServiceAccount, or the Pod or Secret it is bound to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectClaim {
    /// The object's name.
    pub name: String,
    /// The object's uid.
    pub uid: String,
}

/// What a ServiceAccount token says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Claims {
    /// The ServiceAccount's namespace.
    pub namespace: String,
    /// The ServiceAccount.
    pub service_account: ObjectClaim,
    /// The Pod the token is bound to, if any.
    pub pod: Option<ObjectClaim>,
    /// The Secret the token is bound to, if any.
    pub secret: Option<ObjectClaim>,
    /// The audiences (`aud`).
    pub audiences: Vec<String>,
    /// `iat` and `nbf`, seconds since the epoch.
    pub issued_at: i64,
    /// `exp`, seconds since the epoch.
    pub expires_at: i64,
    /// `jti`, a unique id (the user's `authentication.kubernetes.io/credential-id` extra).
    pub id: String,
}

impl Claims {
    /// `system:serviceaccount:NS:NAME`.
    pub fn subject(&self) -> String {
        format!(
            "{USER_PREFIX}{}:{}",
            self.namespace, self.service_account.name
        )
    }

    fn to_json(&self, issuer: &str) -> Value {
        let mut k8s = json!({
            "namespace": self.namespace,
            "serviceaccount": { "name": self.service_account.name, "uid": self.service_account.uid },
        });
        if let Some(pod) = &self.pod {
            k8s["pod"] = json!({ "name": pod.name, "uid": pod.uid });
        }
        if let Some(secret) = &self.secret {
            k8s["secret"] = json!({ "name": secret.name, "uid": secret.uid });
        }
        json!({
            "iss": issuer,
            "sub": self.subject(),
            "aud": self.audiences,
            "exp": self.expires_at,
            "iat": self.issued_at,
            "nbf": self.issued_at,
            "jti": self.id,
            "kubernetes.io": k8s,
        })
    }

    fn from_json(v: &Value) -> Result<Claims, TokenError> {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).map(String::from);
        let object = |p: &str| -> Option<ObjectClaim> {
            let o = v.pointer(p)?;
            Some(ObjectClaim {
                name: o.get("name")?.as_str()?.to_string(),
                uid: o.get("uid")?.as_str()?.to_string(),
            })
        };
        let audiences = match &v["aud"] {
            Value::String(a) => vec![a.clone()],
            Value::Array(a) => a
                .iter()
                .map(|x| x.as_str().map(String::from).ok_or(TokenError::Malformed))
                .collect::<Result<_, _>>()?,
            _ => return Err(TokenError::Malformed),
        };
        let claims = Claims {
            namespace: s("/kubernetes.io/namespace").ok_or(TokenError::Malformed)?,
            service_account: object("/kubernetes.io/serviceaccount")
                .ok_or(TokenError::Malformed)?,
            pod: object("/kubernetes.io/pod"),
            secret: object("/kubernetes.io/secret"),
            audiences,
            issued_at: v["nbf"].as_i64().ok_or(TokenError::Malformed)?,
            expires_at: v["exp"].as_i64().ok_or(TokenError::Malformed)?,
            id: s("/jti").unwrap_or_default(),
        };
        // The subject must be the ServiceAccount the private claims name.
        if s("/sub").as_deref() != Some(claims.subject().as_str()) {
            return Err(TokenError::Malformed);
        }
        Ok(claims)
    }
}

/// A fresh random token id (`jti`), UUID-shaped.
pub fn new_token_id() -> String {
    let b: [u8; 16] = rand::rng().random();
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Signs and verifies the server's ServiceAccount tokens with one ES256 key.
pub struct TokenSigner {
    key: EcdsaKeyPair,
    /// The key, PKCS#8 (kept with a server's data).
    pkcs8: Vec<u8>,
    rng: SystemRandom,
    key_id: String,
    issuer: String,
    audiences: Vec<String>,
}

impl std::fmt::Debug for TokenSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key.
        f.debug_struct("TokenSigner")
            .field("key_id", &self.key_id)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl TokenSigner {
    /// A signer with a new P-256 key, issuing as [`ISSUER`] for the API audience [`ISSUER`].
    ///
    /// ```
    /// use crt_apiserver::auth::serviceaccount::{Claims, ObjectClaim, TokenSigner};
    /// let signer = TokenSigner::generate().unwrap();
    /// let claims = Claims {
    ///     namespace: "default".into(),
    ///     service_account: ObjectClaim { name: "app".into(), uid: "u1".into() },
    ///     audiences: signer.api_audiences().to_vec(),
    ///     issued_at: 1_000,
    ///     expires_at: 4_600,
    ///     ..Default::default()
    /// };
    /// let token = signer.sign(&claims).unwrap();
    /// assert_eq!(signer.verify(&token, 2_000).unwrap(), claims);
    /// assert!(signer.verify(&token, 9_000).is_err()); // expired
    /// ```
    pub fn generate() -> Result<TokenSigner, Error> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let err = |_| Error::Certificate("cannot generate the service account signing key".into());
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(alg, &rng).map_err(err)?;
        TokenSigner::from_pkcs8(pkcs8.as_ref())
    }

    /// A signer with a kept key (PKCS#8, as [`TokenSigner::pkcs8`] answered): the tokens it
    /// signed before still verify.
    pub(crate) fn from_pkcs8(pkcs8: &[u8]) -> Result<TokenSigner, Error> {
        let rng = SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let key = EcdsaKeyPair::from_pkcs8(alg, pkcs8, &rng)
            .map_err(|_| Error::Certificate("the service account key is rejected".into()))?;
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let key_id = B64.encode(ring::digest::digest(&ring::digest::SHA256, &spki));
        Ok(TokenSigner {
            key,
            pkcs8: pkcs8.to_vec(),
            rng,
            key_id,
            issuer: ISSUER.into(),
            audiences: vec![ISSUER.into()],
        })
    }

    /// The signing key, PKCS#8.
    pub(crate) fn pkcs8(&self) -> &[u8] {
        &self.pkcs8
    }

    /// The audiences the API server itself accepts, and gives a token when none is asked for.
    pub fn api_audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The issuer (`iss`).
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The signed token for `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, Error> {
        let header = json!({ "alg": "ES256", "kid": self.key_id });
        let signing_input = format!(
            "{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_json(&self.issuer).to_string())
        );
        let sig = self
            .key
            .sign(&self.rng, signing_input.as_bytes())
            .map_err(|_| Error::Certificate("cannot sign a service account token".into()))?;
        Ok(format!("{signing_input}.{}", B64.encode(sig.as_ref())))
    }

    /// The claims of `token` if it is one of this signer's and valid at `now` (seconds since
    /// the epoch); audiences and the objects it names are the caller's to check.
    pub fn verify(&self, token: &str, now: i64) -> Result<Claims, TokenError> {
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        let decode = |p: &str| B64.decode(p).map_err(|_| TokenError::Malformed);
        let json =
            |b: Vec<u8>| serde_json::from_slice::<Value>(&b).map_err(|_| TokenError::Malformed);
        let header = json(decode(h)?)?;
        let claims = json(decode(c)?)?;
        if claims.get("iss").and_then(Value::as_str) != Some(self.issuer.as_str()) {
            return Err(TokenError::OtherIssuer);
        }
        if header.get("alg").and_then(Value::as_str) != Some("ES256") {
            return Err(TokenError::BadSignature);
        }
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_FIXED,
            self.key.public_key().as_ref(),
        );
        public
            .verify(format!("{h}.{c}").as_bytes(), &decode(s)?)
            .map_err(|_| TokenError::BadSignature)?;
        let claims = Claims::from_json(&claims)?;
        if now > claims.expires_at + LEEWAY_SECS {
            return Err(TokenError::Expired);
        }
        if now + LEEWAY_SECS < claims.issued_at {
            return Err(TokenError::NotYetValid);
        }
        Ok(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims(signer: &TokenSigner) -> Claims {
        Claims {
            namespace: "ns".into(),
            service_account: ObjectClaim {
                name: "sa".into(),
                uid: "uid-1".into(),
            },
            pod: Some(ObjectClaim {
                name: "p".into(),
                uid: "pod-uid".into(),
            }),
            secret: None,
            audiences: signer.api_audiences().to_vec(),
            issued_at: 10_000,
            expires_at: 13_600,
            id: new_token_id(),
        }
    }

    fn part(token: &str, i: usize) -> Value {
        let p = token.split('.').nth(i).unwrap();
        serde_json::from_slice(&B64.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn tokens_carry_upstreams_claims_and_verify() {
        let signer = TokenSigner::generate().unwrap();
        let c = claims(&signer);
        let token = signer.sign(&c).unwrap();
        let header = part(&token, 0);
        assert_eq!(header["alg"], "ES256");
        assert_eq!(header["kid"].as_str().unwrap().len(), 43);
        let body = part(&token, 1);
        assert_eq!(body["iss"], ISSUER);
        assert_eq!(body["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(body["aud"], json!([ISSUER]));
        assert_eq!(
            (body["iat"].as_i64(), body["nbf"].as_i64()),
            (Some(10_000), Some(10_000))
        );
        assert_eq!(body["exp"], 13_600);
        assert_eq!(
            body["kubernetes.io"],
            json!({"namespace": "ns", "serviceaccount": {"name": "sa", "uid": "uid-1"},
                   "pod": {"name": "p", "uid": "pod-uid"}})
        );
        assert_eq!(signer.verify(&token, 10_001).unwrap(), c);
    }

    #[test]
    fn time_window_has_a_minutes_leeway() {
        let signer = TokenSigner::generate().unwrap();
        let token = signer.sign(&claims(&signer)).unwrap();
        assert!(signer.verify(&token, 13_660).is_ok());
        assert_eq!(signer.verify(&token, 13_661), Err(TokenError::Expired));
        assert!(signer.verify(&token, 9_940).is_ok());
        assert_eq!(signer.verify(&token, 9_939), Err(TokenError::NotYetValid));
    }

    #[test]
    fn malformed_tampered_and_foreign_tokens_are_refused() {
        let signer = TokenSigner::generate().unwrap();
        let token = signer.sign(&claims(&signer)).unwrap();
        for bad in ["", "a.b", "a.b.c.d", "!!.!!.!!", "e30.e30.e30", "not a jwt"] {
            assert!(signer.verify(bad, 10_001).is_err(), "{bad:?}");
        }
        assert_eq!(signer.verify("a.b", 10_001), Err(TokenError::Malformed));
        // Another key's token: the signature fails.
        let other = TokenSigner::generate().unwrap();
        let forged = other.sign(&claims(&other)).unwrap();
        assert_eq!(
            signer.verify(&forged, 10_001),
            Err(TokenError::BadSignature)
        );
        // Claims changed after signing (another ServiceAccount): the signature fails.
        let mut changed = claims(&signer);
        changed.service_account.name = "admin".into();
        let (h, _, s) = {
            let p: Vec<&str> = token.split('.').collect();
            (p[0].to_string(), (), p[2].to_string())
        };
        let swapped = format!(
            "{h}.{}.{s}",
            B64.encode(changed.to_json(ISSUER).to_string())
        );
        assert_eq!(
            signer.verify(&swapped, 10_001),
            Err(TokenError::BadSignature)
        );
        // `alg: none` is never accepted.
        let none = format!(
            "{}.{}.",
            B64.encode(r#"{"alg":"none"}"#),
            B64.encode(claims(&signer).to_json(ISSUER).to_string())
        );
        assert_eq!(signer.verify(&none, 10_001), Err(TokenError::BadSignature));
        // Another issuer.
        let foreign = format!(
            "{}.{}.{s}",
            B64.encode(r#"{"alg":"ES256"}"#),
            B64.encode(claims(&signer).to_json("https://elsewhere").to_string())
        );
        assert_eq!(
            signer.verify(&foreign, 10_001),
            Err(TokenError::OtherIssuer)
        );
    }

    #[test]
    fn token_ids_are_unique_and_uuid_shaped() {
        let (a, b) = (new_token_id(), new_token_id());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.matches('-').count(), 4);
    }
}
