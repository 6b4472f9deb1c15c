//! The stdio transport: one JSON-RPC message per line on stdin, responses
//! and notifications as lines on stdout, nothing else on stdout.
//!
//! This file only moves bytes: a bounded line reader, a single writer task
//! that owns stdout (so lines never interleave), and the signals that stop
//! it. Everything else is the engine's [`Connection`](crate::engine::Connection): lines are taken in
//! order (an `initialize` is in effect before the next line is read),
//! requests run concurrently.
//!
//! It stops on EOF, on SIGTERM/SIGINT ([`serve_stdio`]), or when stdout
//! breaks. On EOF and signals, open subscriptions end and in-flight
//! requests finish before it returns; a broken stdout cancels them, as
//! nobody is left to read their answers.

use std::future::Future;
use std::sync::Arc;

use tokio::io::{
    AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, BufWriter,
};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::engine::MessageLimits;
use crate::server::Server;

#[cfg(target_os = "linux")]
mod pipes;

/// Limits of the stdio transport.
#[derive(Clone, Debug)]
pub struct StdioConfig {
    /// Longest accepted line (one message), in bytes.
    pub max_message_bytes: usize,
    /// Deepest JSON nesting accepted.
    pub max_json_depth: usize,
    /// Values attached to every request, e.g. the
    /// [`Principal`](crate::Principal) built from environment credentials
    /// (stdio has no per-request authentication).
    pub extensions: Arc<http::Extensions>,
}

impl Default for StdioConfig {
    fn default() -> Self {
        Self {
            max_message_bytes: 4 * 1024 * 1024,
            max_json_depth: 64,
            extensions: Arc::new(http::Extensions::new()),
        }
    }
}

/// Serves on the process's stdin and stdout until stdin closes, stdout
/// breaks, or the process gets SIGTERM or SIGINT.
///
/// When both are pipes (as MCP clients start servers), on Linux they are
/// polled by the I/O reactor rather than read and written on the blocking
/// thread pool, which halves a round trip. Otherwise (a terminal, a file)
/// tokio's stdin is used, and after a signal it still has a blocking read
/// in flight, which a runtime shutdown waits for: end the process with
/// [`std::process::exit`] once this returns, rather than by returning
/// from `main`.
pub async fn serve_stdio(server: Server, config: StdioConfig) -> std::io::Result<()> {
    // The read loop runs as a task on the runtime's workers, next to the
    // request tasks it spawns and the writer: under `#[tokio::main]` the
    // caller's future runs on the main thread, and every line would then
    // cross threads twice (reactor -> main thread -> worker).
    let served = tokio::spawn(async move {
        #[cfg(target_os = "linux")]
        if let Some((reader, writer)) = pipes::open() {
            tracing::debug!("stdio on non-blocking pipes");
            return serve_until(server, config, reader, writer, super::shutdown_signal()).await;
        }
        serve_until(
            server,
            config,
            tokio::io::stdin(),
            tokio::io::stdout(),
            super::shutdown_signal(),
        )
        .await
    });
    served
        .await
        .unwrap_or_else(|e| Err(std::io::Error::other(e)))
}

/// Serves on any byte streams (stdin/stdout, a socket, a test pipe) until
/// the reader ends or the writer breaks.
pub async fn serve<R, W>(
    server: Server,
    config: StdioConfig,
    reader: R,
    writer: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_until(server, config, reader, writer, std::future::pending()).await
}

