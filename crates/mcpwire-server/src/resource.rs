//! Resources: readable data addressed by URI, static or from templates.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::model::ResourceContents;
use serde_json::{Map, Value};

use crate::context::RequestContext;

/// The future a resource reader returns.
pub type ReadFuture =
    Pin<Box<dyn Future<Output = Result<Vec<ResourceContents>, ProtocolError>> + Send>>;

type ReadFn = dyn Fn(RequestContext, String, Vec<(String, String)>) -> ReadFuture + Send + Sync;

/// A resource with a fixed URI.
#[derive(Clone)]
pub struct Resource {
    pub(crate) definition: mcpwire_protocol::model::Resource,
    pub(crate) read: Arc<ReadFn>,
    /// `_meta` of the listing and of the contents read (see [`Resource::with_meta`]).
    pub(crate) meta: Option<Map<String, Value>>,
}

impl Resource {
    /// A resource and its reader.
    pub fn new<F, Fut>(definition: mcpwire_protocol::model::Resource, read: F) -> Self
    where
        F: Fn(RequestContext, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ProtocolError>> + Send + 'static,
    {
        Self {
            definition,
            read: Arc::new(move |ctx, uri, _| Box::pin(read(ctx, uri))),
            meta: None,
        }
    }

    /// Publishes `meta` as the resource's `_meta` in `resources/list`, and
    /// on each of its contents in `resources/read` (extensions such as MCP
    /// Apps read it in both places).
    #[must_use]
    pub fn with_meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The definition `resources/list` publishes, `_meta` included.
    pub(crate) fn listing(&self) -> Value {
        let mut v = serde_json::to_value(&self.definition).unwrap_or(Value::Null);
        if let (Some(meta), Some(obj)) = (&self.meta, v.as_object_mut()) {
            obj.insert("_meta".into(), Value::Object(meta.clone()));
        }
        v
    }

    /// Contents as read, each given the resource's `_meta` unless it has one.
    pub(crate) fn with_contents_meta(&self, contents: Value) -> Value {
        let Some(meta) = &self.meta else {
            return contents;
        };
        let mut contents = contents;
        if let Some(items) = contents.as_array_mut() {
            for obj in items.iter_mut().filter_map(Value::as_object_mut) {
                obj.entry("_meta")
                    .or_insert_with(|| Value::Object(meta.clone()));
            }
        }
        contents
    }
}

/// Resources addressed by an RFC 6570 level-1 URI template
/// (`scheme://path/{var}/more`).
#[derive(Clone)]
pub struct ResourceTemplate {
    pub(crate) definition: mcpwire_protocol::model::ResourceTemplate,
    pub(crate) read: Arc<ReadFn>,
}

impl ResourceTemplate {
    /// A template and its reader, which gets the URI and the variables.
    pub fn new<F, Fut>(definition: mcpwire_protocol::model::ResourceTemplate, read: F) -> Self
    where
        F: Fn(RequestContext, String, Vec<(String, String)>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<ResourceContents>, ProtocolError>> + Send + 'static,
    {
        Self {
            definition,
            read: Arc::new(move |ctx, uri, vars| Box::pin(read(ctx, uri, vars))),
        }
    }

    /// The variables if `uri` matches the template.
    pub(crate) fn matches(&self, uri: &str) -> Option<Vec<(String, String)>> {
        match_template(&self.definition.uri_template, uri)
    }
}

/// Matches a URI against a level-1 template; a variable matches one or
/// more characters other than `/`.
pub(crate) fn match_template(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let mut vars = Vec::new();
    let (mut t, mut u) = (template, uri);
    while !t.is_empty() {
        if let Some(rest) = t.strip_prefix('{') {
            let end = rest.find('}')?;
            let name = &rest[..end];
            t = &rest[end + 1..];
            let stop = t.find('{').map_or(t, |i| &t[..i]);
            let value_end = if stop.is_empty() {
                u.find('/').unwrap_or(u.len())
            } else {
                u.find(stop)?
            };
            let value = &u[..value_end];
            if value.is_empty() || value.contains('/') {
                return None;
            }
            vars.push((name.to_owned(), value.to_owned()));
            u = &u[value_end..];
        } else {
            let lit_end = t.find('{').unwrap_or(t.len());
            u = u.strip_prefix(&t[..lit_end])?;
            t = &t[lit_end..];
        }
    }
    u.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_level_one_templates() {
        let v = match_template("test://template/{id}/data", "test://template/123/data");
        assert_eq!(v, Some(vec![("id".into(), "123".into())]));
        assert_eq!(
            match_template("test://template/{id}/data", "test://template//data"),
            None
        );
        assert_eq!(
            match_template("test://template/{id}/data", "test://template/1/2/data"),
            None
        );
        assert_eq!(
            match_template("a://{x}", "a://y"),
            Some(vec![("x".into(), "y".into())])
        );
    }
}
