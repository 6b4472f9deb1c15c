//! PostgreSQL backend: pool, migrations, seeding and queries, answering
//! exactly like the SQLite backend (the directory tests run on both and
//! compare every API's output).
//!
//! Several servers may share one database: the first to start migrates and
//! seeds it under an advisory lock; later ones find it current and only
//! read.

mod migrate;
mod pool;
mod queries;
mod reports;
mod row;
mod seed;

use chrono::NaiveDate;
use tracing::Instrument;

use crate::error::DirectoryError;
use crate::model::{
    CompensationBand, DepartmentRoster, EmployeeDetails, Health, LeaveBalance, LeaveType, Level,
    Report, ReportType, SkillSearch, TeamRoster, Tenure,
};
use crate::options::DirectoryOptions;
pub(crate) use pool::classify;
use pool::{PgPool, is_connection_lost};

/// Whether `url` names a PostgreSQL database.
pub(crate) fn is_url(url: &str) -> bool {
    let url = url.trim();
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The schema version this build migrates PostgreSQL to (same as SQLite).
#[cfg(test)]
pub(crate) fn latest_schema_version() -> u32 {
    migrate::latest()
}

/// A `db.query` child span, only inside a traced request.
fn query_span() -> tracing::Span {
    if tracing::Span::current().is_disabled() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        "db.query",
        otel.kind = "client",
        "db.system.name" = "postgresql"
    )
}

/// Runs `$body` with `$c: &ClientWrapper` from the pool, bounded in time;
/// retried once on a fresh connection when the first one was lost (server
/// restarted): every query is a read, so a retry is safe.
macro_rules! with_client {
    ($self:ident, $c:ident => $body:expr) => {{
        let mut retried = false;
        loop {
            let result = async {
                let client = $self.pool.get().await?;
                let $c: &deadpool_postgres::ClientWrapper = &client;
                $self.pool.bounded($body).await
            }
            .instrument(query_span())
            .await;
            match result {
                Err(e) if !retried && is_connection_lost(&e) => {
                    tracing::debug!(error = %e, "retrying on a new PostgreSQL connection");
                    retried = true;
                }
                other => break other,
            }
        }
    }};
}

/// A PostgreSQL-backed directory.
pub(crate) struct PostgresBackend {
    pool: PgPool,
}

impl PostgresBackend {
    /// Connects, migrates and seeds if needed.
    pub(crate) async fn open(
        url: &str,
        options: DirectoryOptions,
    ) -> Result<PostgresBackend, DirectoryError> {
        let pool = PgPool::new(url, &options)?;
        let mut client = pool.get().await?;
        let (migrated, seeded) = pool.bounded(migrate::bootstrap(&mut client)).await?;
        drop(client);
        tracing::debug!(database = %pool.target(), migrated, seeded, "opened employee directory");
        Ok(PostgresBackend { pool })
    }

    pub(crate) async fn employee(
        &self,
        id: String,
    ) -> Result<Option<EmployeeDetails>, DirectoryError> {
        with_client!(self, c => queries::employee(c, &id))
    }

    pub(crate) async fn department_roster(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Option<DepartmentRoster>, DirectoryError> {
        with_client!(self, c => queries::department_roster(c, &id, today))
    }

    pub(crate) async fn tenure(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Option<Tenure>, DirectoryError> {
        with_client!(self, c => queries::tenure(c, &id, today))
    }

    pub(crate) async fn team_roster(
        &self,
        id: String,
    ) -> Result<Option<TeamRoster>, DirectoryError> {
        with_client!(self, c => queries::team_roster(c, &id))
    }

    pub(crate) async fn search_by_skill(
        &self,
        skill: String,
        limit: u32,
    ) -> Result<SkillSearch, DirectoryError> {
        with_client!(self, c => queries::search_by_skill(c, &skill, limit))
    }

    pub(crate) async fn compensation_band(
        &self,
        role: String,
        level: Level,
    ) -> Result<Option<CompensationBand>, DirectoryError> {
        with_client!(self, c => queries::compensation_band(c, &role, level))
    }

    pub(crate) async fn role_levels(
        &self,
        role: String,
    ) -> Result<Option<Vec<Level>>, DirectoryError> {
        with_client!(self, c => queries::role_levels(c, &role))
    }

    pub(crate) async fn leave_balance(
        &self,
        id: String,
        leave_type: LeaveType,
        today: NaiveDate,
    ) -> Result<Option<LeaveBalance>, DirectoryError> {
        with_client!(self, c => queries::leave_balance(c, &id, leave_type, today))
    }

    pub(crate) async fn report(
        &self,
        kind: ReportType,
        today: NaiveDate,
    ) -> Result<Report, DirectoryError> {
        with_client!(self, c => reports::report(c, kind, today))
    }

    pub(crate) async fn department_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::pairs(c, "SELECT id, name FROM departments ORDER BY lower(name)"))
    }

    pub(crate) async fn team_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::pairs(c, "SELECT id, name FROM teams ORDER BY lower(name)"))
    }

    pub(crate) async fn roles(&self) -> Result<Vec<String>, DirectoryError> {
        with_client!(self, c => queries::strings(c, "SELECT title FROM roles ORDER BY lower(title)"))
    }

    pub(crate) async fn skills(&self) -> Result<Vec<String>, DirectoryError> {
        with_client!(self, c => queries::strings(c, "SELECT name FROM skills ORDER BY lower(name)"))
    }

    pub(crate) async fn suggest_employees(
        &self,
        query: String,
        limit: u32,
    ) -> Result<Vec<(String, String)>, DirectoryError> {
        with_client!(self, c => queries::suggest_employees(c, &query, limit))
    }

    pub(crate) async fn health(&self) -> Result<Health, DirectoryError> {
        with_client!(self, c => queries::health(c))
    }

    pub(crate) fn pool_stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_urls() {
        assert!(is_url("postgres://u@h/db"));
        assert!(is_url(" postgresql://h:5432/db "));
        assert!(!is_url("sqlite://x"));
        assert!(!is_url("postgres:/x"));
        assert_eq!(
            latest_schema_version(),
            crate::sqlite::latest_schema_version()
        );
    }

    #[test]
    fn redacts_passwords() {
        assert_eq!(
            pool::redact("postgres://u:secret@h/db"),
            "postgres://u@h/db"
        );
        assert_eq!(pool::redact("postgres://h/db"), "postgres://h/db");
    }
}
