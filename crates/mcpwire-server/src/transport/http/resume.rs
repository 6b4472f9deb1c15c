//! Resumable request streams of 2025-11-25 sessions (SSE polling, SEP-1699).
//!
//! When a POST of a 2025-11-25 session turns into an SSE stream, the stream
//! gets a number unique in its session and every event an id
//! `<stream>_<seq>`: the priming event (sequence 0, empty `data`, with a
//! `retry:` hint) and then one per message. The messages are recorded here,
//! decoupled from the HTTP connection: the server may close the connection
//! (a handler calls `RequestContext::close_sse_stream`) while the request
//! goes on, and the client resumes with `GET` + `Last-Event-ID`, getting the
//! later events of that same stream only, then the rest until the response.
//!
//! A `Last-Event-ID` that names no recorded stream of the session (never
//! issued, another session's, or a record already dropped) is answered
//! 400: the session itself is fine (404 would tell the client to start a
//! new one), and a fresh standalone stream would leave the client waiting
//! for a response that can never come on it.
//!
//! Bounds: per stream at most [`MAX_EVENTS_PER_STREAM`] events and
//! [`MAX_BYTES_PER_STREAM`] bytes, per session at most
//! [`MAX_STREAMS_PER_SESSION`] records and about [`MAX_BYTES_PER_SESSION`]
//! bytes; past them the oldest events of the growing stream are dropped
//! (never its newest one, so the response survives), and opening a stream
//! evicts the oldest records (finished ones first). A record is dropped
//! once its response was delivered and the client sent another request,
//! or [`DONE_TTL`] after the response, whichever comes first.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use futures_util::stream::{self, StreamExt};
use http::{HeaderValue, StatusCode, header};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// The reconnection delay suggested to clients (`retry:`).
pub(crate) const RETRY: Duration = Duration::from_millis(1000);
/// Events kept per stream.
pub(crate) const MAX_EVENTS_PER_STREAM: usize = 256;
/// Bytes of message data kept per stream.
pub(crate) const MAX_BYTES_PER_STREAM: usize = 2 << 20;
/// Stream records kept per session.
pub(crate) const MAX_STREAMS_PER_SESSION: usize = 32;
/// Bytes of message data kept per session (soft: a stream's newest event is
/// always kept).
pub(crate) const MAX_BYTES_PER_SESSION: usize = 8 << 20;
/// How long a finished stream stays resumable.
pub(crate) const DONE_TTL: Duration = Duration::from_secs(300);

/// The recorded streams of one session.
#[derive(Default)]
pub(crate) struct EventStore {
    next_stream: AtomicU64,
    /// Oldest first.
    streams: Mutex<VecDeque<Arc<StreamRecord>>>,
    /// Bytes held by this session's records (live or evicted but still
    /// referenced by a connection).
    bytes: Arc<AtomicUsize>,
}

impl EventStore {
    /// Starts recording a new stream.
    pub(crate) fn open(&self) -> Arc<StreamRecord> {
        let id = self.next_stream.fetch_add(1, Ordering::Relaxed) + 1;
        let record = Arc::new(StreamRecord {
            id,
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                next_seq: 1,
                bytes: 0,
                done_at: None,
                delivered: false,
                connection: None,
            }),
            changed: watch::Sender::new(()),
            session_bytes: Arc::clone(&self.bytes),
        });
        let mut streams = lock(&self.streams);
        prune(&mut streams);
        while streams.len() >= MAX_STREAMS_PER_SESSION
            || (!streams.is_empty() && self.bytes.load(Ordering::Relaxed) > MAX_BYTES_PER_SESSION)
        {
            let victim = streams.iter().position(|s| s.is_done()).unwrap_or(0);
            if let Some(s) = streams.remove(victim) {
                s.clear();
            }
        }
        streams.push_back(Arc::clone(&record));
        record
    }

    /// Drops records whose response was delivered (the client has sent
    /// another request since) or that finished long ago.
    pub(crate) fn prune(&self) {
        prune(&mut lock(&self.streams));
    }

    /// The stream a `Last-Event-ID` names, and the sequence number to
    /// replay after; `None` if it names no recorded stream of this session.
    pub(crate) fn find(&self, last_event_id: &str) -> Option<(Arc<StreamRecord>, u64)> {
        let (stream, seq) = last_event_id.trim().split_once('_')?;
        let stream: u64 = stream.parse().ok()?;
        let seq: u64 = seq.parse().ok()?;
        let record = lock(&self.streams)
            .iter()
            .find(|s| s.id == stream)
            .cloned()?;
        let issued = seq < lock(&record.inner).next_seq;
        issued.then_some((record, seq))
    }
}

fn prune(streams: &mut VecDeque<Arc<StreamRecord>>) {
    streams.retain(|s| {
        let i = lock(&s.inner);
        let keep = !i.delivered && i.done_at.is_none_or(|t| t.elapsed() < DONE_TTL);
        drop(i);
        if !keep {
            s.clear();
        }
        keep
    });
}

/// One recorded stream: its events, whether its response is in, and the
/// connection currently delivering it.
pub(crate) struct StreamRecord {
    id: u64,
    inner: Mutex<Inner>,
    /// Bumped on every change, to wake the delivering connection.
    changed: watch::Sender<()>,
    session_bytes: Arc<AtomicUsize>,
}

