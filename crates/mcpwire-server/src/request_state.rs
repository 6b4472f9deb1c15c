//! Integrity-protected `requestState` for multi round-trip requests.
//!
//! The state a handler hands out comes back from the client, so it is
//! attacker-controlled. It is signed with HMAC-SHA256 under a key only this
//! server (or its replicas, sharing the key) knows, and bound to the method,
//! the tool or prompt name, a digest of the arguments, the principal and an
//! expiry. Anything that fails verification is a JSON-RPC error.
//!
//! A state is not single use: within its lifetime the same principal may
//! present it again with the same request (the spec's binding measures
//! bound replay, they do not forbid it). That suits states that only carry
//! what the handler needs to continue and grant nothing a fresh request
//! would not; a handler whose state must be redeemed at most once (a
//! one-time action) must enforce that itself, server-side.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use mcpwire_protocol::ProtocolError;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// What a state is bound to.
pub(crate) struct Binding<'a> {
    /// `tools/call` or `prompts/get`.
    pub method: &'a str,
    /// The tool or prompt name.
    pub name: &'a str,
    /// The arguments of the original request.
    pub arguments: &'a Map<String, Value>,
    /// The authenticated principal, if any.
    pub principal: Option<&'a str>,
}

/// Signs and verifies request states.
pub(crate) struct StateSigner {
    key: [u8; 32],
    ttl: Duration,
}

impl StateSigner {
    /// A signer with a given key (share it between replicas) and lifetime.
    pub(crate) fn new(key: [u8; 32], ttl: Duration) -> Self {
        Self { key, ttl }
    }

    /// A signer with a key from the OS random source; an error if there
    /// is none (a guessable key would let clients forge states).
    pub(crate) fn random(ttl: Duration) -> Result<Self, getrandom::Error> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key)?;
        Ok(Self::new(key, ttl))
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail.
        match <HmacSha256 as KeyInit>::new_from_slice(&self.key) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes keys of any length"),
        }
    }

    /// Wraps a handler's state into a signed token.
    pub(crate) fn sign(&self, binding: &Binding<'_>, payload: &Value) -> String {
        let expires = now_secs() + self.ttl.as_secs();
        let body = json!({
            "m": binding.method,
            "n": binding.name,
            "a": digest(binding.arguments),
            "p": binding.principal,
            "e": expires,
            "s": payload,
        })
        .to_string();
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(body),
            URL_SAFE_NO_PAD.encode(tag)
        )
    }

    /// Checks a token and returns the handler's state.
    pub(crate) fn verify(
        &self,
        token: &str,
        binding: &Binding<'_>,
    ) -> Result<Value, ProtocolError> {
        let invalid = |why: &str| {
            ProtocolError::invalid_params(format!(
                "Invalid params: requestState {why}; retry the original request without requestState."
            ))
        };
        let (body_b64, tag_b64) = token
            .split_once('.')
            .ok_or_else(|| invalid("is malformed"))?;
        let body = URL_SAFE_NO_PAD
            .decode(body_b64)
            .map_err(|_| invalid("is malformed"))?;
        let tag = URL_SAFE_NO_PAD
            .decode(tag_b64)
            .map_err(|_| invalid("is malformed"))?;
        let mut mac = self.mac();
        mac.update(&body);
        mac.verify_slice(&tag)
            .map_err(|_| invalid("failed integrity verification"))?;
        let body: Value = serde_json::from_slice(&body).map_err(|_| invalid("is malformed"))?;
        let matches = body["m"] == binding.method
            && body["n"] == binding.name
            && body["a"] == digest(binding.arguments)
            && body["p"].as_str() == binding.principal;
        if !matches {
            return Err(invalid("belongs to a different request"));
        }
        if body["e"].as_u64().is_none_or(|e| e < now_secs()) {
            return Err(invalid("has expired"));
        }
        Ok(body["s"].clone())
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// A digest of the arguments that ignores key order.
pub(crate) fn digest(arguments: &Map<String, Value>) -> String {
    let mut hasher = Sha256::new();
    canonical(&Value::Object(arguments.clone()), &mut hasher);
    URL_SAFE_NO_PAD.encode(hasher.finalize())
}

fn canonical(v: &Value, h: &mut Sha256) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            h.update(b"{");
            for k in keys {
                h.update(Value::from(k.as_str()).to_string().as_bytes());
                h.update(b":");
                canonical(&m[k], h);
                h.update(b",");
            }
            h.update(b"}");
        }
        Value::Array(items) => {
            h.update(b"[");
            for i in items {
                canonical(i, h);
                h.update(b",");
            }
            h.update(b"]");
        }
        other => h.update(other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(args: &'a Map<String, Value>) -> Binding<'a> {
        Binding {
            method: "tools/call",
            name: "t",
            arguments: args,
            principal: None,
        }
    }

    #[test]
    fn round_trips_and_detects_tampering() {
        let s = StateSigner::random(Duration::from_secs(60)).expect("OS randomness");
        let args = Map::new();
        let token = s.sign(&binding(&args), &json!({"step": 1}));
        assert_eq!(
            s.verify(&token, &binding(&args)).ok(),
            Some(json!({"step": 1}))
        );
        assert!(
            s.verify(&format!("{token}-TAMPERED"), &binding(&args))
                .is_err()
        );
        let mut other = Map::new();
        other.insert("x".into(), json!(1));
        assert!(s.verify(&token, &binding(&other)).is_err());
        let foreign = StateSigner::random(Duration::from_secs(60)).expect("OS randomness");
        assert!(foreign.verify(&token, &binding(&args)).is_err());
    }

    #[test]
    fn states_are_bound_to_their_principal() {
        let s = StateSigner::random(Duration::from_secs(60)).expect("OS randomness");
        let args = Map::new();
        let alice = Binding {
            principal: Some("alice"),
            ..binding(&args)
        };
        let bob = Binding {
            principal: Some("bob"),
            ..binding(&args)
        };
        let token = s.sign(&alice, &json!(1));
        assert!(s.verify(&token, &alice).is_ok());
        assert!(s.verify(&token, &bob).is_err());
        assert!(s.verify(&token, &binding(&args)).is_err());
    }

    #[test]
    fn expired_states_are_refused() {
        let s = StateSigner::random(Duration::from_secs(0)).expect("OS randomness");
        let args = Map::new();
        let token = s.sign(&binding(&args), &json!(null));
        std::thread::sleep(Duration::from_millis(1100));
        assert!(s.verify(&token, &binding(&args)).is_err());
    }
}
