//! The directory's generation, known without a query per call: one
//! connection per backend `LISTEN`s to the announcements of migration
//! 0007's trigger, so a cached answer costs no round trip at all.
//!
//! The watched stamp is trusted only while that connection is up and has
//! read the counter after its `LISTEN` took effect (a change committed
//! while nobody listened is seen by that read). A lost connection makes
//! the stamp unknown at once (callers then read the counter per call, as
//! without the watch) until a new connection listens and rechecks. A slow
//! poll on the same connection is the safety net for a missed
//! announcement (a counter set by hand, without the trigger).
//!
//! Staleness bound: a hit may lag a commit by the time its announcement
//! takes to arrive (sub-millisecond on a local network); a call that
//! starts after the announcement arrived sees the change.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::read_cache::Stamp;

/// The channel migration 0007's trigger announces on.
const CHANNEL: &str = "directory_generation";

/// How often the counter is read anyway (missed announcements).
const POLL: Duration = Duration::from_secs(5);

/// Longest wait for the poll's answer before the connection is given up.
const POLL_TIMEOUT: Duration = Duration::from_secs(3);

/// Announcements queued between the connection and the follower. Anyone
/// may `NOTIFY` the channel; past this the payloads are dropped and the
/// follower rereads the counter instead (one read covers them all).
const QUEUED: usize = 256;

/// Waits between reconnection attempts, doubling up to the last.
const BACKOFF: [Duration; 4] = [
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
    Duration::from_secs(5),
];

/// A listener connection that lived this long was healthy: the backoff
/// starts over after it ends.
const HEALTHY: Duration = Duration::from_secs(30);

/// The generation and which database (same query as a per-call check).
pub(super) const STAMP: &str = "SELECT n, (SELECT oid FROM pg_database WHERE datname = current_database())::bigint \
     FROM directory_generation WHERE id = 1";

/// The stamp as the listener last saw it, `None` while not listening.
#[derive(Default)]
pub(super) struct Watched {
    stamp: Mutex<Option<Stamp>>,
}

impl Watched {
    /// The current stamp, if a live listener vouches for it.
    pub(super) fn stamp(&self) -> Option<Stamp> {
        *self.lock()
    }

    fn set(&self, stamp: Option<Stamp>) {
        *self.lock() = stamp;
    }

    /// An announced generation: never moves backwards (a poll's answer
    /// may arrive after a newer announcement).
    fn advance(&self, generation: i64) {
        if let Some(stamp) = self.lock().as_mut() {
            stamp.generation = stamp.generation.max(generation);
        }
    }

    /// Returns once the watched stamp is `target` or newer, or unknown
    /// (lookups then read the counter themselves).
    pub(super) async fn reached(&self, target: Stamp) {
        loop {
            match self.stamp() {
                Some(s) if s.source == target.source && s.generation < target.generation => {}
                _ => return,
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Stamp>> {
        self.stamp.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The listener task; stops when dropped (with its backend).
pub(super) struct Watch {
    pub(super) watched: Arc<Watched>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Watch {
    /// Starts listening on a connection of its own (`config` is the
    /// pool's, with its timeouts); when not `enabled`, the stamp stays
    /// unknown and no connection is made.
    pub(super) fn start(mut config: tokio_postgres::Config, enabled: bool) -> Watch {
        config.application_name("employee-directory listen");
        let watched = Arc::new(Watched::default());
        let task = enabled.then(|| tokio::spawn(listen_forever(config, Arc::clone(&watched))));
        Watch { watched, task }
    }
}

async fn listen_forever(config: tokio_postgres::Config, watched: Arc<Watched>) {
    let mut failures = 0usize;
    loop {
        let started = tokio::time::Instant::now();
        let listened = listen_once(&config, &watched).await;
        watched.set(None);
        match listened {
            Ok(()) => tracing::warn!("the directory's generation listener stopped; reconnecting"),
            Err(e) => tracing::warn!(error = %e, "lost the directory's generation listener; \
                checking the generation per call until it is back"),
        }
        // Only a connection that held for a while starts the backoff over:
        // one that ends as soon as it is made (cleanly or not) counts as a
        // failure, so a flapping server is not retried ten times a second.
        if started.elapsed() >= HEALTHY {
            failures = 0;
        }
        let wait = BACKOFF[failures.min(BACKOFF.len() - 1)];
        failures += 1;
        tokio::time::sleep(wait).await;
    }
}

/// One connection's life: listen, recheck, then follow announcements and
/// poll until the connection fails.
async fn listen_once(
    config: &tokio_postgres::Config,
    watched: &Watched,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    let (tx, mut announced) = mpsc::channel(QUEUED);
    let missed = Arc::new(AtomicBool::new(false));
    let missed_by_driver = Arc::clone(&missed);
    // The connection delivers announcements only to whoever polls it.
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    match tx.try_send(n.payload().to_owned()) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => {
                            missed_by_driver.store(true, Ordering::Relaxed);
                        }
                        Err(mpsc::error::TrySendError::Closed(_)) => return Ok(()),
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    });
    let result = follow(&client, watched, &mut announced, &missed).await;
    driver.abort();
    result
}

async fn follow(
    client: &Client,
    watched: &Watched,
    announced: &mut mpsc::Receiver<String>,
    missed: &AtomicBool,
) -> Result<(), tokio_postgres::Error> {
    // Read after LISTEN: a change committed before is in this read, one
    // committed after is announced.
    let first = async {
        client.batch_execute(&format!("LISTEN {CHANNEL}")).await?;
        read(client).await
    };
    match tokio::time::timeout(POLL_TIMEOUT, first).await {
        Ok(stamp) => watched.set(Some(stamp?)),
        Err(_) => return Ok(()), // Unresponsive: start afresh.
    }
    tracing::debug!("following the directory's generation");
    let mut poll = tokio::time::interval(POLL);
    poll.tick().await;
    loop {
        tokio::select! {
            payload = announced.recv() => {
                let Some(payload) = payload else {
                    return Ok(()); // The connection ended.
                };
                match payload.parse::<i64>() {
                    Ok(generation) if !missed.swap(false, Ordering::Relaxed) => {
                        watched.advance(generation);
                    }
                    // Not ours, or some were dropped: reread to be sure.
                    _ => match tokio::time::timeout(POLL_TIMEOUT, read(client)).await {
                        Ok(stamp) => watched.set(Some(stamp?)),
                        Err(_) => return Ok(()), // Unresponsive: start afresh.
                    },
                }
            }
            _ = poll.tick() => {
                // Announcements are handled one at a time in this loop, so
                // this read starts after every one handled so far: it is
                // never older than what it replaces. It does go back when
                // the counter was set back by hand, which is what we want.
                match tokio::time::timeout(POLL_TIMEOUT, read(client)).await {
                    Ok(stamp) => watched.set(Some(stamp?)),
                    Err(_) => return Ok(()), // Unresponsive: start afresh.
                }
            }
        }
        if client.is_closed() {
            return Ok(());
        }
    }
}

/// The counter and the database, read now.
async fn read(client: &Client) -> Result<Stamp, tokio_postgres::Error> {
    let row = client.query_one(STAMP, &[]).await?;
    Ok(Stamp {
        source: (row.try_get::<_, i64>(1)?.cast_unsigned(), 0),
        generation: row.try_get(0)?,
    })
}
