//! The `requestState` signing key every replica must share: from
//! `--request-state-key-file`, or (PostgreSQL, no file) one key created
//! once for the cluster and read by every replica.
//!
//! The database copy is as secret as the database: anyone who can read
//! `mcp_request_state_key` can forge request states. Operators who keep
//! the database readable to others use the key file instead.

use deadpool_postgres::Pool;
use sha2::{Digest, Sha256};

/// The key table (one row).
pub const MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS mcp_request_state_key (
    id      smallint PRIMARY KEY CHECK (id = 1),
    key     bytea NOT NULL CHECK (length(key) = 32),
    created timestamptz NOT NULL DEFAULT now()
);
";

/// Fewest key bytes accepted (256 bits).
const MIN_KEY_BYTES: usize = 32;

/// Reads a key file: at least 32 bytes, as hex (64+ hex digits, spaces
/// and newlines ignored) or raw. Longer keys are hashed down to 32 bytes.
pub fn from_file(path: &std::path::Path) -> Result<[u8; 32], String> {
    let raw = std::fs::read(path).map_err(|e| {
        format!(
            "cannot read the request-state key file {}: {e}",
            path.display()
        )
    })?;
    let bytes = decode(&raw);
    if bytes.len() < MIN_KEY_BYTES {
        return Err(format!(
            "the request-state key file {} holds {} bytes; it needs at least {MIN_KEY_BYTES} random bytes (e.g. `openssl rand -hex 32 > FILE`)",
            path.display(),
            bytes.len()
        ));
    }
    // A key of a few repeated values is no secret.
    let mut distinct = bytes.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 16 {
        return Err(format!(
            "the request-state key file {} does not look random (only {} distinct byte values); generate one with `openssl rand -hex 32`",
            path.display(),
            distinct.len()
        ));
    }
    Ok(fold(&bytes))
}

/// Hex when the whole file is hex digits (and whitespace), else raw.
fn decode(raw: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = raw
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let is_hex = !digits.is_empty()
        && digits.len().is_multiple_of(2)
        && digits.iter().all(u8::is_ascii_hexdigit);
    if !is_hex {
        return raw.to_vec();
    }
    digits
        .chunks(2)
        .filter_map(|pair| {
            let s = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(s, 16).ok()
        })
        .collect()
}

/// Exactly 32 bytes: the key itself, or a SHA-256 of a longer one.
fn fold(bytes: &[u8]) -> [u8; 32] {
    let mut key = [0u8; 32];
    if bytes.len() == 32 {
        key.copy_from_slice(bytes);
    } else {
        key.copy_from_slice(&Sha256::digest(bytes));
    }
    key
}

/// The cluster's key: created by the first replica that asks (with OS
/// randomness), read by every other.
pub async fn shared(pool: &Pool) -> Result<[u8; 32], String> {
    let mut fresh = [0u8; 32];
    getrandom::fill(&mut fresh).map_err(|e| format!("no OS randomness for a key: {e}"))?;
    let client = pool
        .get()
        .await
        .map_err(|e| format!("cannot reach PostgreSQL for the request-state key: {e}"))?;
    let failed = |e: tokio_postgres::Error| {
        format!(
            "reading the request-state key failed: {}",
            super::db_message(&e)
        )
    };
    client
        .execute(
            "INSERT INTO mcp_request_state_key (id, key) VALUES (1, $1) ON CONFLICT DO NOTHING",
            &[&fresh.as_slice()],
        )
        .await
        .map_err(failed)?;
    let row = client
        .query_one("SELECT key FROM mcp_request_state_key WHERE id = 1", &[])
        .await
        .map_err(failed)?;
    let stored: Vec<u8> = row.try_get(0).map_err(failed)?;
    <[u8; 32]>::try_from(stored.as_slice())
        .map_err(|_| "the stored request-state key is not 32 bytes".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fresh_pool;

    fn write(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("keytest-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write key");
        path
    }

    #[test]
    fn key_files_are_hex_or_raw_and_weak_ones_are_refused() {
        let raw: Vec<u8> = (0u8..32)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        let from_hex = from_file(&write("hex", format!("{hex}\n").as_bytes())).expect("hex");
        let from_raw = from_file(&write("raw", &raw)).expect("raw");
        assert_eq!(from_hex, from_raw);
        assert_eq!(from_raw.as_slice(), raw.as_slice());

        let short = from_file(&write("short", &hex.as_bytes()[..62]));
        assert!(short.is_err_and(|e| e.contains("at least 32")));
        let zeros = from_file(&write("zeros", &[0u8; 64]));
        assert!(zeros.is_err_and(|e| e.contains("random")));
        assert!(from_file(std::path::Path::new("/nonexistent/key")).is_err());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_cluster_key_is_created_once() {
        let (_, pool) = fresh_pool().await;
        let first = shared(&pool).await.expect("key");
        let second = shared(&pool).await.expect("key");
        assert_eq!(first, second);
        assert_ne!(first, [0u8; 32]);
    }
}
