//! The authorization server's signing keys: discovered, fetched, cached,
//! refreshed on expiry and on an unknown `kid`, with a floor on how often
//! a refresh may hit the network.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use reqwest::Url;
use serde_json::Value;

use super::uri::{discovery_urls, fetchable};

/// Largest metadata or JWKS document accepted; real ones are a few KiB.
const MAX_DOCUMENT_BYTES: usize = 512 * 1024;

/// One usable verification key.
pub(crate) struct VerifyKey {
    pub(crate) kid: Option<String>,
    /// The `alg` the JWK pins, if any.
    pub(crate) alg: Option<Algorithm>,
    pub(crate) family: AlgorithmFamily,
    pub(crate) key: DecodingKey,
}

#[derive(Default)]
struct Snapshot {
    keys: Arc<Vec<VerifyKey>>,
    fetched_at: Option<Instant>,
    generation: u64,
}

#[derive(Default)]
struct RefreshState {
    last_attempt: Option<Instant>,
    jwks_url: Option<String>,
}

/// Why no key set could be had.
#[derive(Debug)]
pub(crate) struct Unavailable;

pub(crate) struct KeyStore {
    client: reqwest::Client,
    issuer: String,
    configured_url: Option<String>,
    ttl: Duration,
    min_refresh_interval: Duration,
    cache: RwLock<Snapshot>,
    // Held across the fetch: one refresh at a time (single flight).
    refresh: tokio::sync::Mutex<RefreshState>,
}

impl KeyStore {
    pub(crate) fn new(
        client: reqwest::Client,
        issuer: String,
        configured_url: Option<String>,
        ttl: Duration,
        min_refresh_interval: Duration,
    ) -> Self {
        Self {
            client,
            issuer,
            configured_url,
            ttl,
            min_refresh_interval,
            cache: RwLock::new(Snapshot::default()),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
        }
    }

    fn snapshot(&self) -> (Arc<Vec<VerifyKey>>, Option<Instant>, u64) {
        // A poisoned lock only means a panic elsewhere mid-write; the data
        // is a plain replace, so it is still consistent.
        let s = self.cache.read().unwrap_or_else(|e| e.into_inner());
        (s.keys.clone(), s.fetched_at, s.generation)
    }

    /// The current keys, refreshed first when they are stale or do not
    /// contain `kid`. Refreshes are rate-limited, so a flood of tokens with
    /// made-up `kid`s costs at most one fetch per interval.
    pub(crate) async fn keys(&self, kid: Option<&str>) -> Result<Arc<Vec<VerifyKey>>, Unavailable> {
        let (keys, fetched_at, generation) = self.snapshot();
        let fresh = fetched_at.is_some_and(|t| t.elapsed() < self.ttl);
        let known = match kid {
            Some(k) => keys.iter().any(|x| x.kid.as_deref() == Some(k)),
            None => !keys.is_empty(),
        };
        if fresh && known {
            return Ok(keys);
        }
        self.refresh(generation).await;
        let (keys, fetched_at, _) = self.snapshot();
        if fetched_at.is_none() {
            return Err(Unavailable);
        }
        Ok(keys)
    }

