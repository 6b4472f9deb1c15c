//! Legacy session records in PostgreSQL ([`SessionBackend`]): any replica
//! serves any session. The table is bounded by `--max-sessions`: expired
//! rows are pruned whenever a session is created, and admission runs
//! under an advisory lock so concurrent `initialize`s on several replicas
//! cannot overshoot the bound.

use std::time::Duration;

use deadpool_postgres::Pool;
use mcpwire_server::shared::{
    Admission, BoxFuture, SessionBackend, SessionBounds, SessionRecord, SharedError,
};
use serde_json::Value;

/// The sessions table.
pub const MIGRATION: &str = "
CREATE TABLE IF NOT EXISTS mcp_sessions (
    id        text PRIMARY KEY,
    record    jsonb NOT NULL,
    revision  bigint NOT NULL DEFAULT 0,
    used      boolean NOT NULL DEFAULT false,
    last_used timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS mcp_sessions_last_used ON mcp_sessions (last_used);
";

/// Serializes admissions across replicas (one transaction at a time).
const ADMISSION_LOCK: i64 = 7_402_117_002;

/// Session records on a PostgreSQL pool.
#[derive(Clone)]
pub struct PgSessions {
    pool: Pool,
}

impl PgSessions {
    /// Records on this pool (the tables must exist: see `crate::migrate`).
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, SharedError> {
        self.pool.get().await.map_err(unavailable)
    }

    async fn admit(
        &self,
        record: &SessionRecord,
        bounds: SessionBounds,
    ) -> Result<Admission, SharedError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(unavailable)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&ADMISSION_LOCK])
            .await
            .map_err(unavailable)?;
        let idle = bounds.idle_timeout.as_secs_f64();
        let mut removed: Vec<String> = tx
            .query(
                "DELETE FROM mcp_sessions WHERE last_used < now() - make_interval(secs => $1) RETURNING id",
                &[&idle],
            )
            .await
            .map_err(unavailable)?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()
            .map_err(unavailable)?;
        let count: i64 = tx
            .query_one("SELECT count(*) FROM mcp_sessions", &[])
            .await
            .map_err(unavailable)?
            .try_get(0)
            .map_err(unavailable)?;
        if usize::try_from(count).unwrap_or(usize::MAX) >= bounds.max_sessions {
            // Never-used sessions first, then long-idle ones; oldest first.
            let evictable = bounds.evictable_idle.as_secs_f64();
            let victim = tx
                .query_opt(
                    "DELETE FROM mcp_sessions WHERE id = (
                         SELECT id FROM mcp_sessions
                         WHERE NOT used OR last_used < now() - make_interval(secs => $1)
                         ORDER BY used, last_used LIMIT 1)
                     RETURNING id",
                    &[&evictable],
                )
                .await
                .map_err(unavailable)?;
            match victim {
                Some(row) => removed.push(row.try_get(0).map_err(unavailable)?),
                None => return Ok(Admission::Full),
            }
        }
        let body =
            serde_json::to_value(record).map_err(|e| SharedError::Malformed(e.to_string()))?;
        let revision = i64::try_from(record.revision).unwrap_or(i64::MAX);
        tx.execute(
            "INSERT INTO mcp_sessions (id, record, revision) VALUES ($1, $2, $3)",
            &[&record.id, &body, &revision],
        )
        .await
        .map_err(unavailable)?;
        tx.commit().await.map_err(unavailable)?;
        Ok(Admission::Admitted { removed })
    }

    async fn touch_row(
        &self,
        id: &str,
        idle_timeout: Duration,
    ) -> Result<Option<SessionRecord>, SharedError> {
        let client = self.client().await?;
        let idle = idle_timeout.as_secs_f64();
        let row = client
            .query_opt(
                "UPDATE mcp_sessions SET last_used = now(), used = true
                 WHERE id = $1 AND last_used >= now() - make_interval(secs => $2)
                 RETURNING record",
                &[&id, &idle],
            )
            .await
            .map_err(unavailable)?;
        let Some(row) = row else {
            // Expired (or unknown): gone for every replica.
            client
                .execute("DELETE FROM mcp_sessions WHERE id = $1", &[&id])
                .await
                .map_err(unavailable)?;
            return Ok(None);
        };
        let body: Value = row.try_get(0).map_err(unavailable)?;
        serde_json::from_value(body)
            .map(Some)
            .map_err(|e| SharedError::Malformed(e.to_string()))
    }

    async fn save_row(&self, record: &SessionRecord) -> Result<(), SharedError> {
        let client = self.client().await?;
        let body =
            serde_json::to_value(record).map_err(|e| SharedError::Malformed(e.to_string()))?;
        let revision = i64::try_from(record.revision).unwrap_or(i64::MAX);
        client
            .execute(
                "UPDATE mcp_sessions SET record = $2, revision = $3 WHERE id = $1 AND revision < $3",
                &[&record.id, &body, &revision],
            )
            .await
            .map_err(unavailable)?;
        Ok(())
    }

    async fn remove_row(&self, id: &str) -> Result<bool, SharedError> {
        let client = self.client().await?;
        let n = client
            .execute("DELETE FROM mcp_sessions WHERE id = $1", &[&id])
            .await
            .map_err(unavailable)?;
        Ok(n > 0)
    }
}

