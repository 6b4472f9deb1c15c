//! `prompts/list` and `prompts/get`.

use mcpwire_protocol::jsonrpc::ResultPayload;
use mcpwire_protocol::{ProtocolError, cursor, shape};
use serde_json::{Map, Value, json};

use super::Call;
use super::Dispatcher;
use super::tools::{Next, cursor_param, invalid_cursor};
use crate::prompt::PromptOutcome;
use crate::request_state::Binding;

/// Cuts one page out of a small list; cursors carry the offset only.
pub(super) fn page<T>(
    items: &[T],
    cursor: Option<&str>,
    page_size: usize,
    method: &str,
) -> Result<(std::ops::Range<usize>, Option<String>), ProtocolError> {
    let size = page_size.max(1);
    let start = match cursor {
        None => 0,
        Some(c) => match cursor::decode(c) {
            Some((0, offset)) if offset < items.len() => offset,
            _ => return Err(invalid_cursor(method)),
        },
    };
    let end = (start + size).min(items.len());
    let next = (end < items.len()).then(|| cursor::encode(0, end));
    Ok((start..end, next))
}

/// Adds caching hints and the next cursor to a list result.
pub(super) fn list_result(
    server: &Dispatcher,
    key: &str,
    items: Vec<Value>,
    next: Option<String>,
) -> Map<String, Value> {
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(items));
    if let Some(n) = next {
        result.insert("nextCursor".into(), json!(n));
    }
    result.insert("ttlMs".into(), json!(server.state.options.list_ttl_ms));
    result.insert("cacheScope".into(), json!("public"));
    result
}

impl Dispatcher {
    pub(super) fn list_prompts(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let prompts = self.state.prompts();
        let (range, next) = page(
            &prompts,
            cursor_param(call)?,
            self.state.options.page_size,
            "prompts/list",
        )?;
        let items = prompts[range]
            .iter()
            .map(|p| {
                let mut v = serde_json::to_value(&p.definition).unwrap_or(Value::Null);
                if !call.version.has_structured_output()
                    && let Some(o) = v.as_object_mut()
                {
                    o.remove("title");
                }
                v
            })
            .collect();
        Ok(call.finish(self, list_result(self, "prompts", items, next)))
    }

    pub(super) async fn get_prompt(&self, call: &Call) -> Result<ResultPayload, ProtocolError> {
        let Some(name) = call.params.get("name").and_then(Value::as_str) else {
            return Err(ProtocolError::invalid_params(
                "Invalid params: prompts/get needs a string \"name\".",
            ));
        };
        let prompts = self.state.prompts();
        let Some(prompt) = prompts.iter().find(|p| p.definition.name == name).cloned() else {
            return Err(ProtocolError::invalid_params(format!(
                "Invalid params: unknown prompt \"{name}\"; call prompts/list to see the prompts."
            )));
        };
        let arguments = match call.params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(a)) => a.clone(),
            Some(_) => {
                return Err(ProtocolError::invalid_params(
                    "Invalid params: \"arguments\" must be an object of strings.",
                ));
            }
        };
        for arg in &prompt.definition.arguments {
            if arg.required == Some(true) && !arguments.contains_key(&arg.name) {
                return Err(ProtocolError::invalid_params(format!(
                    "Invalid params: prompt \"{name}\" needs the argument \"{}\".",
                    arg.name
                )));
            }
        }
        let binding = Binding {
            method: "prompts/get",
            name,
            arguments: &arguments,
            // A state handed to one principal is refused to any other.
            principal: call
                .ctx
                .extension::<crate::access::Principal>()
                .map(|p| p.subject.as_str()),
        };
        let mut ctx = call.ctx.clone();
        if call.version.is_modern() {
            self.read_round_trip_params(call, &mut ctx, &binding)?;
        }
        for _ in 0..10 {
            match (prompt.render)(ctx.clone(), arguments.clone()).await? {
                PromptOutcome::Complete {
                    description,
                    messages,
                } => {
                    let mut result = Map::new();
                    if let Some(d) = description {
                        result.insert("description".into(), json!(d));
                    }
                    let messages: Vec<Value> = messages
                        .iter()
                        .map(|m| {
                            json!({
                                "role": m.role,
                                "content": shape::content_for(m.content.to_value(), call.version),
                            })
                        })
                        .collect();
                    result.insert("messages".into(), Value::Array(messages));
                    return Ok(call.finish(self, result));
                }
                PromptOutcome::InputRequired(ir) => {
                    match self.input_required(call, &mut ctx, ir, &binding).await? {
                        Next::Respond(r) => return Ok(r),
                        Next::Retry => continue,
                        Next::Fail(msg) => return Err(ProtocolError::invalid_params(msg)),
                    }
                }
            }
        }
        Err(ProtocolError::internal(format!(
            "Internal error: prompt \"{name}\" kept asking for input."
        )))
    }
}
