//! A long-running job as a task (tasks extension) that reports progress.
//!
//! ```sh
//! cargo run -p mcpwire-server --example long_task
//! ```
//!
//! A client that declares `io.modelcontextprotocol/tasks` gets a task id
//! at once and polls `tasks/get`; other clients get the result when the
//! job ends, with `notifications/progress` on the way if they asked.

use std::time::Duration;

use mcpwire_server::client::Client;
use mcpwire_server::protocol::meta;
use mcpwire_server::tasks::EXTENSION_ID;
use mcpwire_server::{RequestContext, Server, TaskSupport, Tool, ToolError, ToolResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, json};

/// Arguments of `reindex`.
#[derive(Deserialize, JsonSchema)]
struct Reindex {
    /// How many batches to process.
    batches: u32,
}

/// What `reindex` did.
#[derive(Serialize, JsonSchema)]
struct Reindexed {
    batches: u32,
}

async fn reindex(ctx: RequestContext, input: Reindex) -> ToolResult<Reindexed> {
    for done in 1..=input.batches {
        if ctx.is_cancelled() {
            return Err(ToolError::execution(
                "Cancelled; the index is partly rebuilt.",
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let message = format!("batch {done} of {}", input.batches);
        ctx.progress(
            f64::from(done),
            Some(f64::from(input.batches)),
            Some(&message),
        )
        .await;
    }
    Ok(Reindexed {
        batches: input.batches,
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tool = Tool::builder("reindex")
        .description("Rebuilds the search index, batch by batch.")
        .task_support(TaskSupport::Optional)
        .handler_with_context(reindex);
    let server = Server::builder("indexer", "1.0.0").tool(tool).build()?;

    // As a task: the call returns a task id; poll until it completes.
    let tasks = Client::builder(server.clone())
        .capabilities(json!({ "extensions": { EXTENSION_ID: {} } }))
        .connect()
        .await?;
    let created = tasks.call_tool("reindex", json!({ "batches": 3 })).await?;
    let id = created.raw["taskId"].clone();
    println!("task {id} is {}", created.raw["status"]);
    loop {
        let mut params = Map::new();
        params.insert("taskId".into(), id.clone());
        let task = tasks.request("tasks/get", params).await?;
        if task["status"] != "working" {
            println!(
                "task {}: {}",
                task["status"], task["result"]["structuredContent"]
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Synchronously, with progress notifications.
    let plain = Client::connect(server).await?;
    let mut params = Map::new();
    params.insert("name".into(), json!("reindex"));
    params.insert("arguments".into(), json!({ "batches": 2 }));
    params.insert("_meta".into(), json!({ meta::PROGRESS_TOKEN: "reindex-1" }));
    plain.request("tools/call", params).await?;
    for n in plain.take_notifications().await {
        println!("progress: {}", n["params"]["message"]);
    }
    Ok(())
}
