//! The stub server of `--handlers`: mcpwire-server over Streamable HTTP
//! with two tools that answer with the same bytes, one through a typed
//! handler ([`TYPED`]) and one through a raw handler ([`RAW`]), so their
//! cost per call measures what the typed layer adds (the goal:
//! typed handlers close to a raw handler returning the same bytes).
//!
//! Both tools take `{"employeeId": string}` and return an employee-like
//! profile of about 1.1 KB of JSON made from that id. The bench starts
//! itself with the hidden `--serve-stubs ADDR` to serve them in a child
//! process, as it does for the ceiling.

use std::net::SocketAddr;

use mcpwire_server::transport::http::{self, HttpConfig};
use mcpwire_server::{
    CallToolResult, RegistrationError, RequestContext, Server, ServerOptions, Tool, ToolError,
    ToolOutcome, ToolResult,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Name of the tool with the typed handler.
pub const TYPED: &str = "stub-typed";
/// Name of the tool with the raw handler.
pub const RAW: &str = "stub-raw";

/// Arguments of both stub tools.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StubInput {
    /// Any id; the profile is made from it.
    employee_id: String,
}

// The fields of both structs are in the alphabetical order of their JSON
// names: serde_json's `Map` (a BTreeMap in this build) writes the raw
// handler's keys sorted, and the typed handler's text is written in field
// order, so only this order gives the same bytes.

/// What both stub tools return: shaped like the HR server's employee
/// details (strings, numbers, a nested object, a list).
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StubProfile {
    /// Whether the employee is active.
    active: bool,
    /// Office address.
    address: StubAddress,
    /// A paragraph of prose, the bulk of the profile.
    bio: String,
    /// Department name.
    department: String,
    /// Work email.
    email: String,
    /// The id asked for.
    employee_id: String,
    /// Display name.
    full_name: String,
    /// `YYYY-MM-DD`.
    hire_date: String,
    /// Career level.
    level: String,
    /// Office city.
    location: String,
    /// Manager's id.
    manager_id: String,
    /// Work phone.
    phone: String,
    /// Salary band, 1–9.
    salary_band: u32,
    /// A few skills.
    skills: Vec<String>,
    /// Team id.
    team_id: String,
    /// Job title.
    title: String,
    /// Whole years since the hire date.
    years_of_service: u32,
}

/// The nested object of [`StubProfile`].
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StubAddress {
    /// City.
    city: String,
    /// ISO country code.
    country: String,
    /// Postal code.
    postal_code: String,
    /// Street and number.
    street: String,
}

const DEPARTMENTS: [&str; 4] = ["Engineering", "Sales", "Finance", "Operations"];
const LEVELS: [&str; 4] = ["junior", "mid", "senior", "principal"];
const CITIES: [(&str, &str); 4] = [
    ("Berlin", "DE"),
    ("Lisbon", "PT"),
    ("Toronto", "CA"),
    ("Osaka", "JP"),
];
const SKILLS: [&str; 7] = [
    "Go",
    "Rust",
    "SQL",
    "Kubernetes",
    "Python",
    "Terraform",
    "React",
];

