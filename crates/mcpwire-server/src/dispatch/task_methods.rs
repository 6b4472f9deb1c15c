//! `tasks/get`, `tasks/update` and `tasks/cancel`.

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::jsonrpc::ResultPayload;
use serde_json::{Map, Value};

use super::task_run::{declares_extension, missing_extension};
use super::{Call, Dispatcher};
use crate::access::Principal;
use crate::tasks::Lookup;

impl Dispatcher {
    /// Serves the three task methods (modern wire, tasks enabled).
    pub(crate) async fn task_method(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let Some(store) = &self.state.tasks else {
            return Err(ProtocolError::method_not_found(&call.method));
        };
        if !declares_extension(&call.ctx) {
            return Err(missing_extension(format!(
                "{} needs the io.modelcontextprotocol/tasks extension in _meta clientCapabilities.extensions.",
                call.method
            )));
        }
        let Some(id) = call.params.get("taskId").and_then(Value::as_str) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: taskId must be the string from the CreateTaskResult.",
            ));
        };
        let owner = call
            .ctx
            .extension::<Principal>()
            .map(|p| p.subject.as_str());
        let unknown = |e: Lookup| match e {
            Lookup::Unknown => ProtocolError::invalid_params(
                "Invalid params: unknown or expired taskId; tasks are kept for ttlMs after their last change.",
            ),
            Lookup::Failed(e) => e,
        };
        match call.method.as_str() {
            "tasks/get" => {
                let task = store.view(id, owner).await.map_err(unknown)?;
                Ok(call.finish(self, task))
            }
            "tasks/update" => {
                let Some(Value::Object(responses)) = call.params.get("inputResponses") else {
                    return Err(ProtocolError::invalid_params(
                        "Invalid params: inputResponses must be an object keyed by the names in the task's inputRequests.",
                    ));
                };
                store.update(id, owner, responses).await.map_err(unknown)?;
                Ok(call.finish(self, Map::new()))
            }
            "tasks/cancel" => {
                store.cancel(id, owner).await.map_err(unknown)?;
                Ok(call.finish(self, Map::new()))
            }
            other => Err(ProtocolError::method_not_found(other)),
        }
    }
}
