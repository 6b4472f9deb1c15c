//! The tool registry: an immutable snapshot swapped on every change, so a
//! request takes no lock beyond cloning an `Arc`, and the serialized
//! `tools/list` pages are built once per change and per revision.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

use mcpwire_protocol::headers::{HeaderParam, header_params};
use mcpwire_protocol::{ProtocolVersion, cursor, shape};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::tool::Tool;
use crate::tool::schema::CompiledSchema;

/// Why a tool could not be registered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Its name breaks the naming rules (1–128 of `[A-Za-z0-9_.-]`).
    #[error("tool name {0:?} must be 1-128 characters of A-Z, a-z, 0-9, '_', '-', '.'")]
    InvalidName(String),
    /// The OS random source is unavailable: keys and session ids cannot
    /// be made safely, so the server refuses to start.
    #[error("no OS random source for keys and session ids: {0}")]
    Randomness(String),
    /// A view's URI is not a `ui://` URI, or another resource has it.
    #[error("view {0:?}: its URI must start with \"ui://\" and be unique")]
    InvalidView(String),
    /// Another tool already has this name.
    #[error("a tool named {0:?} is already registered")]
    Duplicate(String),
    /// The input schema's root is not `type: "object"`.
    #[error("tool {0:?}: inputSchema must have type \"object\" at the root")]
    InputNotObject(String),
    /// A schema does not compile or uses an unsupported dialect.
    #[error("tool {name:?}: {which} schema: {reason}")]
    Schema {
        /// The tool.
        name: String,
        /// "input" or "output".
        which: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// An `x-mcp-header` annotation is invalid.
    #[error("tool {name:?}: {reason}")]
    Header {
        /// The tool.
        name: String,
        /// What is wrong.
        reason: String,
    },
}

/// A tool with everything the engine precomputes for it.
pub(crate) struct RegisteredTool {
    pub(crate) tool: Tool,
    pub(crate) input: CompiledSchema,
    pub(crate) output: Option<CompiledSchema>,
    pub(crate) header_params: Vec<HeaderParam>,
    /// Call durations by outcome (`mcp_server_operation_duration_seconds`).
    /// Shared with the tool's next registration of the same name, so a
    /// tool-set swap does not reset its counters.
    pub(crate) stats: Arc<crate::observe::metrics::OutcomeSeries>,
}

impl RegisteredTool {
    pub(crate) fn new(tool: Tool) -> Result<Self, RegistrationError> {
        let def = &tool.definition;
        let name = def.name.clone();
        let valid_name = !name.is_empty()
            && name.len() <= 128
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b));
        if !valid_name {
            return Err(RegistrationError::InvalidName(name));
        }
        if def.input_schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RegistrationError::InputNotObject(name));
        }
        let input = CompiledSchema::compile(&def.input_schema).map_err(|reason| {
            RegistrationError::Schema {
                name: name.clone(),
                which: "input",
                reason,
            }
        })?;
        let output = def
            .output_schema
            .as_ref()
            .map(CompiledSchema::compile)
            .transpose()
            .map_err(|reason| RegistrationError::Schema {
                name: name.clone(),
                which: "output",
                reason,
            })?;
        let header_params = header_params(&def.input_schema)
            .map_err(|reason| RegistrationError::Header { name, reason })?;
        Ok(Self {
            tool,
            input,
            output,
            header_params,
            stats: Default::default(),
        })
    }
}

/// One version of the tool set.
pub(crate) struct ToolSet {
    /// Bumped on every change; cursors from older generations are refused.
    pub(crate) generation: u64,
    /// Tools in registration order (deterministic listing).
    pub(crate) tools: Vec<Arc<RegisteredTool>>,
    index: HashMap<String, usize>,
    /// Serialized pages per revision, built on first use.
    pages: [OnceLock<Vec<Arc<RawValue>>>; 5],
}

/// How `tools/list` pages are cut and labelled.
#[derive(Clone, Debug)]
pub(crate) struct ListPolicy {
    pub(crate) page_size: usize,
    pub(crate) ttl_ms: u64,
    pub(crate) server_info: Value,
}

