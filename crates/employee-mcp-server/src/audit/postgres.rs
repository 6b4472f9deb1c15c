//! The audit trail on PostgreSQL: the writer thread's [`Store`] and the
//! `audit` subcommand's reader. Replicas share one `audit_log` table.
//!
//! The writer thread is synchronous; it drives tokio-postgres on its own
//! single-threaded runtime (the connection is only polled inside those
//! calls, which is all the writer needs). Commits are durable with the
//! server's default `synchronous_commit = on`. Every call is bounded by
//! [`STATEMENT_TIMEOUT`] (server side) and [`CALL_TIMEOUT`] (client side);
//! a lost connection is reopened on the next transaction.
//!
//! Round trips per group commit: two. `BEGIN` is not sent on its own; it
//! goes out pipelined with the group's first statement, and every call's
//! row of the group is one `INSERT … SELECT FROM unnest(…)` (one prepared
//! statement whatever the group size), then `COMMIT`.

use std::collections::HashMap;
use std::time::Duration;

use employee_directory::redact;
use tokio::runtime::Runtime;
use tokio_postgres::{Client, NoTls, Statement};

use super::activity::{self, Minute, minute_from};
use super::store::Store;
use super::{Entry, Error, Filter, ROW_COLUMNS, Row, row_from};

/// Server-side bound on one audit statement.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(5);
/// Client-side bound on one call (connect or statement), below the
/// shortest commit timeout `--audit-commit-timeout-secs` takes (10 s), so
/// a stuck server fails the batch in the writer rather than after the
/// callers gave up.
const CALL_TIMEOUT: Duration = Duration::from_secs(6);

const SCHEMA: &str = "
SELECT pg_advisory_xact_lock(7402117002);
CREATE TABLE IF NOT EXISTS audit_log (
    id               BIGSERIAL PRIMARY KEY,
    at               TEXT   NOT NULL,
    at_unix_ms       BIGINT NOT NULL,
    subject          TEXT,
    client_id        TEXT,
    client_name      TEXT,
    remote_addr      TEXT,
    tool             TEXT   NOT NULL,
    arguments        TEXT   NOT NULL,
    outcome          TEXT   NOT NULL,
    detail           TEXT,
    latency_ms       BIGINT NOT NULL,
    protocol_version TEXT   NOT NULL,
    count            BIGINT,
    via              TEXT
);
ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS via TEXT;
CREATE INDEX IF NOT EXISTS audit_log_at ON audit_log (at_unix_ms);
CREATE INDEX IF NOT EXISTS audit_log_tool ON audit_log (tool, at_unix_ms);
CREATE INDEX IF NOT EXISTS audit_log_subject ON audit_log (subject, at_unix_ms);
";

/// PostgreSQL text cannot hold NUL; a client-chosen string may.
fn text(s: &str) -> String {
    s.replace('\0', "\u{FFFD}")
}

fn opt(s: &Option<String>) -> Option<String> {
    s.as_deref().map(text)
}

/// Connects on `runtime` (the connection task runs on it).
fn connect(runtime: &Runtime, url: &str) -> Result<Client, Error> {
    let mut config: tokio_postgres::Config = url.parse().map_err(Error::postgres(format!(
        "invalid PostgreSQL URL {}",
        redact(url)
    )))?;
    config
        .options(format!(
            "-c statement_timeout={}",
            STATEMENT_TIMEOUT.as_millis()
        ))
        .connect_timeout(CALL_TIMEOUT)
        .application_name("employee-mcp-server audit");
    runtime.block_on(async {
        let (client, connection) = tokio::time::timeout(CALL_TIMEOUT, config.connect(NoTls))
            .await
            .map_err(|_| Error::Unusable(format!("connecting to {} timed out", redact(url))))?
            .map_err(Error::postgres(format!(
                "cannot connect to the audit database {}",
                redact(url)
            )))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "audit database connection closed");
            }
        });
        Ok(client)
    })
}

/// The writer's PostgreSQL connection.
pub(super) struct PgStore {
    url: String,
    runtime: Runtime,
    client: Option<Client>,
    /// Prepared statements of the current connection, by SQL.
    statements: HashMap<&'static str, Statement>,
    /// `begin` was called and `BEGIN` is still to be sent (with the next
    /// statement, in the same round trip).
    begin_pending: bool,
}

