//! Validating one bearer JWT into a [`Principal`].

use std::collections::BTreeSet;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::jwks::VerifyKey;
use super::uri::canonical;
use super::{AuthConfig, Authenticator};
use crate::access::Principal;

/// Signature algorithms accepted. Only asymmetric ones: `none` cannot even
/// be parsed, and HS* is refused so a public key can never be abused as an
/// HMAC secret (algorithm confusion).
pub const ALLOWED_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Why a presented token was refused. The `Display` text is short and
/// safe to send back in `error_description`; it never includes the token.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a well-formed JWS compact JWT, or claims of the wrong type.
    #[error("The access token is malformed.")]
    Malformed,
    /// `alg` is missing, `none`, symmetric, or not allowed for the key.
    #[error("The access token's signing algorithm is not accepted.")]
    AlgorithmNotAllowed,
    /// No key of the authorization server has this `kid` (after a refresh).
    #[error("The access token was signed with an unknown key.")]
    UnknownKey,
    /// The signature does not verify.
    #[error("The access token's signature is invalid.")]
    BadSignature,
    /// `exp` is in the past (beyond the leeway).
    #[error("The access token has expired.")]
    Expired,
    /// `nbf` is in the future (beyond the leeway).
    #[error("The access token is not valid yet.")]
    NotYetValid,
    /// `iss` is not the configured issuer.
    #[error("The access token was issued by an untrusted issuer.")]
    WrongIssuer,
    /// `aud` does not name this server.
    #[error("The access token was not issued for this server.")]
    WrongAudience,
    /// A required claim (`exp`, `iss`, `aud`, `sub`) is absent.
    #[error("The access token lacks the required claim `{0}`.")]
    MissingClaim(&'static str),
    /// The issuer's keys could not be fetched, so no token can be checked
    /// (answered with 503, not 401: re-authorizing would not help).
    #[error("The authorization server's signing keys are unavailable; try again shortly.")]
    KeysUnavailable,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => s.split_whitespace().map(str::to_owned).collect(),
            Self::Many(v) => v,
        }
    }
}

/// The claims this server reads; the rest stays in `other` for the
/// configured `self_id_claim`.
#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    aud: Option<OneOrMany>,
    scope: Option<String>,
    scp: Option<OneOrMany>,
    client_id: Option<String>,
    azp: Option<String>,
    #[serde(flatten)]
    other: Map<String, Value>,
}

impl Authenticator {
    /// Validates a bearer token (the part after `Bearer `) and returns the
    /// caller it names: signature against the issuer's JWKS, allowed
    /// algorithm, `iss`, `aud`, `exp` (required) and `nbf` with leeway.
    pub async fn validate(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            ErrorKind::InvalidAlgorithmName | ErrorKind::MissingAlgorithm => {
                TokenError::AlgorithmNotAllowed
            }
            // `alg: none` (or any name the library does not know) fails to
            // parse; say why rather than "malformed".
            _ if raw_alg(token).is_some() => TokenError::AlgorithmNotAllowed,
            _ => TokenError::Malformed,
        })?;
        if !ALLOWED_ALGORITHMS.contains(&header.alg) {
            return Err(TokenError::AlgorithmNotAllowed);
        }
        let kid = header.kid.as_deref();
        let keys = self
            .keys
            .keys(kid)
            .await
            .map_err(|_| TokenError::KeysUnavailable)?;
        let candidates: Vec<&VerifyKey> = keys
            .iter()
            .filter(|k| match kid {
                Some(kid) => k.kid.as_deref() == Some(kid),
                // Without a kid, any key that fits the algorithm may have
                // signed (common with single-key issuers).
                None => true,
            })
            .filter(|k| k.family == header.alg.family() && k.alg.is_none_or(|a| a == header.alg))
            .collect();
        if candidates.is_empty() {
            return Err(
                if kid.is_some() && !keys.iter().any(|k| k.kid.as_deref() == kid) {
                    TokenError::UnknownKey
                } else {
                    TokenError::AlgorithmNotAllowed
                },
            );
        }
        let validation = self.validation(header.alg);
        let mut last = TokenError::BadSignature;
        for key in candidates {
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => return self.principal(data.claims),
                Err(e) => {
                    last = map_error(e.kind());
                    if last != TokenError::BadSignature {
                        break;
                    }
                }
            }
        }
        Err(last)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut v = Validation::new(alg);
        v.leeway = self.config.leeway.as_secs();
        v.validate_exp = true;
        v.validate_nbf = true;
        v.set_issuer(&[&self.config.issuer]);
        // The audience is compared below, after canonicalizing both sides.
        v.validate_aud = false;
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        v
    }

    fn principal(&self, claims: Claims) -> Result<Principal, TokenError> {
        let audiences = claims
            .aud
            .map(OneOrMany::into_vec)
            .ok_or(TokenError::MissingClaim("aud"))?;
        // Audience values are URIs: compare canonical forms so an upper-case
        // host or a trailing slash still matches (MCP canonical URI rules).
        let ours = &self.uris.resource;
        let matches = |a: &String| a == ours || canonical(a).as_ref() == Some(ours);
        if !audiences.iter().any(matches) {
            return Err(TokenError::WrongAudience);
        }
        let subject = claims
            .sub
            .filter(|s| !s.is_empty())
            .ok_or(TokenError::MissingClaim("sub"))?;
        let mut granted: BTreeSet<String> = claims
            .scope
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        if let Some(scp) = claims.scp {
            granted.extend(scp.into_vec());
        }
        let mut scopes = (self.config.scope_expansion)(&granted);
        // Expansion only adds: what the token grants stays granted.
        scopes.extend(granted);
        let self_id = self_id(&self.config, &claims.other);
        Ok(Principal {
            subject,
            scopes,
            client_id: claims.client_id.or(claims.azp),
            self_id,
        })
    }
}

/// The `alg` of a JOSE header the library refused to parse.
fn raw_alg(token: &str) -> Option<String> {
    use base64::Engine;
    let first = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(first.trim_end_matches('='))
        .ok()?;
    let header: Value = serde_json::from_slice(&bytes).ok()?;
    header.get("alg")?.as_str().map(str::to_owned)
}

fn self_id(config: &AuthConfig, other: &Map<String, Value>) -> Option<String> {
    let name = config.self_id_claim.as_deref()?;
    match other.get(name)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn map_error(kind: &ErrorKind) -> TokenError {
    match kind {
        ErrorKind::InvalidSignature => TokenError::BadSignature,
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::ImmatureSignature => TokenError::NotYetValid,
        ErrorKind::InvalidIssuer => TokenError::WrongIssuer,
        ErrorKind::InvalidAudience => TokenError::WrongAudience,
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            TokenError::AlgorithmNotAllowed
        }
        ErrorKind::MissingRequiredClaim(c) => TokenError::MissingClaim(match c.as_str() {
            "exp" => "exp",
            "iss" => "iss",
            "aud" => "aud",
            "sub" => "sub",
            _ => "nbf",
        }),
        // A key that does not parse for this algorithm cannot have signed.
        ErrorKind::InvalidEcdsaKey
        | ErrorKind::InvalidEddsaKey
        | ErrorKind::InvalidRsaKey(_)
        | ErrorKind::InvalidKeyFormat => TokenError::BadSignature,
        _ => TokenError::Malformed,
    }
}