/// FNV-1a of the id: varies the profile with the input at no real cost.
fn seed(id: &str) -> u64 {
    id.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Picks from `items` by `n` (never empty here).
fn pick<T: Copy>(items: &[T], n: u64) -> T {
    items[(n % items.len() as u64) as usize]
}

/// `AliceJohnson` → `Alice Johnson`.
fn spaced(id: &str) -> String {
    let mut name = String::with_capacity(id.len() + 2);
    for (i, c) in id.chars().enumerate() {
        if i > 0 && c.is_uppercase() {
            name.push(' ');
        }
        name.push(c);
    }
    name
}

/// The profile both tools return for `id`.
pub fn profile(id: &str) -> StubProfile {
    let s = seed(id);
    let full_name = spaced(id);
    let department = pick(&DEPARTMENTS, s);
    let (city, country) = pick(&CITIES, s >> 8);
    let years = (s >> 16) % 15;
    let hired = 2025 - years;
    let skills = (0..4).map(|i| pick(&SKILLS, (s >> 24) + i).to_owned());
    let bio = format!(
        "{full_name} joined the {department} department in {hired} and works from the \
         {city} office. Known for careful reviews, patient mentoring of new colleagues and clear \
         written design notes, {full_name} has led the migration of several internal services, \
         keeps the team's runbooks current and regularly presents at the monthly engineering \
         forum. Outside of project work, {full_name} coordinates the office's volunteering day \
         and maintains the onboarding checklist used across the {department} department. \
         Recent work includes the quarterly capacity review, a rewrite of the deployment \
         pipeline and a series of internal workshops on incident response."
    );
    StubProfile {
        active: !s.is_multiple_of(7),
        address: StubAddress {
            city: city.to_owned(),
            country: country.to_owned(),
            postal_code: format!("{:05}", s % 100_000),
            street: format!("{} Market Street", 100 + s % 900),
        },
        bio,
        department: department.to_owned(),
        email: format!("{}@example.com", id.to_lowercase()),
        employee_id: id.to_owned(),
        full_name,
        hire_date: format!("{hired}-{:02}-{:02}", 1 + (s >> 4) % 12, 1 + s % 28),
        level: pick(&LEVELS, s >> 12).to_owned(),
        location: city.to_owned(),
        manager_id: format!("M{:04}", (s >> 32) % 10_000),
        phone: format!("+1-555-{:04}", (s >> 40) % 10_000),
        salary_band: 1 + (s % 9) as u32,
        skills: skills.collect(),
        team_id: format!("team-{}", (s >> 48) % 40),
        title: format!("{} Engineer", pick(&LEVELS, s >> 12)),
        years_of_service: years as u32,
    }
}

/// The profile as a `Value`, built by hand as a raw handler would (no
/// serde derive on the way), keys as in [`StubProfile`].
pub fn profile_value(p: StubProfile) -> Value {
    json!({
        "active": p.active,
        "address": {
            "city": p.address.city,
            "country": p.address.country,
            "postalCode": p.address.postal_code,
            "street": p.address.street,
        },
        "bio": p.bio,
        "department": p.department,
        "email": p.email,
        "employeeId": p.employee_id,
        "fullName": p.full_name,
        "hireDate": p.hire_date,
        "level": p.level,
        "location": p.location,
        "managerId": p.manager_id,
        "phone": p.phone,
        "salaryBand": p.salary_band,
        "skills": p.skills,
        "teamId": p.team_id,
        "title": p.title,
        "yearsOfService": p.years_of_service,
    })
}

/// The typed handler: input deserialized, output serialized by the library.
async fn typed(input: StubInput) -> ToolResult<StubProfile> {
    Ok(profile(&input.employee_id))
}

/// The raw handler: reads the argument map, returns a structured result.
async fn raw(_ctx: RequestContext, args: Map<String, Value>) -> Result<ToolOutcome, ToolError> {
    // The engine checked the arguments against the input schema already;
    // this only guards against a schema that says otherwise.
    let Some(id) = args.get("employeeId").and_then(Value::as_str) else {
        return Err(ToolError::execution("employeeId must be a string."));
    };
    let value = profile_value(profile(id));
    Ok(ToolOutcome::Complete(CallToolResult::structured(value)))
}

/// The stub server: both tools, no limit on new legacy sessions (every
/// bench worker opens one per cell, all from one address).
pub fn server() -> Result<Server, RegistrationError> {
    let typed = Tool::builder(TYPED)
        .description("Stub employee profile, typed handler (mcp-bench --handlers).")
        .handler(typed);
    // The typed tool's schemas as the library derived them (titles
    // removed, references inlined), so both tools advertise the same.
    let definition = typed.definition();
    let mut raw_tool = Tool::builder(RAW)
        .description("Stub employee profile, raw handler (mcp-bench --handlers).")
        .input_schema(Value::Object(definition.input_schema.clone()));
    if let Some(output) = &definition.output_schema {
        raw_tool = raw_tool.output_schema(Value::Object(output.clone()));
    }
    let raw_tool = raw_tool.raw_handler(raw);
    let options = ServerOptions {
        initialize_rate: None,
        ..ServerOptions::default()
    };
    Server::builder("mcp-bench-stubs", env!("CARGO_PKG_VERSION"))
        .options(options)
        .tool(typed)
        .tool(raw_tool)
        .build()
}

/// Serves the stub server at `/mcp` on `addr` until the process ends.
pub async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    serve_on(listener).await
}