impl PgStore {
    /// Connects and creates the table if missing (under an advisory lock,
    /// so replicas starting together do not race).
    pub(super) fn open(url: &str) -> Result<PgStore, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(Error::io("cannot start the audit runtime"))?;
        let client = connect(&runtime, url)?;
        let mut store = PgStore {
            url: url.to_owned(),
            runtime,
            client: Some(client),
            statements: HashMap::new(),
            begin_pending: false,
        };
        store.batch(&format!("BEGIN; {SCHEMA}; COMMIT"))?;
        Ok(store)
    }

    /// The connection, reconnecting if the last one was lost.
    fn client(&mut self) -> Result<&Client, Error> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.statements.clear();
            self.client = Some(connect(&self.runtime, &self.url)?);
        }
        self.client
            .as_ref()
            .ok_or_else(|| Error::Unusable("no audit database connection".to_owned()))
    }

    /// Runs `work` with the client, bounded by [`CALL_TIMEOUT`].
    fn run<T>(
        &mut self,
        work: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>,
    ) -> Result<T, Error> {
        self.client()?;
        let begin = std::mem::take(&mut self.begin_pending);
        let PgStore {
            runtime, client, ..
        } = self;
        let Some(client) = client.as_ref() else {
            return Err(Error::Unusable("no audit database connection".to_owned()));
        };
        let result = runtime.block_on(async {
            tokio::time::timeout(CALL_TIMEOUT, async {
                if !begin {
                    return work(client).await;
                }
                // Both requests are written before either answer is read:
                // one round trip. `join` polls `BEGIN` first, so it is sent
                // first; the statement's own error wins over `BEGIN`'s.
                let (began, done) = tokio::join!(client.batch_execute("BEGIN"), work(client));
                let value = done?;
                began.map(|()| value)
            })
            .await
        });
        match result {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(Error::postgres("cannot append to audit_log")(e)),
            Err(_) => {
                // The connection is in an unknown state: start afresh.
                self.client = None;
                self.statements.clear();
                Err(Error::NoAnswer {
                    what: "the audit database",
                    within: CALL_TIMEOUT,
                })
            }
        }
    }

    /// `sql` prepared once per connection: the writer repeats the same
    /// few statements.
    fn prepared(&mut self, sql: &'static str) -> Result<Statement, Error> {
        self.client()?;
        if let Some(stmt) = self.statements.get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = self.run(async |c| c.prepare(sql).await)?;
        self.statements.insert(sql, stmt.clone());
        Ok(stmt)
    }

    fn batch(&mut self, sql: &str) -> Result<(), Error> {
        self.run(async |c| c.batch_execute(sql).await)
    }
}

impl Store for PgStore {
    fn begin(&mut self) -> Result<(), Error> {
        // Sent with the transaction's first statement (see `run`).
        self.begin_pending = true;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), Error> {
        if std::mem::take(&mut self.begin_pending) {
            return Ok(()); // Nothing was written: nothing to commit.
        }
        self.batch("COMMIT")
    }

    fn rollback(&mut self) {
        if std::mem::take(&mut self.begin_pending) {
            return;
        }
        if let Some(client) = &self.client
            && !client.is_closed()
            && let Err(e) = self.batch("ROLLBACK")
        {
            tracing::warn!(error = %e, "cannot roll back the audit transaction");
        }
    }

