//! Protocol revisions and what each one knows about.

use std::fmt;

/// A protocol revision this implementation can speak.
///
/// Ordered by date, so `v >= ProtocolVersion::V2025_06_18` reads as
/// "this revision has the features introduced in 2025-06-18".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// The first public revision (HTTP+SSE era).
    V2024_11_05,
    /// Streamable HTTP, tool annotations, audio content, batching.
    V2025_03_26,
    /// Structured tool output, titles, resource links, elicitation.
    V2025_06_18,
    /// Icons, JSON Schema 2020-12 by default, tasks (experimental).
    V2025_11_25,
    /// The stateless revision: per-request `_meta`, no handshake.
    V2026_07_28,
}

impl ProtocolVersion {
    /// Every supported revision, newest first.
    pub const ALL: [ProtocolVersion; 5] = [
        ProtocolVersion::V2026_07_28,
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
        ProtocolVersion::V2024_11_05,
    ];

    /// The newest revision.
    pub const LATEST: ProtocolVersion = ProtocolVersion::V2026_07_28;

    /// The newest revision that uses the `initialize` handshake; what an
    /// `initialize` asking for an unknown version is answered with.
    pub const LATEST_LEGACY: ProtocolVersion = ProtocolVersion::V2025_11_25;

    /// Parses the wire spelling (`"2025-06-18"`); `None` for anything else.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "2024-11-05" => Self::V2024_11_05,
            "2025-03-26" => Self::V2025_03_26,
            "2025-06-18" => Self::V2025_06_18,
            "2025-11-25" => Self::V2025_11_25,
            "2026-07-28" => Self::V2026_07_28,
            _ => return None,
        })
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// The stateless wire (per-request `_meta`, `resultType`, no handshake).
    pub fn is_modern(self) -> bool {
        self >= Self::V2026_07_28
    }

    /// Wire spellings of every supported revision, newest first.
    pub fn supported_strings() -> Vec<String> {
        Self::ALL.iter().map(|v| v.as_str().to_owned()).collect()
    }

    /// Tool `annotations` and `audio` content exist.
    pub fn has_tool_annotations(self) -> bool {
        self >= Self::V2025_03_26
    }

    /// `title`, `outputSchema`, `structuredContent`, `resource_link`,
    /// `_meta` on tools and content exist.
    pub fn has_structured_output(self) -> bool {
        self >= Self::V2025_06_18
    }

    /// `icons` on tools and implementations exist.
    pub fn has_icons(self) -> bool {
        self >= Self::V2025_11_25
    }

    /// The `completions` server capability exists.
    pub fn has_completions(self) -> bool {
        self >= Self::V2025_03_26
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_revision() {
        for v in ProtocolVersion::ALL {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
        }
        assert_eq!(ProtocolVersion::parse("v999.0.0"), None);
    }

    #[test]
    fn only_2026_is_modern() {
        assert!(ProtocolVersion::V2026_07_28.is_modern());
        assert!(!ProtocolVersion::V2025_11_25.is_modern());
        assert!(ProtocolVersion::V2025_06_18 > ProtocolVersion::V2025_03_26);
    }
}
