//! Resources and the resource template the resources-* scenarios read.

use mcpwire_server::protocol::ProtocolError;
use mcpwire_server::protocol::model::{
    Resource as ResourceDef, ResourceContents, ResourceTemplate as TemplateDef,
};
use mcpwire_server::{RequestContext, Resource, ResourceTemplate};
use serde_json::json;

use crate::tools::media::PNG_BASE64;

/// The static resources. `test://static-text` comes first: the caching
/// scenario reads the first listed resource.
pub fn all() -> Vec<Resource> {
    vec![
        text(
            "test://static-text",
            "static-text",
            "A static text resource.",
            "This is the content of the static text resource.",
        ),
        Resource::new(
            definition(
                "test://static-binary",
                "static-binary",
                "A static binary resource (a PNG image).",
                "image/png",
            ),
            |_ctx: RequestContext, uri: String| async move {
                Ok::<_, ProtocolError>(vec![ResourceContents::Blob {
                    uri,
                    mime_type: Some("image/png".to_owned()),
                    blob: PNG_BASE64.to_owned(),
                }])
            },
        ),
        // resources-subscribe / resources-unsubscribe watch this one.
        text(
            "test://watched-resource",
            "watched-resource",
            "A resource clients can subscribe to.",
            "This is the watched resource content.",
        ),
    ]
}

/// The resource templates.
pub fn templates() -> Vec<ResourceTemplate> {
    vec![ResourceTemplate::new(
        TemplateDef {
            uri_template: "test://template/{id}/data".to_owned(),
            name: "template-data".to_owned(),
            title: None,
            description: Some("Data for any id.".to_owned()),
            mime_type: Some("application/json".to_owned()),
        },
        |_ctx: RequestContext, uri: String, vars: Vec<(String, String)>| async move {
            let id = vars
                .into_iter()
                .find(|(name, _)| name == "id")
                .map(|(_, value)| value)
                .unwrap_or_default();
            let body =
                json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
            Ok::<_, ProtocolError>(vec![ResourceContents::Text {
                uri,
                mime_type: Some("application/json".to_owned()),
                text: body.to_string(),
            }])
        },
    )]
}

fn definition(uri: &str, name: &str, description: &str, mime_type: &str) -> ResourceDef {
    ResourceDef {
        uri: uri.to_owned(),
        name: name.to_owned(),
        title: None,
        description: Some(description.to_owned()),
        mime_type: Some(mime_type.to_owned()),
    }
}

/// A plain-text resource with fixed contents.
fn text(uri: &str, name: &str, description: &str, contents: &'static str) -> Resource {
    Resource::new(
        definition(uri, name, description, "text/plain"),
        move |_ctx: RequestContext, uri: String| async move {
            Ok::<_, ProtocolError>(vec![ResourceContents::Text {
                uri,
                mime_type: Some("text/plain".to_owned()),
                text: contents.to_owned(),
            }])
        },
    )
}
