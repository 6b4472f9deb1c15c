//! Keyset paging for the list tools: optional `limit` and `cursor` inputs,
//! `total` and `nextCursor` in the output.
//!
//! A cursor is the sort key of the last row a page showed, with the list
//! it belongs to (tool and arguments) and a checksum, base64url-encoded.
//! It is validated on use rather than signed: it grants nothing (the call
//! is checked like any other, and any key is a legitimate position in the
//! list), so the checks only have to turn an edited, cut or misplaced
//! cursor into an error that says what to do. Because the key names a
//! position rather than an offset, a change to the directory between two
//! pages neither repeats nor skips a row that stayed: rows removed
//! meanwhile are gone, rows added after the position show up later, rows
//! added before it are not shown (start again without `cursor` to see
//! them); `total` and the counts are those of the directory at each call.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use employee_directory::page_order::SortKey;
use mcpwire_server::ToolError;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Cursor format version; a cursor of another version is refused.
const VERSION: u8 = 2;

/// Bytes of SHA-256 kept as the checksum.
const CHECK_BYTES: usize = 8;

/// Longest cursor accepted (the input schema says the same).
pub(crate) const MAX_CURSOR_CHARS: usize = 2048;

#[derive(Serialize, Deserialize)]
struct Body {
    v: u8,
    list: String,
    after: SortKey,
}

fn checksum(body: &[u8]) -> [u8; CHECK_BYTES] {
    let digest = Sha256::digest(body);
    let mut out = [0; CHECK_BYTES];
    out.copy_from_slice(&digest[..CHECK_BYTES]);
    out
}

/// The cursor for the rows after `after` in `list`.
pub(crate) fn encode(list: &str, after: SortKey) -> String {
    let body = Body {
        v: VERSION,
        list: list.to_owned(),
        after,
    };
    // Serialising strings cannot fail.
    let mut bytes = serde_json::to_vec(&body).unwrap_or_default();
    let check = checksum(&bytes);
    bytes.extend_from_slice(&check);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The error for a cursor this server did not issue, or that was edited.
pub(crate) fn forged() -> ToolError {
    ToolError::execution(
        "The cursor is not one this tool issued (it was changed, cut or made up). \
         Pass nextCursor exactly as it was returned, or start again without cursor.",
    )
}

/// The list a cursor belongs to and the key it carries, for a tool that
/// knows its list only after the query (the ids it resolves); it then
/// calls [`check_list`].
pub(crate) fn open(cursor: &str) -> Result<(String, SortKey), ToolError> {
    if cursor.len() > MAX_CURSOR_CHARS {
        return Err(forged());
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor.trim())
        .map_err(|_| forged())?;
    let split = bytes.len().checked_sub(CHECK_BYTES).ok_or_else(forged)?;
    let (body, check) = bytes.split_at(split);
    if checksum(body) != check {
        return Err(forged());
    }
    let body: Body = serde_json::from_slice(body).map_err(|_| forged())?;
    if body.v != VERSION {
        return Err(ToolError::execution(
            "The cursor comes from an older version of this server. Start again without cursor.",
        ));
    }
    Ok((body.list, body.after))
}

/// The error for a cursor whose key is not one of this tool's lists
/// (whose names start with `prefix`): made for another tool's list, or
/// forged.
pub(crate) fn unreadable(found: &str, prefix: &str) -> ToolError {
    if found.starts_with(prefix) {
        forged()
    } else {
        another_list()
    }
}

/// The error when a cursor of list `found` is used with list `expected`.
pub(crate) fn check_list(found: &str, expected: &str) -> Result<(), ToolError> {
    if found == expected {
        return Ok(());
    }
    Err(another_list())
}

fn another_list() -> ToolError {
    ToolError::execution(
        "The cursor belongs to another list (other arguments or another tool). Use it with \
         the same arguments it was returned for, or start again without cursor.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(list: &str, cursor: &str) -> Result<SortKey, ToolError> {
        let (found, after) = open(cursor)?;
        check_list(&found, list)?;
        Ok(after)
    }

    #[test]
    fn refuses_edited_foreign_and_made_up_cursors() {
        let c = encode("l", vec!["0003".into()]);
        assert!(decode("l", &c).is_ok());
        assert!(decode("other", &c).is_err());
        let mut edited = c.into_bytes();
        edited[5] = if edited[5] == b'A' { b'B' } else { b'A' };
        assert!(decode("l", &String::from_utf8(edited).unwrap()).is_err());
        assert!(decode("l", "not a cursor").is_err());
        assert!(decode("l", "").is_err());
    }
}