/// Like [`serve`], and also stops reading when `shutdown` resolves.
pub async fn serve_until<R, W, F>(
    server: Server,
    config: StdioConfig,
    reader: R,
    writer: W,
    shutdown: F,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
    F: Future<Output = ()>,
{
    let (out, out_rx) = mpsc::channel::<String>(256);
    let broken = CancellationToken::new();
    let writer_task = tokio::spawn(write_lines(writer, out_rx, broken.clone()));
    let limits = MessageLimits {
        max_bytes: config.max_message_bytes,
        max_depth: config.max_json_depth,
    };
    let conn = server.connection(out, Arc::clone(&config.extensions), limits);
    let mut lines = LineReader::new(BufReader::new(reader), config.max_message_bytes);
    tokio::pin!(shutdown);
    loop {
        let frame = tokio::select! {
            f = lines.next() => f,
            () = &mut shutdown => {
                tracing::info!("shutting down: finishing in-flight requests");
                break;
            }
            () = broken.cancelled() => {
                tracing::warn!("stdout closed; stopping");
                conn.abort();
                break;
            }
        };
        match frame {
            Ok(Frame::Line(bytes)) if bytes.trim_ascii().is_empty() => {}
            Ok(Frame::Line(bytes)) => conn.receive(&bytes).await,
            Ok(Frame::TooLong) => conn.reject_too_large().await,
            Ok(Frame::Eof) => {
                tracing::info!("stdin closed; finishing in-flight requests");
                break;
            }
            Err(e) => {
                tracing::warn!(error = %e, "stdin read failed; stopping");
                break;
            }
        }
    }
    conn.finish().await;
    drop(conn);
    match writer_task.await {
        Ok(r) => r,
        Err(e) => Err(std::io::Error::other(e)),
    }
}

/// Writes every queued line; flushes when the queue runs dry (one flush
/// per burst, not per line). On a write error, fires `broken` and stops.
async fn write_lines<W>(
    writer: W,
    mut lines: mpsc::Receiver<String>,
    broken: CancellationToken,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    // A line and its newline leave in one write(2): unbuffered, the
    // client would wake up for a line without its end, then again.
    let mut writer = BufWriter::with_capacity(64 * 1024, writer);
    let result = async {
        while let Some(line) = lines.recv().await {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            if lines.is_empty() {
                writer.flush().await?;
            }
        }
        writer.flush().await
    }
    .await;
    if result.is_err() {
        broken.cancel();
    }
    result
}

/// One unit read from stdin.
enum Frame {
    /// A complete line, without its newline.
    Line(Vec<u8>),
    /// A line over the limit; its bytes were skipped, not kept.
    TooLong,
    /// The input ended.
    Eof,
}

/// Splits input into lines of at most `max` bytes without ever holding
/// more than that: an oversize line is skipped up to its newline. The
/// state lives here, so [`next`](Self::next) can be cancelled between
/// reads without losing bytes.
struct LineReader<R> {
    reader: R,
    line: Vec<u8>,
    /// Skipping the rest of an oversize line.
    skipping: bool,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    fn new(reader: R, max: usize) -> Self {
        Self {
            reader,
            line: Vec::new(),
            skipping: false,
            max,
        }
    }

    async fn next(&mut self) -> std::io::Result<Frame> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(self.end());
            }
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.unwrap_or(available.len());
            if !self.skipping && self.line.len() + take > self.max {
                self.skipping = true;
                self.line = Vec::new();
            }
            if !self.skipping {
                self.line.extend_from_slice(&available[..take]);
            }
            let consumed = newline.map_or(take, |i| i + 1);
            self.reader.consume(consumed);
            if newline.is_some() {
                return Ok(self.take_line());
            }
        }
    }

    fn take_line(&mut self) -> Frame {
        if std::mem::take(&mut self.skipping) {
            Frame::TooLong
        } else {
            Frame::Line(std::mem::take(&mut self.line))
        }
    }

    /// At EOF, a last line without a newline still counts.
    fn end(&mut self) -> Frame {
        if self.skipping || !self.line.is_empty() {
            self.take_line()
        } else {
            Frame::Eof
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8], max: usize) -> Vec<String> {
        let mut r = LineReader::new(input, max);
        let mut out = Vec::new();
        loop {
            match r.next().await {
                Ok(Frame::Line(l)) => out.push(String::from_utf8_lossy(&l).into_owned()),
                Ok(Frame::TooLong) => out.push("<too long>".to_owned()),
                Ok(Frame::Eof) | Err(_) => return out,
            }
        }
    }

    #[tokio::test]
    async fn oversize_lines_are_skipped_and_reading_goes_on() {
        let got = frames(b"ab\n0123456789\ncd\nlast", 4).await;
        assert_eq!(got, ["ab", "<too long>", "cd", "last"]);
    }
}
