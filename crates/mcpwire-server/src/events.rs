//! Server-wide events that open subscriptions fan out to clients.

/// Something changed that clients may want to know about.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum ServerEvent {
    /// The tool set changed.
    ToolsChanged,
    /// The prompt set changed.
    PromptsChanged,
    /// The resource set changed.
    ResourcesChanged,
    /// One resource's contents changed.
    ResourceUpdated(String),
}

impl ServerEvent {
    /// The notification method that announces this event.
    pub fn method(&self) -> &'static str {
        match self {
            Self::ToolsChanged => "notifications/tools/list_changed",
            Self::PromptsChanged => "notifications/prompts/list_changed",
            Self::ResourcesChanged => "notifications/resources/list_changed",
            Self::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }
}