    fn insert(&mut self, e: &Entry, count: Option<i64>) -> Result<i64, Error> {
        let values = (
            text(&e.at),
            opt(&e.subject),
            opt(&e.client_id),
            opt(&e.client_name),
            opt(&e.remote_addr),
            text(&e.tool),
            text(&e.arguments),
            opt(&e.detail),
            text(&e.protocol_version),
            opt(&e.via),
        );
        let (at, subject, client_id, client_name, remote, tool, arguments, detail, protocol, via) =
            &values;
        let stmt = self.prepared(
            "INSERT INTO audit_log (at, at_unix_ms, subject, client_id, client_name,
                 remote_addr, tool, arguments, outcome, detail, latency_ms,
                 protocol_version, count, via)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             RETURNING id",
        )?;
        self.run(async |c| {
            let row = c
                .query_one(
                    &stmt,
                    &[
                        at,
                        &e.at_unix_ms,
                        subject,
                        client_id,
                        client_name,
                        remote,
                        tool,
                        arguments,
                        &e.outcome.as_str(),
                        detail,
                        &e.latency_ms,
                        protocol,
                        &count,
                        via,
                    ],
                )
                .await?;
            row.try_get::<_, i64>(0)
        })
    }

    fn insert_all(&mut self, entries: &[Entry]) -> Result<(), Error> {
        if entries.is_empty() {
            return Ok(());
        }
        let rows = Columns::of(entries);
        let stmt = self.prepared(INSERT_ALL)?;
        self.run(async |c| {
            c.execute(
                &stmt,
                &[
                    &rows.at,
                    &rows.at_unix_ms,
                    &rows.subject,
                    &rows.client_id,
                    &rows.client_name,
                    &rows.remote_addr,
                    &rows.tool,
                    &rows.arguments,
                    &rows.outcome,
                    &rows.detail,
                    &rows.latency_ms,
                    &rows.protocol_version,
                    &rows.via,
                ],
            )
            .await
            .map(drop)
        })
    }

    fn store_count(&mut self, row: i64, count: i64, latency_ms: i64) -> Result<(), Error> {
        let stmt = self.prepared(
            "UPDATE audit_log SET count = $1, latency_ms = GREATEST(latency_ms, $2)
             WHERE id = $3",
        )?;
        self.run(async |c| {
            c.execute(&stmt, &[&count, &latency_ms, &row])
                .await
                .map(drop)
        })
    }

    fn prune(&mut self, cutoff_ms: i64, limit: i64) -> Result<usize, Error> {
        let stmt = self.prepared(
            "DELETE FROM audit_log WHERE id IN
                 (SELECT id FROM audit_log WHERE at_unix_ms < $1 ORDER BY at_unix_ms LIMIT $2)",
        )?;
        self.run(async |c| c.execute(&stmt, &[&cutoff_ms, &limit]).await)
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
    }

    #[cfg(test)]
    fn dump(&mut self) -> Vec<(String, String, i64)> {
        self.run(async |c| {
            c.query(
                "SELECT tool, arguments, COALESCE(count, 1) FROM audit_log ORDER BY id",
                &[],
            )
            .await
        })
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect()
    }
}

/// Every row of a group in one statement: one array per column, zipped
/// by `unnest` (arrays of equal length), in the order given, so ids follow
/// the queue as on SQLite.
const INSERT_ALL: &str = "
INSERT INTO audit_log (at, at_unix_ms, subject, client_id, client_name, remote_addr, tool,
    arguments, outcome, detail, latency_ms, protocol_version, via)
SELECT at, at_unix_ms, subject, client_id, client_name, remote_addr, tool, arguments, outcome,
    detail, latency_ms, protocol_version, via
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
    $7::text[], $8::text[], $9::text[], $10::text[], $11::bigint[], $12::text[], $13::text[])
    WITH ORDINALITY AS r(at, at_unix_ms, subject, client_id, client_name, remote_addr, tool,
        arguments, outcome, detail, latency_ms, protocol_version, via, n)
ORDER BY n";

/// A group's records as columns, for [`INSERT_ALL`].
struct Columns {
    at: Vec<String>,
    at_unix_ms: Vec<i64>,
    subject: Vec<Option<String>>,
    client_id: Vec<Option<String>>,
    client_name: Vec<Option<String>>,
    remote_addr: Vec<Option<String>>,
    tool: Vec<String>,
    arguments: Vec<String>,
    outcome: Vec<&'static str>,
    detail: Vec<Option<String>>,
    latency_ms: Vec<i64>,
    protocol_version: Vec<String>,
    via: Vec<Option<String>>,
}

