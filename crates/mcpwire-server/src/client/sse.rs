//! Server-Sent Events read from an HTTP response body: each event's `data:`
//! lines form one JSON-RPC message.

use axum::body::{Body, BodyDataStream};
use futures_util::StreamExt;
use serde_json::Value;

use super::ClientError;

/// Largest event the client buffers; a server streaming more without a
/// blank line is broken or hostile.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Reads one SSE response event by event.
pub(super) struct SseReader {
    body: BodyDataStream,
    buf: Vec<u8>,
    ended: bool,
}

impl SseReader {
    pub(super) fn new(body: Body) -> Self {
        Self {
            body: body.into_data_stream(),
            buf: Vec::new(),
            ended: false,
        }
    }

    /// The next JSON message; `None` once the stream ended. Events without
    /// data (priming events, keep-alive comments) are skipped.
    pub(super) async fn next(&mut self) -> Result<Option<Value>, ClientError> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                match data_of(&block) {
                    Some(data) => {
                        return serde_json::from_str(&data).map(Some).map_err(|e| {
                            ClientError::Malformed(format!("SSE data is not JSON ({e}): {data}"))
                        });
                    }
                    None => continue,
                }
            }
            if self.ended {
                return Ok(None);
            }
            if self.buf.len() > MAX_EVENT_BYTES {
                return Err(ClientError::Malformed(format!(
                    "an SSE event exceeds {MAX_EVENT_BYTES} bytes"
                )));
            }
            match self.body.next().await {
                // CR LF and LF both end lines; JSON data never holds a raw CR.
                Some(Ok(chunk)) => self.buf.extend(chunk.iter().filter(|&&b| b != b'\r')),
                Some(Err(e)) => return Err(ClientError::Transport(e.to_string())),
                None => self.ended = true,
            }
        }
    }
}

/// The joined `data:` lines of one event, if it has any that are not empty.
fn data_of(block: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(block);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    let joined = data.join("\n");
    (!joined.trim().is_empty()).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn events_are_split_joined_and_priming_skipped() {
        let body = Body::from(
            "id: 1\ndata:\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: keep-alive\n\ndata: [2]\n\n",
        );
        let mut r = SseReader::new(body);
        assert_eq!(r.next().await, Ok(Some(serde_json::json!({ "a": 1 }))));
        assert_eq!(r.next().await, Ok(Some(serde_json::json!([2]))));
        assert_eq!(r.next().await, Ok(None));
    }

    #[tokio::test]
    async fn data_that_is_not_json_is_an_error() {
        let mut r = SseReader::new(Body::from("data: nope\n\n"));
        assert!(matches!(r.next().await, Err(ClientError::Malformed(_))));
    }
}