struct Inner {
    /// (sequence number, JSON message), oldest first.
    events: VecDeque<(u64, String)>,
    next_seq: u64,
    bytes: usize,
    /// When the handler finished (its response, if any, is the last event).
    done_at: Option<Instant>,
    /// The last event went out on a connection.
    delivered: bool,
    /// The connection delivering this stream now.
    connection: Option<CancellationToken>,
}

enum Next {
    Event { seq: u64, data: String, last: bool },
    Wait,
    End,
}

impl StreamRecord {
    fn event_id(&self, seq: u64) -> String {
        format!("{}_{seq}", self.id)
    }

    fn is_done(&self) -> bool {
        lock(&self.inner).done_at.is_some()
    }

    /// Records a message.
    pub(crate) fn push(&self, data: String) {
        let mut i = lock(&self.inner);
        let seq = i.next_seq;
        i.next_seq += 1;
        i.bytes += data.len();
        self.session_bytes.fetch_add(data.len(), Ordering::Relaxed);
        i.events.push_back((seq, data));
        while i.events.len() > 1
            && (i.events.len() > MAX_EVENTS_PER_STREAM
                || i.bytes > MAX_BYTES_PER_STREAM
                || self.session_bytes.load(Ordering::Relaxed) > MAX_BYTES_PER_SESSION)
        {
            if let Some((_, old)) = i.events.pop_front() {
                i.bytes -= old.len();
                self.session_bytes.fetch_sub(old.len(), Ordering::Relaxed);
            }
        }
        drop(i);
        self.changed.send_replace(());
    }

    /// The handler finished; `response` is its reply, if it has one.
    pub(crate) fn finish(&self, response: Option<String>) {
        if let Some(r) = response {
            self.push(r);
        }
        lock(&self.inner).done_at = Some(Instant::now());
        self.changed.send_replace(());
    }

    /// A new connection takes over delivery; the previous one (if any) ends.
    pub(crate) fn attach(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Some(old) = lock(&self.inner).connection.replace(token.clone()) {
            old.cancel();
        }
        token
    }

    /// Ends the delivering connection; the stream itself goes on.
    pub(crate) fn close_connection(&self) {
        if let Some(c) = lock(&self.inner).connection.take() {
            c.cancel();
        }
    }

    fn clear(&self) {
        let mut i = lock(&self.inner);
        self.session_bytes.fetch_sub(i.bytes, Ordering::Relaxed);
        i.bytes = 0;
        i.events.clear();
        i.delivered = true;
        drop(i);
        self.changed.send_replace(());
    }

    fn next_after(&self, cursor: u64) -> Next {
        let mut i = lock(&self.inner);
        let done = i.done_at.is_some();
        let n = i.events.len();
        match i.events.iter().position(|(seq, _)| *seq > cursor) {
            Some(p) => {
                let (seq, data) = i.events[p].clone();
                let last = done && p + 1 == n;
                if last {
                    i.delivered = true;
                }
                Next::Event { seq, data, last }
            }
            None if done || i.delivered => Next::End,
            None => Next::Wait,
        }
    }
}

impl Drop for StreamRecord {
    fn drop(&mut self) {
        let bytes = lock(&self.inner).bytes;
        self.session_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }
}

fn message_event(id: &str, data: &str) -> Bytes {
    let mut s = format!("event: message\nid: {id}\n");
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line.strip_suffix('\r').unwrap_or(line));
        s.push('\n');
    }
    s.push('\n');
    Bytes::from(s)
}

struct Reader {
    record: Arc<StreamRecord>,
    cursor: u64,
    connection: CancellationToken,
    session_closed: CancellationToken,
    changed: watch::Receiver<()>,
}

impl Reader {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if self.connection.is_cancelled() || self.session_closed.is_cancelled() {
                return None;
            }
            self.changed.borrow_and_update();
            match self.record.next_after(self.cursor) {
                Next::Event { seq, data, last } => {
                    self.cursor = seq;
                    if last {
                        // Nothing follows the response: end with it.
                        self.connection.cancel();
                    }
                    return Some(message_event(&self.record.event_id(seq), &data));
                }
                Next::End => return None,
                Next::Wait => {}
            }
            tokio::select! {
                _ = self.connection.cancelled() => return None,
                _ = self.session_closed.cancelled() => return None,
                r = self.changed.changed() => if r.is_err() { return None },
            }
        }
    }
}

/// An SSE response delivering `record` after `cursor` on `connection`,
/// starting with the priming event when `prime`.
pub(crate) fn response(
    record: Arc<StreamRecord>,
    cursor: u64,
    connection: CancellationToken,
    session_closed: CancellationToken,
    prime: bool,
) -> Response {
    let priming = prime.then(|| {
        Bytes::from(format!(
            "id: {}\nretry: {}\ndata: \n\n",
            record.event_id(0),
            RETRY.as_millis()
        ))
    });
    let reader = Reader {
        changed: record.changed.subscribe(),
        record,
        cursor,
        connection,
        session_closed,
    };
    let rest = stream::unfold(reader, |mut r| async move {
        let chunk = r.next().await?;
        Some((chunk, r))
    });
    let body = stream::iter(priming).chain(rest).map(Ok::<_, Infallible>);
    let mut r = (StatusCode::OK, Body::from_stream(body)).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}