impl Columns {
    fn of(entries: &[Entry]) -> Columns {
        Columns {
            at: entries.iter().map(|e| text(&e.at)).collect(),
            at_unix_ms: entries.iter().map(|e| e.at_unix_ms).collect(),
            subject: entries.iter().map(|e| opt(&e.subject)).collect(),
            client_id: entries.iter().map(|e| opt(&e.client_id)).collect(),
            client_name: entries.iter().map(|e| opt(&e.client_name)).collect(),
            remote_addr: entries.iter().map(|e| opt(&e.remote_addr)).collect(),
            tool: entries.iter().map(|e| text(&e.tool)).collect(),
            arguments: entries.iter().map(|e| text(&e.arguments)).collect(),
            outcome: entries.iter().map(|e| e.outcome.as_str()).collect(),
            detail: entries.iter().map(|e| opt(&e.detail)).collect(),
            latency_ms: entries.iter().map(|e| e.latency_ms).collect(),
            protocol_version: entries.iter().map(|e| text(&e.protocol_version)).collect(),
            via: entries.iter().map(|e| opt(&e.via)).collect(),
        }
    }
}

/// A runtime and a connection for reading the trail at `url`; `None` when
/// no server has created `audit_log` there yet.
fn reader(url: &str) -> Result<Option<(tokio::runtime::Runtime, Client)>, Error> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(Error::io("cannot start a runtime"))?;
    let client = connect(&runtime, url)?;
    let exists: bool = runtime
        .block_on(client.query_one("SELECT to_regclass('audit_log') IS NOT NULL", &[]))
        .map_err(Error::postgres("cannot read audit_log"))?
        .get(0);
    Ok(exists.then_some((runtime, client)))
}

/// Calls per minute since `since_ms`, for [`super::activity`].
pub(super) fn activity(url: &str, since_ms: i64) -> Result<Vec<Minute>, Error> {
    let Some((runtime, client)) = reader(url)? else {
        return Ok(Vec::new());
    };
    runtime.block_on(async {
        let read = |e| Error::postgres("cannot read audit_log")(e);
        let rows = client
            .query(&activity::sql("COALESCE(count, 1)"), &[&since_ms])
            .await
            .map_err(read)?;
        rows.iter()
            .map(|r| Ok(minute_from!(r, try_get)))
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()
            .map_err(read)
    })
}

/// Reads records matching `filter`, oldest first (the newest `limit`), for
/// the `audit` subcommand.
pub(super) fn query(url: &str, filter: &Filter) -> Result<Vec<Row>, Error> {
    let Some((runtime, client)) = reader(url)? else {
        return Ok(Vec::new());
    };
    runtime.block_on(async {
        let read = |e| Error::postgres("cannot query audit_log")(e);
        // A table no server of this version has opened yet has no `via`.
        let has_via: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns
                 WHERE table_schema = current_schema() AND table_name = 'audit_log'
                   AND column_name = 'via')",
                &[],
            )
            .await
            .map_err(read)?
            .get(0);
        let via = if has_via { "via" } else { "NULL::text" };
        // NULL filters match everything: one statement for every filter.
        let order = if filter.oldest_first {
            "id"
        } else {
            "at_unix_ms DESC, id DESC"
        };
        let rows = client
            .query(
                &format!(
                    "SELECT {ROW_COLUMNS}, COALESCE(count, 1), {via}
                     FROM audit_log
                     WHERE ($1::bigint IS NULL OR at_unix_ms >= $1)
                       AND ($2::bigint IS NULL OR at_unix_ms < $2)
                       AND ($3::text IS NULL OR tool = $3)
                       AND ($4::text IS NULL OR subject = $4)
                       AND ($5::text IS NULL OR outcome = $5)
                       AND ($7::bigint IS NULL OR id < $7)
                       AND ($8::bigint IS NULL OR id > $8)
                     ORDER BY {order} LIMIT $6"
                ),
                &[
                    &filter.since_ms,
                    &filter.until_ms,
                    &filter.tool.as_deref().map(text),
                    &filter.subject.as_deref().map(text),
                    &filter.outcome.as_deref().map(text),
                    &i64::from(filter.limit),
                    &filter.before_id,
                    &filter.after_id,
                ],
            )
            .await
            .map_err(read)?;
        let mut out: Vec<Row> = rows
            .iter()
            .map(|r| Ok(row_from!(r, try_get)))
            .collect::<Result<_, tokio_postgres::Error>>()
            .map_err(read)?;
        if !filter.oldest_first {
            out.reverse();
        }
        Ok(out)
    })
}
