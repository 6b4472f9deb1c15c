//! Task records on PostgreSQL, so any replica serves `tasks/get|update|
//! cancel` for a task whose handler runs on another (the runner follows its
//! row every [`mcpwire_server::tasks::WATCH_INTERVAL`]).
//!
//! Expiry uses the database clock (`now()`), the same for every replica.
//! The table is bounded: creation prunes expired rows and, at
//! `max_tasks`, the oldest finished ones, under one advisory lock.

use std::future::Future;
use std::time::{Duration, SystemTime};

use deadpool_postgres::Pool;
use mcpwire_server::tasks::{
    Settled, TaskBackend, TaskBackendError, TaskFuture, TaskRecord, TaskStatus,
};
use serde_json::{Map, Value};
use tokio_postgres::Row;

/// The table of task records.
pub const MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS mcp_tasks (
    id          text PRIMARY KEY,
    owner       text,
    status      text NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL,
    result      jsonb,
    error       jsonb,
    pending     jsonb NOT NULL DEFAULT '{}',
    answers     jsonb NOT NULL DEFAULT '{}'
);
-- Added after the first release: a table created before gets it here.
ALTER TABLE mcp_tasks ADD COLUMN IF NOT EXISTS status_message text;
CREATE INDEX IF NOT EXISTS mcp_tasks_expires ON mcp_tasks (expires_at);
CREATE INDEX IF NOT EXISTS mcp_tasks_finished ON mcp_tasks (updated_at)
    WHERE status IN ('completed', 'failed', 'cancelled');
";

/// Serializes task creation across replicas (the capacity check).
const CREATE_LOCK: i64 = 7_402_117_002;

const COLUMNS: &str =
    "id, owner, status, created_at, updated_at, result, error, pending, answers, status_message";

const TERMINAL: &str = "('completed', 'failed', 'cancelled')";

/// Task records in one PostgreSQL database.
pub struct PgTasks {
    pool: Pool,
    /// The longest one operation may take before it fails.
    timeout: Duration,
}

impl PgTasks {
    /// Records in `pool`'s database (tables from [`super::migrate`]); each
    /// operation fails after `timeout`.
    pub fn new(pool: Pool, timeout: Duration) -> Self {
        Self { pool, timeout }
    }

    /// Runs `f` with a pooled connection, bounded by the timeout.
    fn run<'a, T, F, Fut>(&'a self, f: F) -> TaskFuture<'a, T>
    where
        T: Send + 'a,
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'a,
        Fut: Future<Output = Result<T, TaskBackendError>> + Send + 'a,
    {
        Box::pin(async move {
            let work = async {
                let client = self.pool.get().await.map_err(unavailable)?;
                f(client).await
            };
            match tokio::time::timeout(self.timeout, work).await {
                Ok(r) => r,
                Err(_) => Err(TaskBackendError::Unavailable(format!(
                    "PostgreSQL did not answer within {} ms",
                    self.timeout.as_millis()
                ))),
            }
        })
    }
}

