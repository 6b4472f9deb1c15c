//! Messages between replicas over PostgreSQL `LISTEN`/`NOTIFY`
//! ([`EventBus`]). One dedicated connection listens; it is re-opened with
//! backoff when it breaks, and re-subscribed, after which subscribers get
//! [`Delivery::Resync`] (messages may have been missed meanwhile).
//! Publishing uses the pool. A `NOTIFY` payload is limited to 8000 bytes:
//! a larger message is stored in `mcp_bus_payloads` and the notification
//! carries its id; such rows are pruned after `PAYLOAD_TTL_SECS`.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use futures_util::StreamExt;
use mcpwire_server::shared::{BoxFuture, Delivery, Envelope, EventBus, SharedError};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_postgres::{AsyncMessage, NoTls};
use tokio_util::sync::CancellationToken;

use super::sessions::unavailable;

/// The table for payloads too large for a notification.
pub const MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS mcp_bus_payloads (
    id      bigserial PRIMARY KEY,
    body    text NOT NULL,
    created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS mcp_bus_payloads_created ON mcp_bus_payloads (created);
";

/// The notification channel.
const CHANNEL: &str = "mcp_bus";
/// Largest payload sent inline (PostgreSQL's limit is 8000 bytes).
const MAX_INLINE: usize = 7900;
/// Stored payloads older than this are deleted.
const PAYLOAD_TTL_SECS: f64 = 300.0;
/// Backoff bounds between reconnection attempts.
const BACKOFF_MIN: Duration = Duration::from_millis(200);
const BACKOFF_MAX: Duration = Duration::from_secs(10);
/// A listening connection is checked this often (a silent break is
/// otherwise only noticed by the OS much later).
const PING_EVERY: Duration = Duration::from_secs(10);

/// The bus on one database.
pub struct PgBus {
    pool: Pool,
    tx: broadcast::Sender<Delivery>,
    stop: CancellationToken,
}

impl Drop for PgBus {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl PgBus {
    /// Starts listening on `url` (a dedicated connection, kept open and
    /// re-opened as needed) and publishes through `pool`.
    pub fn start(url: &str, pool: Pool) -> Result<Arc<Self>, String> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| format!("invalid PostgreSQL URL for the bus: {e}"))?;
        let (tx, _) = broadcast::channel(1024);
        let stop = CancellationToken::new();
        tokio::spawn(listen_forever(
            config,
            pool.clone(),
            tx.clone(),
            stop.clone(),
        ));
        Ok(Arc::new(Self { pool, tx, stop }))
    }

    async fn send(&self, envelope: &Envelope) -> Result<(), SharedError> {
        let body =
            serde_json::to_string(envelope).map_err(|e| SharedError::Malformed(e.to_string()))?;
        let client = self.pool.get().await.map_err(unavailable)?;
        let payload = if body.len() <= MAX_INLINE {
            body
        } else {
            client
                .execute(
                    "DELETE FROM mcp_bus_payloads WHERE created < now() - make_interval(secs => $1)",
                    &[&PAYLOAD_TTL_SECS],
                )
                .await
                .map_err(unavailable)?;
            let row = client
                .query_one(
                    "INSERT INTO mcp_bus_payloads (body) VALUES ($1) RETURNING id",
                    &[&body],
                )
                .await
                .map_err(unavailable)?;
            let id: i64 = row.try_get(0).map_err(unavailable)?;
            json!({ "ref": id }).to_string()
        };
        client
            .execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])
            .await
            .map_err(unavailable)?;
        Ok(())
    }
}

impl EventBus for PgBus {
    fn publish<'a>(&'a self, envelope: &'a Envelope) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(self.send(envelope))
    }

    fn subscribe(&self) -> broadcast::Receiver<Delivery> {
        self.tx.subscribe()
    }
}

