//! Server-Sent Events read from an HTTP response body: each event's `data:`
//! lines form one JSON-RPC message (framing by the protocol crate's
//! [`SseParser`]).

use std::collections::VecDeque;

use axum::body::{Body, BodyDataStream};
use futures_util::StreamExt;
use mcpwire_protocol::sse::SseParser;
use serde_json::Value;

use super::ClientError;

/// Largest event the client buffers; a server streaming more without a
/// blank line is broken or hostile.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Reads one SSE response event by event.
pub(super) struct SseReader {
    body: BodyDataStream,
    parser: SseParser,
    /// Events parsed but not handed out yet.
    ready: VecDeque<String>,
    ended: bool,
}

impl SseReader {
    pub(super) fn new(body: Body) -> Self {
        Self {
            body: body.into_data_stream(),
            parser: SseParser::new(),
            ready: VecDeque::new(),
            ended: false,
        }
    }

    /// The next JSON message; `None` once the stream ended. Events without
    /// data (priming events, keep-alive comments) are skipped.
    pub(super) async fn next(&mut self) -> Result<Option<Value>, ClientError> {
        loop {
            if let Some(data) = self.ready.pop_front() {
                if data.trim().is_empty() {
                    continue;
                }
                return serde_json::from_str(&data).map(Some).map_err(|e| {
                    ClientError::Malformed(format!("SSE data is not JSON ({e}): {data}"))
                });
            }
            if self.ended {
                return Ok(None);
            }
            if self.parser.buffered() > MAX_EVENT_BYTES {
                return Err(ClientError::Malformed(format!(
                    "an SSE event exceeds {MAX_EVENT_BYTES} bytes"
                )));
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.ready.extend(self.parser.push(&chunk)),
                Some(Err(e)) => return Err(ClientError::Transport(e.to_string())),
                None => {
                    self.ended = true;
                    self.ready.extend(self.parser.finish());
                }
            }
        }
    }
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