/// Serves the stub server on a bound listener until the process ends.
pub async fn serve_on(listener: tokio::net::TcpListener) -> std::io::Result<()> {
    let server = server().map_err(std::io::Error::other)?;
    let router = http::router(server.clone(), HttpConfig::default());
    http::serve(listener, router, server, std::future::pending()).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpwire_protocol::{ProtocolVersion, headers, meta};
    use mcpwire_server::client::Client;

    const ARGS: &str = r#"{"employeeId":"AliceJohnson"}"#;

    fn args() -> Value {
        serde_json::from_str(ARGS).expect("constant JSON")
    }

    #[test]
    fn hand_built_value_is_the_derived_json() {
        let p = profile("AliceJohnson");
        let typed = serde_json::to_string(&p).expect("serializable");
        assert_eq!(profile_value(p).to_string(), typed);
        assert!(
            (1000..=2048).contains(&typed.len()),
            "{} bytes",
            typed.len()
        );
        assert_ne!(
            typed,
            serde_json::to_string(&profile("BobSmith")).expect("ok")
        );
    }

    /// Both tools' results through the in-memory client, on both wires.
    #[tokio::test]
    async fn in_memory_results_are_equal() {
        for legacy in [false, true] {
            let server = server().expect("stub server builds");
            let client = match legacy {
                false => Client::connect(server).await,
                true => {
                    let builder = Client::builder(server).legacy(ProtocolVersion::V2025_11_25);
                    builder.connect().await
                }
            }
            .expect("client connects");
            let tools = client.list_tools().await.expect("tools/list");
            let [a, b] = [TYPED, RAW].map(|n| tools.iter().find(|t| t.name == n));
            let (a, b) = (a.expect("typed listed"), b.expect("raw listed"));
            assert_eq!(a.input_schema, b.input_schema);
            assert!(a.output_schema.is_some());
            assert_eq!(a.output_schema, b.output_schema);

            let typed = client.call_tool(TYPED, args()).await.expect("typed call");
            let raw = client.call_tool(RAW, args()).await.expect("raw call");
            assert!(!typed.is_error, "{}", typed.text());
            assert_eq!(typed.raw, raw.raw, "legacy: {legacy}");
            assert_eq!(
                typed.text(),
                profile_value(profile("AliceJohnson")).to_string()
            );
        }
    }

    /// One modern `tools/call` over HTTP with JSON-RPC id 7: the body as sent.
    async fn call_over_http(url: &str, tool: &str) -> Vec<u8> {
        let body = json!({
            "jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {
                "name": tool, "arguments": args(),
                "_meta": { meta::PROTOCOL_VERSION: "2026-07-28", meta::CLIENT_CAPABILITIES: {} },
            },
        });
        let resp = reqwest::Client::new()
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header(headers::PROTOCOL_VERSION, "2026-07-28")
            .header(headers::METHOD, "tools/call")
            .header(headers::NAME, tool)
            .body(body.to_string())
            .send()
            .await
            .expect("request sent");
        assert!(resp.status().is_success(), "{}", resp.status());
        resp.bytes().await.expect("body read").to_vec()
    }

    /// The bytes on the wire, with the same request id: identical.
    #[tokio::test]
    async fn http_bodies_are_identical() {
        // reqwest is built without a TLS provider here (see main).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let serving = tokio::spawn(serve_on(listener));
        let typed = call_over_http(&url, TYPED).await;
        let raw = call_over_http(&url, RAW).await;
        serving.abort();
        let text = String::from_utf8_lossy(&typed);
        assert!(text.contains("AliceJohnson"), "{text}");
        assert_eq!(text, String::from_utf8_lossy(&raw));
    }
}
