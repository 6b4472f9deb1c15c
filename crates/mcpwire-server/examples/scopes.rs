//! Scopes and redaction: a tool callable with one scope, one output field
//! visible only with another, self-service access, and an argument kept
//! out of the audit trail.
//!
//! ```sh
//! cargo run -p mcpwire-server --example scopes
//! ```
//!
//! Over HTTP with `auth`, the principal comes from the bearer token; here
//! the in-memory client attaches one directly.

use mcpwire_server::client::Client;
use mcpwire_server::{AccessOptions, Principal, Server, Tool, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Arguments of `get-person`.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Lookup {
    /// Whose record.
    person_id: String,
}

/// A person's record; `phone` needs the `contact` scope.
#[derive(Serialize, JsonSchema)]
struct Person {
    id: String,
    name: String,
    phone: String,
}

async fn get_person(input: Lookup) -> ToolResult<Person> {
    Ok(Person {
        name: format!("Person {}", input.person_id),
        phone: "+1 555 0100".to_owned(),
        id: input.person_id,
    })
}

fn principal(subject: &str, scopes: &[&str]) -> Principal {
    Principal::new(subject)
        .with_scopes(scopes.iter().copied())
        .with_self_id(subject)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = Tool::builder("get-person")
        .description("A person's record.")
        .required_scopes(["directory"])
        // Without `directory`, anyone may read their own record.
        .self_access("personId")
        // The phone number is removed unless the caller holds `contact`.
        .field_scope("/phone", "contact")
        // Never write who was looked up into the audit trail.
        .redact_argument("personId")
        .handler(get_person);
    // Options are `#[non_exhaustive]`: start from the defaults.
    let mut access = AccessOptions::default();
    access.enforce_scopes = true;
    let server = Server::builder("people", "1.0.0")
        .access(access)
        .tool(tool)
        .build()?;

    for (who, scopes, target) in [
        ("ada", &["directory", "contact"][..], "bob"),
        ("ada", &["directory"][..], "bob"),
        ("bob", &[][..], "bob"),
        ("bob", &[][..], "ada"),
    ] {
        let client = Client::builder(server.clone())
            .extension(principal(who, scopes))
            .connect()
            .await?;
        match client
            .call_tool("get-person", json!({ "personId": target }))
            .await
        {
            Ok(r) => println!("{who} {scopes:?} reads {target}: {}", r.text()),
            Err(e) => println!("{who} {scopes:?} reads {target}: refused ({e})"),
        }
    }
    Ok(())
}
