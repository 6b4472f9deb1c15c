//! OAuth 2.1 resource server on the HTTP transport, over real loopback
//! HTTP: challenges, token validation failures, scopes and step-up,
//! Protected Resource Metadata, and JWKS rotation and refresh limits.

use crate::common;

use std::time::Duration;

use common::oauth::*;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use mcpwire_server::transport::http::auth::UNAUTHORIZED;
use serde_json::{Value, json};

/// A 401 with a JSON-RPC error body and a challenge naming the metadata.
fn assert_unauthorized(r: &Reply, mcp: &Mcp, invalid_token: bool) {
    assert_eq!(r.status, 401, "body: {}", r.raw);
    assert_eq!(r.body["error"]["code"], UNAUTHORIZED, "body: {}", r.raw);
    assert!(r.body["error"]["message"].is_string(), "{}", r.raw);
    assert!(r.body.get("id").is_none_or(Value::is_null), "{}", r.raw);
    let c = r.challenge();
    assert!(c.starts_with("Bearer "), "challenge: {c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", mcp.metadata_url)),
        "challenge: {c}"
    );
    assert!(c.contains("scope=\"hr.read\""), "challenge: {c}");
    assert_eq!(c.contains("error=\"invalid_token\""), invalid_token, "{c}");
    assert!(!c.contains("eyJ"), "the token must not be echoed: {c}");
}