/// A driver or pool failure: the store is unavailable for now.
pub fn unavailable(e: impl std::error::Error + 'static) -> SharedError {
    let e: &dyn std::error::Error = &e;
    let detail = match e.downcast_ref::<tokio_postgres::Error>() {
        Some(pg) => super::db_message(pg),
        None => e.to_string(),
    };
    SharedError::Unavailable(detail)
}

impl SessionBackend for PgSessions {
    fn create<'a>(
        &'a self,
        record: &'a SessionRecord,
        bounds: SessionBounds,
    ) -> BoxFuture<'a, Result<Admission, SharedError>> {
        Box::pin(self.admit(record, bounds))
    }

    fn touch<'a>(
        &'a self,
        id: &'a str,
        idle_timeout: Duration,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, SharedError>> {
        Box::pin(self.touch_row(id, idle_timeout))
    }

    fn save<'a>(&'a self, record: &'a SessionRecord) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(self.save_row(record))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(self.remove_row(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{fresh_pool, psql_count};

    fn record(id: &str) -> SessionRecord {
        SessionRecord {
            id: id.to_owned(),
            version: "2025-06-18".to_owned(),
            client_capabilities: serde_json::Map::new(),
            client_info: Some(serde_json::json!({ "name": "t" })),
            owner: Some("alice".to_owned()),
            log_level: None,
            subscriptions: vec![],
            initialized: false,
            revision: 0,
        }
    }

    fn bounds(max: usize) -> SessionBounds {
        SessionBounds {
            max_sessions: max,
            idle_timeout: Duration::from_secs(3600),
            evictable_idle: Duration::from_secs(300),
        }
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn records_round_trip_and_newer_revisions_win() {
        let (url, pool) = fresh_pool().await;
        let s = PgSessions::new(pool);
        let admitted = s.create(&record("a"), bounds(10)).await.expect("create");
        assert_eq!(admitted, Admission::Admitted { removed: vec![] });
        let got = s.touch("a", Duration::from_secs(60)).await.expect("touch");
        assert_eq!(got, Some(record("a")));

        let mut newer = record("a");
        newer.revision = 2;
        newer.log_level = Some("debug".into());
        newer.subscriptions = vec!["file:///x".into()];
        s.save(&newer).await.expect("save");
        let mut older = record("a");
        older.revision = 1;
        s.save(&older).await.expect("save");
        let got = s.touch("a", Duration::from_secs(60)).await.expect("touch");
        assert_eq!(got, Some(newer));

        assert!(s.remove("a").await.expect("remove"));
        assert!(!s.remove("a").await.expect("remove"));
        assert_eq!(
            s.touch("a", Duration::from_secs(60)).await.expect("touch"),
            None
        );
        assert_eq!(psql_count(&url, "mcp_sessions"), 0);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn admission_is_bounded_and_evicts_unused_sessions_first() {
        let (url, pool) = fresh_pool().await;
        let s = PgSessions::new(pool);
        for id in ["a", "b"] {
            s.create(&record(id), bounds(2)).await.expect("create");
        }
        // "a" is in use; "b" never came back: "b" makes room.
        s.touch("a", Duration::from_secs(60)).await.expect("touch");
        let admitted = s.create(&record("c"), bounds(2)).await.expect("create");
        assert_eq!(
            admitted,
            Admission::Admitted {
                removed: vec!["b".into()]
            }
        );
        // Both in use now: a fourth is refused, nothing is evicted.
        s.touch("c", Duration::from_secs(60)).await.expect("touch");
        let refused = s.create(&record("d"), bounds(2)).await.expect("create");
        assert_eq!(refused, Admission::Full);
        assert_eq!(psql_count(&url, "mcp_sessions"), 2);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn expired_rows_are_gone_and_pruned() {
        let (url, pool) = fresh_pool().await;
        let s = PgSessions::new(pool);
        for id in ["old", "older"] {
            s.create(&record(id), bounds(10)).await.expect("create");
        }
        crate::testing::psql(
            &url,
            "UPDATE mcp_sessions SET last_used = now() - interval '2 hours'",
        );
        // Touching an expired session removes it.
        let got = s
            .touch("old", Duration::from_secs(3600))
            .await
            .expect("touch");
        assert_eq!(got, None);
        // Creating prunes the rest and reports them.
        let admitted = s.create(&record("new"), bounds(10)).await.expect("create");
        assert_eq!(
            admitted,
            Admission::Admitted {
                removed: vec!["older".into()]
            }
        );
        assert_eq!(psql_count(&url, "mcp_sessions"), 1);
    }
}
