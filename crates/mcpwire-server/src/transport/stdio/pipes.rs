//! stdin and stdout as non-blocking pipes, driven by the I/O reactor.
//!
//! tokio's `stdin()`/`stdout()` do every read and write on the blocking
//! thread pool: each message in and each answer out is a hand-off to
//! another thread and back, the largest share of a stdio round trip. MCP
//! clients start servers with pipes on both ends, and a pipe can be
//! polled like a socket instead.
//!
//! The descriptors are reopened through `/proc/self/fd`, which gives this
//! transport its own open file descriptions: `O_NONBLOCK` set on them does
//! not leak into the process's fds 0 and 1 (shared with the parent and
//! with any child that inherits them). Opening with `O_NONBLOCK` also never
//! blocks when the other end is already gone.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};

use tokio::net::unix::pipe;

/// Both ends as reactor-driven pipes, or `None` (not Linux-like, not
/// pipes, `/proc` not mounted…): the caller falls back to tokio's
/// blocking stdio. Must run inside a runtime with I/O enabled.
pub(super) fn open() -> Option<(pipe::Receiver, pipe::Sender)> {
    let read = reopen("/proc/self/fd/0", false)?;
    let write = reopen("/proc/self/fd/1", true)?;
    let reader = pipe::Receiver::from_file(read).ok()?;
    let writer = pipe::Sender::from_file(write).ok()?;
    Some((reader, writer))
}

/// Reopens a standard stream on a new open file description, if it is a
/// pipe.
fn reopen(path: &str, write: bool) -> Option<File> {
    let file = OpenOptions::new()
        .read(!write)
        .write(write)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let is_pipe = file.metadata().ok()?.file_type().is_fifo();
    is_pipe.then_some(file)
}
