//! MCP Apps views (the `io.modelcontextprotocol/ui` extension, SEP-1865):
//! a `ui://` resource holding one self-contained HTML document that a host
//! renders in a sandboxed iframe next to a tool's result.
//!
//! ```
//! use mcpwire_server::{CallToolResult, Server, Tool, ToolOutcome, View};
//!
//! let view = View::html("ui://demo/card", "card", "<!doctype html><p>hi</p>");
//! let tool = Tool::builder("show").view("ui://demo/card").raw_handler(|_ctx, _args| async {
//!     Ok(ToolOutcome::Complete(CallToolResult::text("hi")))
//! });
//! let server = Server::builder("demo", "1.0").view(view).tool(tool).build();
//! assert!(server.is_ok());
//! ```
//!
//! A view is static, so its listing and contents carry a content hash
//! (`_meta["dev.mcpwire/etag"]`) a host may cache on.

use std::sync::Arc;

use mcpwire_protocol::ProtocolError;
use mcpwire_protocol::model::{Resource as ResourceDef, ResourceContents};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::resource::Resource;

/// The extension's identifier in `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";
/// The MIME type of a view's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";
/// The `_meta` key holding a view's content hash.
pub const ETAG_META: &str = "dev.mcpwire/etag";
/// The `_meta` key of a `tools/call` a view makes through its host: the
/// view's `ui://` URI. The audit trail records it as the call's `via`
/// (the view declares it and the host passes it on, so it says where a
/// call came from; access control never depends on it).
pub const VIA_META: &str = "dev.mcpwire/view";

/// One view: a `ui://` URI, a name and its HTML (inline CSS and scripts;
/// by default the declared CSP allows no outside origin).
#[derive(Clone, Debug)]
pub struct View {
    uri: String,
    name: String,
    title: Option<String>,
    description: Option<String>,
    html: Arc<str>,
    prefers_border: bool,
    connect_domains: Vec<String>,
    resource_domains: Vec<String>,
}

impl View {
    /// A view serving `html` at `uri` (which must start with `ui://`).
    pub fn html(
        uri: impl Into<String>,
        name: impl Into<String>,
        html: impl Into<Arc<str>>,
    ) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            html: html.into(),
            prefers_border: true,
            connect_domains: Vec::new(),
            resource_domains: Vec::new(),
        }
    }

    /// A display name.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What the view shows.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Whether the host should draw a border around it (`true` by default).
    #[must_use]
    pub fn prefers_border(mut self, yes: bool) -> Self {
        self.prefers_border = yes;
        self
    }

    /// Lets the view fetch from `origin` (`csp.connectDomains`); none by default.
    #[must_use]
    pub fn connect_domain(mut self, origin: impl Into<String>) -> Self {
        self.connect_domains.push(origin.into());
        self
    }

    /// Lets the view load images, fonts or scripts from `origin`
    /// (`csp.resourceDomains`); none by default.
    #[must_use]
    pub fn resource_domain(mut self, origin: impl Into<String>) -> Self {
        self.resource_domains.push(origin.into());
        self
    }

    /// Its `ui://` URI.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// A stable hash of the HTML (hex SHA-256, first 16 bytes).
    pub fn etag(&self) -> String {
        let digest = Sha256::digest(self.html.as_bytes());
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The `_meta` the resource and its contents carry: `ui` (CSP, border)
    /// and the content hash.
    pub fn meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        meta.insert(
            "ui".into(),
            json!({
                "csp": {
                    "connectDomains": self.connect_domains,
                    "resourceDomains": self.resource_domains,
                },
                "prefersBorder": self.prefers_border,
            }),
        );
        meta.insert(ETAG_META.into(), json!(self.etag()));
        meta
    }

    /// Whether the URI is a `ui://` one with something after the scheme.
    pub(crate) fn has_valid_uri(&self) -> bool {
        self.uri
            .strip_prefix("ui://")
            .is_some_and(|r| !r.is_empty())
    }

    /// The resource `resources/list` and `resources/read` serve.
    pub(crate) fn into_resource(self) -> Resource {
        let meta = self.meta();
        let definition = ResourceDef {
            uri: self.uri,
            name: self.name,
            title: self.title,
            description: self.description,
            mime_type: Some(MIME_TYPE.to_owned()),
        };
        let html = self.html;
        Resource::new(definition, move |_ctx, uri| {
            let text = html.to_string();
            async move {
                Ok::<_, ProtocolError>(vec![ResourceContents::Text {
                    uri,
                    mime_type: Some(MIME_TYPE.to_owned()),
                    text,
                }])
            }
        })
        .with_meta(meta)
    }
}

/// Whether the request's client declared MCP Apps in `capabilities.extensions`.
pub(crate) fn client_declares(caps: &Map<String, Value>) -> bool {
    caps.get("extensions")
        .and_then(Value::as_object)
        .is_some_and(|e| e.contains_key(EXTENSION_ID))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_declares_an_empty_csp_and_a_stable_hash() {
        let v = View::html("ui://a/b", "b", "<p>x</p>");
        let meta = v.meta();
        assert_eq!(meta["ui"]["csp"]["connectDomains"], json!([]));
        assert_eq!(meta["ui"]["prefersBorder"], json!(true));
        assert_eq!(meta[ETAG_META], json!(v.etag()));
        assert_eq!(v.etag(), View::html("ui://c", "c", "<p>x</p>").etag());
        assert_ne!(v.etag(), View::html("ui://a/b", "b", "<p>y</p>").etag());
        assert!(v.has_valid_uri());
        assert!(!View::html("https://x", "x", "").has_valid_uri());
    }
}
