//! The client's child-process mode (feature `client-stdio`): the server
//! is a process spawned with piped stdin and stdout, speaking the stdio
//! transport (one JSON-RPC message per line). Lines it writes are routed
//! like the in-memory transport's ([`link::deliver`]); a server→client
//! request is answered with a line on its stdin.

use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{Mutex, mpsc};
use tokio::task::AbortHandle;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::link::{self, Routes};
use super::{ClientError, InputHandler};
use crate::sync::lock;

/// Longest line the client reads from the child; a longer one is skipped
/// (a server writing that much without a newline is broken or hostile).
const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How long [`ChildLink::close`] waits for the child to exit after its
/// stdin closed (it finishes running requests first) before killing it.
const EXIT_GRACE: Duration = Duration::from_secs(30);

/// The child's stdin, shared by the client and the reader's answers;
/// `None` once closed.
type Stdin = Arc<Mutex<Option<ChildStdin>>>;

/// One spawned server and the task reading its stdout.
pub(super) struct ChildLink {
    stdin: Stdin,
    routes: Arc<Routes>,
    child: std::sync::Mutex<Option<Child>>,
    reader: AbortHandle,
}

impl ChildLink {
    /// Spawns `command` with piped stdin and stdout (stderr as the caller
    /// set it) and starts reading what it writes.
    pub(super) fn spawn(
        mut command: Command,
        notifications: mpsc::UnboundedSender<Value>,
        handler: Option<InputHandler>,
    ) -> Result<Self, ClientError> {
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let mut child = command
            .spawn()
            .map_err(|e| ClientError::Transport(format!("spawn {program}: {e}")))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(ClientError::Transport(format!("{program}: no piped stdio")));
        };
        let stdin: Stdin = Arc::new(Mutex::new(Some(stdin)));
        let routes = Arc::new(Routes::default());
        let reader = tokio::spawn(read(
            stdout,
            Arc::clone(&routes),
            notifications,
            Arc::clone(&stdin),
            handler,
        ));
        Ok(Self {
            stdin,
            routes,
            child: std::sync::Mutex::new(Some(child)),
            reader: reader.abort_handle(),
        })
    }

    /// Where responses and subscription events are routed.
    pub(super) fn routes(&self) -> &Routes {
        &self.routes
    }

    /// The child's process id, while it runs.
    pub(super) fn id(&self) -> Option<u32> {
        lock(&self.child).as_ref().and_then(Child::id)
    }

    /// Writes a request and waits for its response (result or error).
    pub(super) async fn exchange(&self, message: &Value) -> Result<Value, ClientError> {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let response = self.routes.wait_for(&id);
        self.send(message).await?;
        response.await.map_err(|_| ClientError::Closed)
    }

    /// Writes one message as a line.
    pub(super) async fn send(&self, message: &Value) -> Result<(), ClientError> {
        write_line(&self.stdin, message.to_string()).await
    }

    /// Closes the child's stdin (the stdio transport then finishes its
    /// running requests and exits), waits for the exit, and kills the
    /// child if it outlasts [`EXIT_GRACE`].
    pub(super) async fn close(&self) -> Option<ExitStatus> {
        self.stdin.lock().await.take();
        let mut child = lock(&self.child).take()?;
        match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => {
                let _ = child.kill().await;
                child.wait().await.ok()
            }
        }
    }

    /// Ends everything at once (the client was dropped): the reader stops
    /// and the child is killed.
    pub(super) fn abort(&self) {
        self.reader.abort();
        if let Some(child) = lock(&self.child).as_mut() {
            let _ = child.start_kill();
        }
        self.routes.close();
    }
}

/// Writes `line` and a newline in one write; a closed stdin or a child
/// that is gone is [`ClientError::Closed`].
async fn write_line(stdin: &Stdin, mut line: String) -> Result<(), ClientError> {
    line.push('\n');
    let mut guard = stdin.lock().await;
    let pipe = guard.as_mut().ok_or(ClientError::Closed)?;
    let written = pipe.write_all(line.as_bytes()).await;
    match written {
        Ok(()) => pipe.flush().await.map_err(|_| ClientError::Closed),
        Err(_) => Err(ClientError::Closed),
    }
}

/// Reads the child's stdout line by line until it closes, routing each
/// message; server→client requests are answered on stdin.
async fn read(
    stdout: ChildStdout,
    routes: Arc<Routes>,
    notifications: mpsc::UnboundedSender<Value>,
    stdin: Stdin,
    handler: Option<InputHandler>,
) {
    let mut lines = FramedRead::new(stdout, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
    while let Some(line) = lines.next().await {
        let line = match line {
            Ok(line) => line,
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                tracing::warn!("the server wrote a line over {MAX_LINE_BYTES} bytes; skipped");
                continue;
            }
            Err(LinesCodecError::Io(e)) => {
                tracing::warn!(error = %e, "reading the server's stdout failed");
                break;
            }
        };
        let Some((id, request)) = link::deliver(&line, &routes, &notifications) else {
            continue;
        };
        // On its own task: the handler may take its time while lines flow.
        let (handler, stdin) = (handler.clone(), Arc::clone(&stdin));
        tokio::spawn(async move {
            let reply = link::answer(handler.as_ref(), &request, id).await;
            if write_line(&stdin, reply).await.is_err() {
                tracing::warn!("the server closed stdin before the answer to its request");
            }
        });
    }
    routes.close();
}
