//! Every tool the conformance suite calls, grouped by theme.
//!
//! Registration order matters: `http-header-validation` calls the *first*
//! tool of `tools/list` with `arguments: {}`, so a no-argument tool leads.

mod content;
mod diagnostics;
mod headers;
pub mod input;
mod legacy;
mod schema;
mod tasks;

use std::sync::{Arc, OnceLock};

use mcpwire_server::{Server, Tool};

/// All fixture tools, in the order `tools/list` shows them.
pub fn all(server: &Arc<OnceLock<Server>>) -> Vec<Tool> {
    let mut tools = content::tools();
    tools.extend(input::tools());
    tools.extend(legacy::tools());
    tools.extend(diagnostics::tools(server));
    tools.extend(headers::tools());
    tools.extend(schema::tools());
    tools.extend(tasks::tools());
    tools
}

/// Test media shared by tools, resources and prompts.
pub mod media {
    /// A 1x1 PNG.
    pub const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    /// A WAV file (PCM, 8 kHz, mono, 8-bit) with no samples.
    pub const WAV_BASE64: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";
}
