//! The client's side of an in-memory [`Connection`]: lines the server
//! writes are routed to the request waiting for them, to a subscription,
//! to the input handler (server→client requests on legacy sessions), or
//! to the notification queue. The child-process mode routes its stdout
//! lines the same way ([`deliver`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mcpwire_protocol::jsonrpc::Message;
use mcpwire_protocol::meta;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::InputHandler;
use crate::engine::Connection;
use crate::sync::lock;

/// What the reader task shares with the client.
#[derive(Default)]
pub(super) struct Routes {
    /// Requests waiting for their response, by id.
    pub(super) waiting: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    /// Open subscriptions (`subscriptions/listen`), by request id: their
    /// tagged notifications and their final response.
    pub(super) subscriptions: Mutex<HashMap<String, mpsc::UnboundedSender<Value>>>,
    /// Set (under `waiting`'s lock) once the server is gone: a request
    /// registered later fails at once instead of waiting forever.
    closed: AtomicBool,
}

/// The key of a JSON-RPC id (numbers and strings never collide: a string
/// key keeps its quotes).
pub(super) fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Routes {
    pub(super) fn wait_for(&self, id: &Value) -> oneshot::Receiver<Value> {
        let (tx, rx) = oneshot::channel();
        let mut waiting = lock(&self.waiting);
        if !self.closed.load(Ordering::Relaxed) {
            waiting.insert(id_key(id), tx);
        }
        rx
    }

    pub(super) fn subscribe(&self, id: &Value) -> mpsc::UnboundedReceiver<Value> {
        let (tx, rx) = mpsc::unbounded_channel();
        let _waiting = lock(&self.waiting);
        if !self.closed.load(Ordering::Relaxed) {
            lock(&self.subscriptions).insert(id_key(id), tx);
        }
        rx
    }

    pub(super) fn unsubscribe(&self, id: &Value) {
        lock(&self.subscriptions).remove(&id_key(id));
    }

    /// The server is gone: whoever still waits learns it from a dropped
    /// sender.
    pub(super) fn close(&self) {
        let mut waiting = lock(&self.waiting);
        self.closed.store(true, Ordering::Relaxed);
        waiting.clear();
        lock(&self.subscriptions).clear();
    }

    /// Hands a response to its subscription or its waiting request.
    fn response(&self, id: &Value, message: Value) {
        let key = id_key(id);
        if let Some(sub) = lock(&self.subscriptions).remove(&key) {
            let _ = sub.send(message);
            return;
        }
        if let Some(tx) = lock(&self.waiting).remove(&key) {
            let _ = tx.send(message);
        }
    }

    /// A notification tagged with a subscription id goes to it.
    fn subscription_event(&self, message: &Value) -> bool {
        let Some(id) = message["params"]["_meta"].get(meta::SUBSCRIPTION_ID) else {
            return false;
        };
        match lock(&self.subscriptions).get(&id_key(id)) {
            Some(sub) => sub.send(message.clone()).is_ok(),
            None => false,
        }
    }
}

/// Reads what the server writes until the connection's queue closes.
pub(super) async fn route(
    mut lines: mpsc::Receiver<String>,
    routes: Arc<Routes>,
    notifications: mpsc::UnboundedSender<Value>,
    connection: Arc<Connection>,
    handler: Option<InputHandler>,
) {
    while let Some(line) = lines.recv().await {
        let Some((id, request)) = deliver(&line, &routes, &notifications) else {
            continue;
        };
        // Answered on its own task: the handler may take its time (or
        // call the server) while other lines keep flowing.
        let (handler, connection) = (handler.clone(), Arc::clone(&connection));
        tokio::spawn(async move {
            let reply = answer(handler.as_ref(), &request, id).await;
            connection.receive(reply.as_bytes()).await;
        });
    }
    routes.close();
}

/// Routes one line the server wrote: a response to its waiting request or
/// subscription, a notification to its subscription or the queue. A
/// server→client request is returned (its id and the message) for the
/// caller to answer on its own transport.
pub(super) fn deliver(
    line: &str,
    routes: &Routes,
    notifications: &mpsc::UnboundedSender<Value>,
) -> Option<(Value, Value)> {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        tracing::warn!(%line, "the server wrote a line that is not JSON");
        return None;
    };
    // A batch reply: each response on its own.
    if let Value::Array(items) = message {
        for item in items {
            if let Some(id) = item.get("id").cloned() {
                routes.response(&id, item);
            }
        }
        return None;
    }
    match (message.get("id").cloned(), message.get("method").is_some()) {
        (Some(id), false) => routes.response(&id, message),
        (Some(id), true) => return Some((id, message)),
        (None, _) => {
            if !routes.subscription_event(&message) {
                let _ = notifications.send(message);
            }
        }
    }
    None
}

/// The client's response to a server→client request (legacy sessions).
pub(super) async fn answer(handler: Option<&InputHandler>, message: &Value, id: Value) -> String {
    let request = Message::from_value(message.clone())
        .ok()
        .and_then(|m| match m {
            Message::Request(r) => Some(r),
            _ => None,
        });
    let response = match (handler, request) {
        (Some(h), Some(r)) => {
            let input = mcpwire_protocol::model::InputRequest {
                method: r.method,
                params: r.params,
            };
            json!({ "jsonrpc": "2.0", "id": id, "result": h(input).await })
        }
        _ => {
            let method = message["method"].as_str().unwrap_or_default();
            let error =
                json!({ "code": -32601, "message": format!("Method not found: {method}.") });
            json!({ "jsonrpc": "2.0", "id": id, "error": error })
        }
    };
    response.to_string()
}