#[tokio::test(flavor = "multi_thread")]
async fn no_token_is_401_with_challenge_on_every_method() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;

    let r = mcp.tool(None, "whoami").await;
    assert_unauthorized(&r, &mcp, false);
    assert!(
        r.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Authorization: Bearer")),
        "{}",
        r.raw
    );

    // GET and DELETE are behind the same gate (no session id bypass).
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let r = send(
            mcp.client
                .request(method.clone(), &mcp.url)
                .header("accept", "text/event-stream")
                .header("mcp-session-id", "made-up"),
        )
        .await;
        assert_eq!(r.status, 401, "{method}: {}", r.raw);
        assert!(r.challenge().contains("resource_metadata="), "{method}");
    }

    // Another scheme is not a bearer token.
    let r = send(
        mcp.client
            .post(&mcp.url)
            .header("authorization", "Basic dXNlcjpwYXNz")
            .body("{}"),
    )
    .await;
    assert_eq!(r.status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn valid_token_reaches_the_tool_with_its_principal() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    let token = key.sign(&mcp.claims(&idp, "hr.read profile"));

    let r = mcp.tool(Some(&token), "salary").await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(r.body["result"]["content"][0]["text"], "42", "{}", r.raw);

    let r = mcp.tool(Some(&token), "whoami").await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let text = r.body["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    let who: Value = serde_json::from_str(text).expect("json");
    assert_eq!(who["subject"], "user-1");
    assert_eq!(who["clientId"], "client-9");
    assert_eq!(who["selfId"], "E042");
    assert_eq!(who["scopes"], json!(["hr.read", "profile"]));

    // `scp` as an array works too, and `aud` may be an array.
    let mut claims = mcp.claims(&idp, "");
    claims.as_object_mut().expect("object").remove("scope");
    claims["scp"] = json!(["hr.read"]);
    claims["aud"] = json!(["https://other.example.com", mcp.audience]);
    let r = mcp.tool(Some(&key.sign(&claims)), "salary").await;
    assert_eq!(r.status, 200, "{}", r.raw);

    // An upper-case host and a trailing slash name the same resource.
    let mut claims = mcp.claims(&idp, "hr.read");
    claims["aud"] = json!(format!("{}/", mcp.audience.replace("http://", "HTTP://")));
    let r = mcp.tool(Some(&key.sign(&claims)), "salary").await;
    assert_eq!(r.status, 200, "{}", r.raw);

    // Each request is checked on its own: no token, no access, even right
    // after a successful call on a kept-alive connection.
    let r = mcp.tool(None, "salary").await;
    assert_eq!(r.status, 401);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_library_client_sends_its_bearer_token() {
    use mcpwire_server::client::Client;
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    let token = key.sign(&mcp.claims(&idp, "hr.read"));
    let client = Client::http(&mcp.url).bearer(&token).connect().await;
    let client = client.expect("client");
    let who = client.call_tool("whoami", json!({})).await.expect("whoami");
    let who: Value = serde_json::from_str(&who.text()).expect("json");
    assert_eq!(who["subject"], "user-1");
    let salary = client.call_tool("salary", json!({})).await.expect("salary");
    assert_eq!(salary.text(), "42");
    // Without the token the transport's 401 comes back as its error.
    let anonymous = Client::http(&mcp.url).connect().await.expect("client");
    let e = anonymous.call_tool("whoami", json!({})).await.unwrap_err();
    assert_eq!(e.code(), Some(UNAUTHORIZED), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_tokens_are_401_invalid_token() {
    let key = TestKey::generate("k1");
    let stranger = TestKey::generate("k1"); // same kid, other key
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    let good = mcp.claims(&idp, "hr.read");

    let with = |field: &str, value: Value| {
        let mut c = good.clone();
        c[field] = value;
        c
    };
    let without = |field: &str| {
        let mut c = good.clone();
        c.as_object_mut().expect("object").remove(field);
        c
    };

    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            key.sign(&with("exp", json!(now() - 3600))),
            "expired",
        ),
        (
            "not yet valid",
            key.sign(&with("nbf", json!(now() + 3600))),
            "not valid yet",
        ),
        ("no exp", key.sign(&without("exp")), "exp"),
        (
            "wrong audience",
            key.sign(&with("aud", json!("https://other.example.com/mcp"))),
            "not issued for this server",
        ),
        (
            "audience of a sibling path",
            key.sign(&with("aud", json!(format!("{}/other", mcp.audience)))),
            "not issued for this server",
        ),
        ("no audience", key.sign(&without("aud")), "aud"),
        (
            "wrong issuer",
            key.sign(&with("iss", json!("https://evil.example.com"))),
            "untrusted issuer",
        ),
        (
            "bad signature",
            stranger.sign(&good),
            "signature is invalid",
        ),
        ("garbage", "not.a.jwt".to_owned(), "malformed"),
        (
            "alg none",
            unsigned(
                &json!({ "alg": "none", "typ": "JWT", "kid": "k1" }),
                &good,
                "",
            ),
            "algorithm",
        ),
        (
            "HS256 keyed with the public key",
            hs256_confusion(&key, &good),
            "algorithm",
        ),
    ];
    for (name, token, reason) in cases {
        let r = mcp.tool(Some(&token), "whoami").await;
        assert_unauthorized(&r, &mcp, true);
        let c = r.challenge();
        assert!(c.contains("error_description=\""), "{name}: {c}");
        assert!(
            c.contains(reason) && r.raw.contains(reason),
            "{name}: expected {reason:?} in {c} / {}",
            r.raw
        );
    }
}

/// The classic algorithm-confusion attack: HS256 with the public JWK as the
/// HMAC secret.
fn hs256_confusion(key: &TestKey, claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(key.kid.clone());
    let secret = key.jwk["x"].as_str().expect("x").as_bytes().to_vec();
    let secret = EncodingKey::from_secret(&secret).expect("secret");
    jsonwebtoken::encode(&header, claims, &secret).expect("sign hs256")
}

#[tokio::test(flavor = "multi_thread")]
async fn query_string_tokens_are_refused() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    let token = key.sign(&mcp.claims(&idp, "hr.read"));
    let r = send(
        mcp.client
            .post(format!("{}?access_token={token}", mcp.url))
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(r.status, 400, "{}", r.raw);
    assert!(
        r.challenge().contains("invalid_request"),
        "{}",
        r.challenge()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_scope_is_the_engines_403_and_the_tool_is_hidden() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    let token = key.sign(&mcp.claims(&idp, "profile"));

    let r = mcp.tool(Some(&token), "salary").await;
    assert_eq!(r.status, 403, "{}", r.raw);
    assert_eq!(r.body["error"]["code"], -31001, "{}", r.raw);
    let c = r.challenge();
    assert!(c.contains("error=\"insufficient_scope\""), "{c}");
    assert!(c.contains("scope=\"hr.read\""), "{c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{}\"", mcp.metadata_url)),
        "{c}"
    );

    let r = mcp.call(Some(&token), "tools/list", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.raw);
    let names: Vec<&str> = r.body["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["whoami"], "{}", r.raw);
    assert_eq!(r.body["result"]["cacheScope"], "private", "{}", r.raw);

    // With the scope, the tool is listed.
    let token = key.sign(&mcp.claims(&idp, "hr.read"));
    let r = mcp.call(Some(&token), "tools/list", json!({})).await;
    let listed = r.body["result"]["tools"].to_string();
    assert!(listed.contains("salary"), "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn scope_hierarchy_broader_implies_narrower() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |c| {
        c.scope_expansion = std::sync::Arc::new(|granted| {
            if granted.contains("hr.admin") {
                ["hr.read".to_owned()].into()
            } else {
                Default::default()
            }
        });
    })
    .await;
    let token = key.sign(&mcp.claims(&idp, "hr.admin"));
    let r = mcp.tool(Some(&token), "salary").await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn protected_resource_metadata_at_both_well_known_paths() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |_| {}).await;
    assert_eq!(
        mcp.metadata_url,
        format!("{}/.well-known/oauth-protected-resource/mcp", mcp.base)
    );
    for url in [
        mcp.metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", mcp.base),
    ] {
        // Unauthenticated by design: clients read it before they have a token.
        let r = send(mcp.client.get(&url)).await;
        assert_eq!(r.status, 200, "{url}: {}", r.raw);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(
            r.body,
            json!({
                "resource": mcp.audience,
                "authorization_servers": [idp.issuer],
                // offline_access is configured but never advertised.
                "scopes_supported": ["hr.read"],
                "bearer_methods_supported": ["header"],
            }),
            "{url}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn key_rotation_is_picked_up_on_an_unknown_kid() {
    let old = TestKey::generate("2026-01");
    let new = TestKey::generate("2026-02");
    let idp = Idp::start(&[&old]).await;
    let mcp = Mcp::start(&idp, |c| {
        c.jwks_min_refresh_interval = Duration::from_millis(100);
    })
    .await;

    let r = mcp
        .tool(Some(&old.sign(&mcp.claims(&idp, "hr.read"))), "salary")
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(idp.fetches(), 1, "discovery + one JWKS fetch");

    // The IdP rotates; the cached set does not know the new kid yet.
    idp.publish(&[&new]);
    tokio::time::sleep(Duration::from_millis(150)).await;
    let r = mcp
        .tool(Some(&new.sign(&mcp.claims(&idp, "hr.read"))), "salary")
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    assert_eq!(idp.fetches(), 2);

    // The retired key is gone from the refreshed set.
    let r = mcp
        .tool(Some(&old.sign(&mcp.claims(&idp, "hr.read"))), "salary")
        .await;
    assert_eq!(r.status, 401, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_kid_flood_does_not_hammer_the_idp() {
    let key = TestKey::generate("real");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |c| {
        c.jwks_min_refresh_interval = Duration::from_secs(3600);
    })
    .await;
    let r = mcp
        .tool(Some(&key.sign(&mcp.claims(&idp, "hr.read"))), "whoami")
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
    for i in 0..20 {
        let bogus = TestKey::generate(&format!("bogus-{i}"));
        let r = mcp
            .tool(Some(&bogus.sign(&mcp.claims(&idp, "hr.read"))), "whoami")
            .await;
        assert_eq!(r.status, 401, "{}", r.raw);
        assert!(r.challenge().contains("unknown key"), "{}", r.challenge());
    }
    assert_eq!(idp.fetches(), 1, "refreshes are rate-limited");
    // The real key still works from the cache.
    let r = mcp
        .tool(Some(&key.sign(&mcp.claims(&idp, "hr.read"))), "whoami")
        .await;
    assert_eq!(r.status, 200, "{}", r.raw);
}

#[tokio::test(flavor = "multi_thread")]
async fn unreachable_keys_are_503_not_401() {
    let key = TestKey::generate("k1");
    let idp = Idp::start(&[&key]).await;
    let mcp = Mcp::start(&idp, |c| {
        // Nothing listens on port 9 of loopback (discard is not served).
        c.jwks_url = Some("http://127.0.0.1:9/jwks".into());
        c.http_timeout = Duration::from_secs(2);
    })
    .await;
    let r = mcp
        .tool(Some(&key.sign(&mcp.claims(&idp, "hr.read"))), "whoami")
        .await;
    assert_eq!(r.status, 503, "{}", r.raw);
    assert!(r.header("retry-after").is_some());
}
