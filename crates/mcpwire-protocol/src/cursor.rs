//! Opaque pagination cursors.
//!
//! A cursor names a position in one version of a list: the list's
//! generation (bumped on every change) and an offset. A cursor from an
//! older generation is rejected, so a client never silently skips or
//! repeats items after the list changed; it restarts from the first page.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Encodes a position as an opaque string.
pub fn encode(generation: u64, offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(format!("mcp1:{generation}:{offset}"))
}

/// Decodes a cursor; `None` for anything this server did not issue.
pub fn decode(cursor: &str) -> Option<(u64, usize)> {
    let bytes = URL_SAFE_NO_PAD.decode(cursor).ok()?;
    let text = std::str::from_utf8(&bytes).ok()?;
    let mut parts = text.strip_prefix("mcp1:")?.split(':');
    let generation = parts.next()?.parse().ok()?;
    let offset = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((generation, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_foreign_cursors() {
        assert_eq!(decode(&encode(3, 50)), Some((3, 50)));
        assert_eq!(decode("optional-cursor-value"), None);
        assert_eq!(decode(""), None);
    }
}
