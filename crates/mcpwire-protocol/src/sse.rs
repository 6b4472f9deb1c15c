//! The `text/event-stream` framing of Streamable HTTP, parsed
//! incrementally with no I/O: the one parser the library's client, the
//! benchmark and the tests share.
//!
//! Only the `data` field carries MCP: a server that answers a POST with an
//! SSE stream puts each JSON-RPC message into the data of one event. Other
//! fields (`id`, `event`, `retry`) and comments are skipped; an event with
//! no `data` line (a priming event) yields nothing.

/// Incremental SSE parser: feed it body chunks, get back the data of every
/// event that was completed by that chunk.
#[derive(Debug, Default)]
pub struct SseParser {
    /// Bytes of a line not yet terminated by a newline.
    pending: Vec<u8>,
    /// Data lines of the event being read, joined with `\n`.
    data: String,
    /// Whether the current event has had at least one `data` line; an event
    /// with `data:` and nothing after it still counts (its data is "").
    has_data: bool,
}

impl SseParser {
    /// Creates an empty parser.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk of the body and returns the data of each event that
    /// the chunk completed, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        self.pending.extend_from_slice(chunk);
        // Split on '\n' only; a trailing '\r' is stripped per line below.
        // Chunk boundaries can fall inside a UTF-8 sequence, but never inside
        // a line we have already cut at '\n', so decoding per line is safe.
        let mut start = 0;
        while let Some(pos) = self.pending[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let line = String::from_utf8_lossy(&self.pending[start..end]).into_owned();
            start = end + 1;
            self.line(line.strip_suffix('\r').unwrap_or(&line), &mut events);
        }
        self.pending.drain(..start);
        events
    }

    /// Bytes held for the event being read (its data so far and an
    /// unterminated line): a reader bounds this against a hostile or
    /// broken stream that never ends an event.
    pub fn buffered(&self) -> usize {
        self.pending.len() + self.data.len()
    }

    /// Ends the stream: a last line without a newline and a last event
    /// without its blank line are still delivered (servers that close right
    /// after the response should not lose it).
    pub fn finish(&mut self) -> Vec<String> {
        let mut events = Vec::new();
        if !self.pending.is_empty() {
            let line = String::from_utf8_lossy(&self.pending).into_owned();
            self.pending.clear();
            self.line(line.strip_suffix('\r').unwrap_or(&line), &mut events);
        }
        self.line("", &mut events);
        events
    }

    fn line(&mut self, line: &str, events: &mut Vec<String>) {
        if line.is_empty() {
            if self.has_data {
                events.push(std::mem::take(&mut self.data));
                self.has_data = false;
            }
            return;
        }
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.has_data = true;
        }
    }
}

/// The data of every event in a whole body `text` (the last one even
/// without its blank line).
pub fn events(text: &str) -> Vec<String> {
    let mut parser = SseParser::new();
    let mut out = parser.push(text.as_bytes());
    out.extend(parser.finish());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_event_in_one_chunk() {
        let mut p = SseParser::new();
        let got = p.push(b"event: message\nid: 1\ndata: {\"id\":1}\n\n");
        assert_eq!(got, vec![r#"{"id":1}"#.to_string()]);
        assert!(p.finish().is_empty());
    }

    #[test]
    fn event_split_across_chunks_with_crlf_and_comments() {
        let mut p = SseParser::new();
        assert!(p.push(b": keep-alive\r\n\r\nda").is_empty());
        assert!(p.push(b"ta: {\"a\":").is_empty());
        assert!(p.push(b"1}\r\n").is_empty());
        assert_eq!(p.push(b"\r\n"), vec![r#"{"a":1}"#.to_string()]);
    }

    #[test]
    fn multi_line_data_and_priming_event() {
        let mut p = SseParser::new();
        // A priming event (id only, no data) must not produce anything.
        let got = p.push(b"id: 0\n\ndata: line1\ndata:line2\n\ndata: x\n\n");
        assert_eq!(got, vec!["line1\nline2".to_string(), "x".to_string()]);
    }

    #[test]
    fn finish_flushes_unterminated_event() {
        let mut p = SseParser::new();
        assert!(p.push(b"data: tail").is_empty());
        assert_eq!(p.finish(), vec!["tail".to_string()]);
    }
}
