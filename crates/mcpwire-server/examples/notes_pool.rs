//! A tool on shared state: a notes store behind a connection-pool-like
//! handle, given once with `.state(..)` and cloned by the library per call.
//!
//! ```sh
//! cargo run -p mcpwire-server --example notes_pool
//! ```
//!
//! Runs two calls through the in-memory client and prints the results; a
//! real server would hand the same `Server` to a transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mcpwire_server::client::Client;
use mcpwire_server::{Server, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Stands in for a database pool: cheap to clone, shared by every call.
#[derive(Clone, Default)]
struct Pool(Arc<Mutex<HashMap<String, String>>>);

impl Pool {
    fn put(&self, key: String, text: String) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, text);
    }

    fn get(&self, key: &str) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
            .cloned()
    }
}

/// Arguments of `save-note`.
#[derive(Deserialize, JsonSchema)]
struct Save {
    /// Name of the note.
    key: String,
    /// Its text.
    text: String,
}

/// Arguments of `read-note`.
#[derive(Deserialize, JsonSchema)]
struct Read {
    /// Name of the note.
    key: String,
}

/// A stored note.
#[derive(Serialize, JsonSchema)]
struct Note {
    key: String,
    text: String,
}

async fn save(pool: Pool, input: Save) -> ToolResult<Note> {
    pool.put(input.key.clone(), input.text.clone());
    Ok(Note {
        key: input.key,
        text: input.text,
    })
}

async fn read(pool: Pool, input: Read) -> ToolResult<Note> {
    let text = pool.get(&input.key).ok_or_else(|| {
        ToolError::execution(format!("No note \"{}\"; save it first.", input.key))
    })?;
    Ok(Note {
        key: input.key,
        text,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = Pool::default();
    let server = Server::builder("notes", "1.0.0")
        .tool(Tool::builder("save-note").state(pool.clone()).handler(save))
        .tool(Tool::builder("read-note").state(pool).handler(read))
        .build()?;

    let client = Client::connect(server).await?;
    client
        .call_tool("save-note", json!({ "key": "todo", "text": "ship it" }))
        .await?;
    let note = client
        .call_tool("read-note", json!({ "key": "todo" }))
        .await?;
    println!("{}", note.text());
    let missing = client
        .call_tool("read-note", json!({ "key": "nope" }))
        .await?;
    println!("{} (isError: {})", missing.text(), missing.is_error);
    Ok(())
}