impl ToolSet {
    fn new(generation: u64, tools: Vec<Arc<RegisteredTool>>) -> Self {
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tool.definition.name.clone(), i))
            .collect();
        Self {
            generation,
            tools,
            index,
            pages: Default::default(),
        }
    }

    /// Looks a tool up by name.
    pub(crate) fn get(&self, name: &str) -> Option<&Arc<RegisteredTool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The page at `cursor` for revision `v`, serialized; `None` for a
    /// cursor this set did not issue.
    pub(crate) fn page(
        &self,
        cursor: Option<&str>,
        v: ProtocolVersion,
        policy: &ListPolicy,
    ) -> Option<Arc<RawValue>> {
        let page_size = policy.page_size.max(1);
        let index = match cursor {
            None => 0,
            Some(c) => {
                let (generation, offset) = cursor::decode(c)?;
                if generation != self.generation
                    || offset % page_size != 0
                    || offset >= self.tools.len()
                {
                    return None;
                }
                offset / page_size
            }
        };
        let slot = ProtocolVersion::ALL
            .iter()
            .position(|x| *x == v)
            .unwrap_or(0);
        let pages = self.pages[slot].get_or_init(|| self.build_pages(v, policy, page_size));
        pages.get(index).cloned()
    }

    /// Whether some tool may be called only by views (see [`crate::Tool::app_only`]).
    pub(crate) fn has_app_only(&self) -> bool {
        self.tools.iter().any(|t| t.tool.app_only())
    }

    /// A page of the tools `visible` admits, built for this request (the
    /// list depends on the caller, so it is neither cached nor public).
    pub(crate) fn filtered_page(
        &self,
        cursor: Option<&str>,
        v: ProtocolVersion,
        policy: &ListPolicy,
        visible: impl Fn(&RegisteredTool) -> bool,
    ) -> Option<Map<String, Value>> {
        let tools: Vec<&Arc<RegisteredTool>> = self.tools.iter().filter(|t| visible(t)).collect();
        let page_size = policy.page_size.max(1);
        let start = match cursor {
            None => 0,
            Some(c) => {
                let (generation, offset) = cursor::decode(c)?;
                if generation != self.generation || offset >= tools.len() {
                    return None;
                }
                offset
            }
        };
        let end = (start + page_size).min(tools.len());
        let mut result = Map::new();
        let items = tools[start..end]
            .iter()
            .map(|t| shape::tool_for(&t.tool.definition, v))
            .collect();
        result.insert("tools".into(), Value::Array(items));
        if end < tools.len() {
            result.insert(
                "nextCursor".into(),
                json!(cursor::encode(self.generation, end)),
            );
        }
        result.insert("ttlMs".into(), json!(policy.ttl_ms));
        result.insert("cacheScope".into(), json!("private"));
        Some(result)
    }

    fn build_pages(
        &self,
        v: ProtocolVersion,
        policy: &ListPolicy,
        page_size: usize,
    ) -> Vec<Arc<RawValue>> {
        let chunks: Vec<&[Arc<RegisteredTool>]> = if self.tools.is_empty() {
            vec![&[]]
        } else {
            self.tools.chunks(page_size).collect()
        };
        let last = chunks.len() - 1;
        chunks
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| {
                let tools: Vec<Value> = chunk
                    .iter()
                    .map(|t| shape::tool_for(&t.tool.definition, v))
                    .collect();
                let mut result = Map::new();
                result.insert("tools".into(), Value::Array(tools));
                if i < last {
                    result.insert(
                        "nextCursor".into(),
                        json!(cursor::encode(self.generation, (i + 1) * page_size)),
                    );
                }
                result.insert("ttlMs".into(), json!(policy.ttl_ms));
                result.insert("cacheScope".into(), json!("public"));
                let result = shape::finish_result(result, v, Some(&policy.server_info));
                let text = Value::Object(result).to_string();
                // A serialized JSON object is always valid raw JSON.
                RawValue::from_string(text)
                    .map(Arc::from)
                    .unwrap_or_else(|_| Arc::from(RawValue::NULL.to_owned()))
            })
            .collect()
    }
}

/// The live tool registry.
pub(crate) struct ToolRegistry {
    current: RwLock<Arc<ToolSet>>,
}

impl ToolRegistry {
    pub(crate) fn new(tools: Vec<Arc<RegisteredTool>>) -> Self {
        Self {
            current: RwLock::new(Arc::new(ToolSet::new(1, tools))),
        }
    }

    /// The current snapshot.
    pub(crate) fn snapshot(&self) -> Arc<ToolSet> {
        match self.current.read() {
            Ok(g) => Arc::clone(&g),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Applies a change and publishes a new snapshot.
    pub(crate) fn update<F>(&self, f: F) -> Result<(), RegistrationError>
    where
        F: FnOnce(&mut Vec<Arc<RegisteredTool>>) -> Result<(), RegistrationError>,
    {
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut tools = guard.tools.clone();
        f(&mut tools)?;
        *guard = Arc::new(ToolSet::new(guard.generation + 1, tools));
        Ok(())
    }

    /// Publishes `tools` as the whole new set in one step: a request sees
    /// either the old set or the new one, never a mix. Cursors of the old
    /// set are refused (new generation); pages are rebuilt on first use.
    pub(crate) fn replace(&self, mut tools: Vec<RegisteredTool>) {
        let mut guard = match self.current.write() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        for tool in &mut tools {
            if let Some(old) = guard.get(&tool.tool.definition.name) {
                tool.stats = Arc::clone(&old.stats);
            }
        }
        let tools = tools.into_iter().map(Arc::new).collect();
        *guard = Arc::new(ToolSet::new(guard.generation + 1, tools));
    }
}