fn unavailable(e: impl std::fmt::Display) -> TaskBackendError {
    TaskBackendError::Unavailable(format!("PostgreSQL: {e}"))
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn object(v: Option<Value>) -> Map<String, Value> {
    match v {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

fn record(row: &Row) -> Result<TaskRecord, TaskBackendError> {
    let status: String = row.try_get("status").map_err(pg_failed)?;
    let status = TaskStatus::parse(&status)
        .ok_or_else(|| unavailable(format!("unknown task status {status:?} in mcp_tasks")))?;
    let result: Option<Value> = row.try_get("result").map_err(pg_failed)?;
    Ok(TaskRecord {
        id: row.try_get("id").map_err(pg_failed)?,
        owner: row.try_get("owner").map_err(pg_failed)?,
        status,
        created: row
            .try_get::<_, SystemTime>("created_at")
            .map_err(pg_failed)?,
        updated: row
            .try_get::<_, SystemTime>("updated_at")
            .map_err(pg_failed)?,
        result: result.map(|r| object(Some(r))),
        error: row.try_get("error").map_err(pg_failed)?,
        pending: object(row.try_get("pending").map_err(pg_failed)?),
        answers: object(row.try_get("answers").map_err(pg_failed)?),
        status_message: row.try_get("status_message").map_err(pg_failed)?,
    })
}

impl TaskBackend for PgTasks {
    fn create<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
        max_tasks: usize,
    ) -> TaskFuture<'a, TaskRecord> {
        self.run(move |mut client| async move {
            let tx = client.transaction().await.map_err(pg_failed)?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CREATE_LOCK])
                .await
                .map_err(pg_failed)?;
            tx.execute("DELETE FROM mcp_tasks WHERE expires_at <= now()", &[])
                .await
                .map_err(pg_failed)?;
            let max = i64::try_from(max_tasks.max(1)).unwrap_or(i64::MAX);
            let count: i64 = tx
                .query_one("SELECT count(*) FROM mcp_tasks", &[])
                .await
                .map_err(pg_failed)?
                .try_get(0)
                .map_err(pg_failed)?;
            if count >= max {
                // Make room: the oldest finished tasks go first.
                let sql = format!(
                    "DELETE FROM mcp_tasks WHERE id IN (SELECT id FROM mcp_tasks \
                     WHERE status IN {TERMINAL} ORDER BY updated_at LIMIT $1)"
                );
                let evicted = tx
                    .execute(&sql, &[&(count - max + 1)])
                    .await
                    .map_err(pg_failed)?;
                if count - i64::try_from(evicted).unwrap_or(0) >= max {
                    return Err(TaskBackendError::Full);
                }
            }
            let sql = format!(
                "INSERT INTO mcp_tasks (id, owner, status, created_at, updated_at, expires_at) \
                 VALUES ($1, $2, 'working', now(), now(), now() + make_interval(secs => $3)) \
                 RETURNING {COLUMNS}"
            );
            let row = tx
                .query_one(&sql, &[&id, &owner, &secs(ttl)])
                .await
                .map_err(pg_failed)?;
            tx.commit().await.map_err(pg_failed)?;
            record(&row)
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> TaskFuture<'a, Option<TaskRecord>> {
        self.run(move |client| async move {
            let sql =
                format!("SELECT {COLUMNS} FROM mcp_tasks WHERE id = $1 AND expires_at > now()");
            let row = client.query_opt(&sql, &[&id]).await.map_err(pg_failed)?;
            row.as_ref().map(record).transpose()
        })
    }

    fn answer<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        responses: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        self.run(move |mut client| async move {
            let tx = client.transaction().await.map_err(pg_failed)?;
            let sql = format!(
                "SELECT {COLUMNS} FROM mcp_tasks WHERE id = $1 AND expires_at > now() \
                 AND owner IS NOT DISTINCT FROM $2 FOR UPDATE"
            );
            let Some(row) = tx
                .query_opt(&sql, &[&id, &owner])
                .await
                .map_err(pg_failed)?
            else {
                return Ok(false);
            };
            let mut r = record(&row)?;
            if r.status != TaskStatus::InputRequired {
                return Ok(true);
            }
            for (key, answer) in responses {
                if r.pending.remove(key).is_some() {
                    r.answers.insert(key.clone(), answer.clone());
                }
            }
            let status = if r.pending.is_empty() {
                TaskStatus::Working
            } else {
                TaskStatus::InputRequired
            };
            tx.execute(
                "UPDATE mcp_tasks SET pending = $2, answers = $3, status = $4, updated_at = now(), \
                 expires_at = now() + make_interval(secs => $5) WHERE id = $1",
                &[
                    &id,
                    &Value::Object(r.pending),
                    &Value::Object(r.answers),
                    &status.as_str(),
                    &secs(ttl),
                ],
            )
            .await
            .map_err(pg_failed)?;
            tx.commit().await.map_err(pg_failed)?;
            Ok(true)
        })
    }

    fn cancel<'a>(
        &'a self,
        id: &'a str,
        owner: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        self.run(move |client| async move {
            let sql = format!(
                "UPDATE mcp_tasks SET status = 'cancelled', pending = '{{}}', answers = '{{}}', \
                 updated_at = now(), expires_at = now() + make_interval(secs => $3) \
                 WHERE id = $1 AND owner IS NOT DISTINCT FROM $2 AND expires_at > now() \
                 AND status NOT IN {TERMINAL}"
            );
            let changed = client
                .execute(&sql, &[&id, &owner, &secs(ttl)])
                .await
                .map_err(pg_failed)?;
            if changed > 0 {
                return Ok(true);
            }
            // Finished already (cancel is then a no-op), or unknown.
            let row = client
                .query_one(
                    "SELECT EXISTS (SELECT 1 FROM mcp_tasks WHERE id = $1 \
                     AND owner IS NOT DISTINCT FROM $2 AND expires_at > now())",
                    &[&id, &owner],
                )
                .await
                .map_err(pg_failed)?;
            row.try_get(0).map_err(pg_failed)
        })
    }

    fn park<'a>(
        &'a self,
        id: &'a str,
        requests: &'a Map<String, Value>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        self.run(move |client| async move {
            let sql = format!(
                "UPDATE mcp_tasks SET status = 'input_required', pending = $2, answers = '{{}}', \
                 updated_at = now(), expires_at = now() + make_interval(secs => $3) \
                 WHERE id = $1 AND expires_at > now() AND status NOT IN {TERMINAL}"
            );
            let requests = Value::Object(requests.clone());
            let changed = client
                .execute(&sql, &[&id, &requests, &secs(ttl)])
                .await
                .map_err(pg_failed)?;
            Ok(changed > 0)
        })
    }

    fn take_answers<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> TaskFuture<'a, Option<Map<String, Value>>> {
        self.run(move |client| async move {
            // The subquery's row is the value before the update.
            let row = client
                .query_opt(
                    "UPDATE mcp_tasks t SET answers = '{}', updated_at = now(), \
                     expires_at = now() + make_interval(secs => $2) \
                     FROM (SELECT id, answers FROM mcp_tasks WHERE id = $1 AND status = 'working' \
                           AND answers <> '{}' AND expires_at > now() FOR UPDATE) old \
                     WHERE t.id = old.id RETURNING old.answers",
                    &[&id, &secs(ttl)],
                )
                .await
                .map_err(pg_failed)?;
            row.map(|r| r.try_get(0).map(object))
                .transpose()
                .map_err(pg_failed)
        })
    }

    fn set_status_message<'a>(
        &'a self,
        id: &'a str,
        message: Option<&'a str>,
        ttl: Duration,
    ) -> TaskFuture<'a, bool> {
        self.run(move |client| async move {
            let sql = format!(
                "UPDATE mcp_tasks SET status_message = $2, updated_at = now(), \
                 expires_at = now() + make_interval(secs => $3) \
                 WHERE id = $1 AND expires_at > now() AND status NOT IN {TERMINAL}"
            );
            let changed = client
                .execute(&sql, &[&id, &message, &secs(ttl)])
                .await
                .map_err(pg_failed)?;
            Ok(changed > 0)
        })
    }

    fn settle<'a>(&'a self, id: &'a str, outcome: Settled, ttl: Duration) -> TaskFuture<'a, ()> {
        self.run(move |client| async move {
            let (status, result, error) = match outcome {
                Settled::Completed(r) => (TaskStatus::Completed, Some(Value::Object(r)), None),
                Settled::Failed(e) => (TaskStatus::Failed, None, Some(e)),
            };
            let sql = format!(
                "UPDATE mcp_tasks SET status = $2, result = $3, error = $4, pending = '{{}}', \
                 answers = '{{}}', updated_at = now(), expires_at = now() + make_interval(secs => $5) \
                 WHERE id = $1 AND expires_at > now() AND status NOT IN {TERMINAL}"
            );
            client
                .execute(
                    &sql,
                    &[&id, &status.as_str(), &result, &error, &secs(ttl)],
                )
                .await
                .map_err(pg_failed)?;
            Ok(())
        })
    }
}

fn pg_failed(e: tokio_postgres::Error) -> TaskBackendError {
    unavailable(super::db_message(&e))
}