/// Keeps a listening connection open until `stop`.
async fn listen_forever(
    config: tokio_postgres::Config,
    pool: Pool,
    tx: broadcast::Sender<Delivery>,
    stop: CancellationToken,
) {
    let mut backoff = BACKOFF_MIN;
    let mut connected_before = false;
    loop {
        let session = listen_once(&config, &pool, &tx, &stop, connected_before);
        match session.await {
            Ok(()) if stop.is_cancelled() => return,
            Ok(()) => {
                connected_before = true;
                backoff = BACKOFF_MIN;
                tracing::warn!("bus connection to PostgreSQL lost; reconnecting");
            }
            Err(e) => {
                tracing::warn!(error = %e, retry_in = ?backoff, "bus cannot listen on PostgreSQL")
            }
        }
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            () = stop.cancelled() => return,
        }
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// One listening connection: `Ok` when it ended after listening, `Err`
/// when it could not be set up.
async fn listen_once(
    config: &tokio_postgres::Config,
    pool: &Pool,
    tx: &broadcast::Sender<Delivery>,
    stop: &CancellationToken,
    reconnect: bool,
) -> Result<(), String> {
    let (client, mut connection) = config.connect(NoTls).await.map_err(|e| e.to_string())?;
    let (notes_tx, mut notes) = mpsc::channel::<String>(1024);
    let driver = tokio::spawn(async move {
        let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notification(n) = m
                && notes_tx.send(n.payload().to_owned()).await.is_err()
            {
                break;
            }
        }
    });
    let listened = client.batch_execute(&format!("LISTEN {CHANNEL}")).await;
    if let Err(e) = listened {
        driver.abort();
        return Err(e.to_string());
    }
    if reconnect {
        tracing::info!("bus listening on PostgreSQL again");
        let _ = tx.send(Delivery::Resync);
    }
    let mut ping = tokio::time::interval(PING_EVERY);
    loop {
        tokio::select! {
            note = notes.recv() => match note {
                Some(payload) => deliver(pool, tx, &payload).await,
                None => break,
            },
            _ = ping.tick() => {
                let alive = tokio::time::timeout(PING_EVERY, client.simple_query("")).await;
                if !matches!(alive, Ok(Ok(_))) {
                    break;
                }
            }
            () = stop.cancelled() => break,
        }
    }
    driver.abort();
    Ok(())
}

/// Hands one notification to the subscribers (loading a stored payload).
async fn deliver(pool: &Pool, tx: &broadcast::Sender<Delivery>, payload: &str) {
    let body = match serde_json::from_str::<Value>(payload) {
        Ok(v) if v.get("ref").is_some() => match load(pool, &v["ref"]).await {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(error = %e, "bus payload lost; resyncing");
                let _ = tx.send(Delivery::Resync);
                return;
            }
        },
        _ => payload.to_owned(),
    };
    match serde_json::from_str::<Envelope>(&body) {
        Ok(envelope) => {
            let _ = tx.send(Delivery::Message(envelope));
        }
        // From a newer replica, perhaps: skip it, keep listening.
        Err(e) => tracing::warn!(error = %e, "unreadable bus message skipped"),
    }
}

async fn load(pool: &Pool, id: &Value) -> Result<String, String> {
    let id = id.as_i64().ok_or("bad payload reference")?;
    let client = pool.get().await.map_err(|e| e.to_string())?;
    let row = client
        .query_opt("SELECT body FROM mcp_bus_payloads WHERE id = $1", &[&id])
        .await
        .map_err(|e| e.to_string())?
        .ok_or("payload already pruned")?;
    row.try_get(0).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fresh_pool;
    use mcpwire_server::ServerEvent;
    use mcpwire_server::shared::BusMessage;

    async fn next_message(rx: &mut broadcast::Receiver<Delivery>) -> Delivery {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("delivery in time")
            .expect("bus open")
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn small_and_large_messages_reach_every_subscriber() {
        let (url, pool) = fresh_pool().await;
        let a = PgBus::start(&url, pool.clone()).expect("bus a");
        let b = PgBus::start(&url, pool).expect("bus b");
        let mut rx = b.subscribe();
        // LISTEN is asynchronous: publish until b hears the first one.
        let hello = Envelope {
            origin: "a".into(),
            message: BusMessage::Event {
                event: ServerEvent::ToolsChanged,
            },
        };
        let first = loop {
            a.publish(&hello).await.expect("publish");
            if let Ok(Ok(d)) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
                break d;
            }
        };
        assert_eq!(first, Delivery::Message(hello));

        let big = Envelope {
            origin: "a".into(),
            message: BusMessage::Event {
                event: ServerEvent::ResourceUpdated(format!("file:///{}", "x".repeat(20_000))),
            },
        };
        a.publish(&big).await.expect("publish large");
        let mut got = next_message(&mut rx).await;
        // Drain duplicates of the hello loop.
        while matches!(&got, Delivery::Message(e) if e.message != big.message) {
            got = next_message(&mut rx).await;
        }
        assert_eq!(got, Delivery::Message(big));
    }
}
