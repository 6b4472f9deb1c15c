//! `completion/complete`: argument suggestions for prompts and templates.

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::jsonrpc::ResultPayload;
use serde_json::{Map, Value, json};

use super::Call;
use super::Dispatcher;

/// The spec caps a completion response at 100 values.
const MAX_VALUES: usize = 100;

impl Dispatcher {
    pub(super) async fn complete(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let Some(handler) = self.state.completion.clone() else {
            return Err(ProtocolError::method_not_found(&call.method));
        };
        let reference = call
            .params
            .get("ref")
            .filter(|r| r.is_object())
            .cloned()
            .ok_or_else(|| {
                ProtocolError::invalid_params("Invalid params: \"ref\" must be an object.")
            })?;
        let argument = call.params.get("argument").and_then(Value::as_object);
        let (Some(name), Some(value)) = (
            argument.and_then(|a| a.get("name")).and_then(Value::as_str),
            argument
                .and_then(|a| a.get("value"))
                .and_then(Value::as_str),
        ) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: \"argument\" must have string \"name\" and \"value\".",
            ));
        };
        let mut values = handler(
            call.ctx.clone(),
            reference,
            name.to_owned(),
            value.to_owned(),
        )
        .await?;
        let total = values.len();
        values.truncate(MAX_VALUES);
        let mut result = Map::new();
        result.insert(
            "completion".into(),
            json!({ "values": values, "total": total, "hasMore": total > MAX_VALUES }),
        );
        Ok(call.finish(self, result))
    }
}