    async fn refresh(&self, seen_generation: u64) {
        let mut state = self.refresh.lock().await;
        if self.snapshot().2 != seen_generation {
            // Another request refreshed while this one waited.
            return;
        }
        if state
            .last_attempt
            .is_some_and(|t| t.elapsed() < self.min_refresh_interval)
        {
            tracing::debug!("JWKS refresh skipped: rate-limited");
            return;
        }
        state.last_attempt = Some(Instant::now());
        match self.fetch(&mut state).await {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "fetched the authorization server's JWKS");
                let mut s = self.cache.write().unwrap_or_else(|e| e.into_inner());
                s.keys = Arc::new(keys);
                s.fetched_at = Some(Instant::now());
                s.generation += 1;
            }
            Err(why) => {
                tracing::warn!(reason = %why, "could not fetch the JWKS; keeping cached keys");
            }
        }
    }

    async fn fetch(&self, state: &mut RefreshState) -> Result<Vec<VerifyKey>, String> {
        let url = match (&self.configured_url, &state.jwks_url) {
            (Some(u), _) | (None, Some(u)) => u.clone(),
            (None, None) => {
                let u = self.discover().await?;
                state.jwks_url = Some(u.clone());
                u
            }
        };
        let doc = self.get_json(&url).await?;
        let keys = parse_jwks(&doc);
        if keys.is_empty() {
            return Err(format!("the JWKS at {url} has no usable signing key"));
        }
        Ok(keys)
    }

    /// Finds `jwks_uri` in the issuer's metadata (RFC 8414, then OpenID
    /// Connect Discovery).
    async fn discover(&self) -> Result<String, String> {
        let mut last = format!("the issuer {} is not a valid URL", self.issuer);
        for candidate in discovery_urls(&self.issuer) {
            let doc = match self.get_json(&candidate).await {
                Ok(d) => d,
                Err(e) => {
                    last = e;
                    continue;
                }
            };
            // RFC 8414 §3.3: the metadata must name the issuer we trust,
            // or a look-alike document could substitute its own keys.
            if doc.get("issuer").and_then(Value::as_str) != Some(self.issuer.as_str()) {
                last = format!("the metadata at {candidate} names another issuer");
                continue;
            }
            match doc.get("jwks_uri").and_then(Value::as_str) {
                Some(u) => return Ok(u.to_owned()),
                None => last = format!("the metadata at {candidate} has no jwks_uri"),
            }
        }
        Err(last)
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let parsed = Url::parse(url).map_err(|_| format!("{url} is not a valid URL"))?;
        if !fetchable(&parsed) {
            return Err(format!("{url} is neither HTTPS nor loopback HTTP"));
        }
        let mut response = self
            .client
            .get(parsed)
            .header(http::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("GET {url}: HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| format!("GET {url}: {e}"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("GET {url}: document too large"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON: {e}"))
    }
}

/// The signing keys of a JWKS document. Keys that are symmetric (`oct`),
/// meant for encryption, of an unknown type or malformed are skipped, so
/// one odd entry does not take the whole set down.
fn parse_jwks(doc: &Value) -> Vec<VerifyKey> {
    let Some(entries) = doc.get("keys").and_then(Value::as_array) else {
        return Vec::new();
    };
    entries.iter().filter_map(parse_key).collect()
}

fn parse_key(entry: &Value) -> Option<VerifyKey> {
    let kty = entry.get("kty").and_then(Value::as_str)?;
    let family = match kty {
        "RSA" => AlgorithmFamily::Rsa,
        "EC" => AlgorithmFamily::Ec,
        // Only the Ed25519 curve signs; X25519 is for key agreement.
        "OKP" if entry.get("crv").and_then(Value::as_str) == Some("Ed25519") => AlgorithmFamily::Ed,
        // `oct` (a shared secret) must never verify tokens here.
        _ => return None,
    };
    if entry
        .get("use")
        .and_then(Value::as_str)
        .is_some_and(|u| u != "sig")
    {
        return None;
    }
    let alg = match entry.get("alg").and_then(Value::as_str) {
        Some(a) => {
            let alg: Algorithm = a.parse().ok()?;
            if !family.algorithms().contains(&alg) {
                return None;
            }
            Some(alg)
        }
        None => None,
    };
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    Some(VerifyKey {
        kid: jwk.common.key_id,
        alg,
        family,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn skips_symmetric_and_encryption_keys() {
        let doc = json!({ "keys": [
            { "kty": "oct", "k": "c2VjcmV0", "kid": "hmac" },
            { "kty": "OKP", "crv": "X25519", "x": "AAAA", "kid": "x" },
            { "kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB", "kid": "enc" },
            { "kty": "OKP", "crv": "Ed25519", "kid": "ed",
              "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo" },
            { "kty": "weird" }
        ]});
        let keys = parse_jwks(&doc);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("ed"));
    }
}
