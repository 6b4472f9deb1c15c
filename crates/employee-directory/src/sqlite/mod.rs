//! SQLite backend: connection pool, migrations, seeding and queries.
//!
//! Everything SQLite-specific lives here, so another backend (PostgreSQL)
//! can be added as a sibling module behind [`crate::backend::Backend`].

mod details_cache;
mod migrate;
mod pool;
mod queries;
mod reports;
mod row;
mod seed;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::NaiveDate;

use crate::error::{DirectoryError, UnavailableReason};
use crate::model::{
    CompensationBand, DepartmentRoster, EmployeeDetails, Health, LeaveBalance, LeaveType, Level,
    Report, ReportType, SkillSearch, TeamRoster, Tenure,
};
use crate::options::DirectoryOptions;
use details_cache::{DetailsCache, Stamp};
use pool::{Pool, Target};
pub(crate) use row::make_location;

/// The schema version this build migrates to.
pub(crate) fn latest_schema_version() -> u32 {
    migrate::latest_version()
}

/// The SQLite migrations (for the PostgreSQL backend's consistency test).
#[cfg(test)]
pub(crate) fn migrations() -> &'static [migrate::Migration] {
    migrate::MIGRATIONS
}

/// Most connections a file database keeps open.
const MAX_CONNECTIONS: usize = 8;

/// Parses a SQLite URL; `None` if it is not one.
///
/// Accepted: `sqlite::memory:`, `sqlite://:memory:`, `sqlite://PATH` (relative
/// or absolute, `sqlite:///abs/path` works too). A `?query` suffix is ignored.
pub(crate) fn parse_url(url: &str) -> Option<Result<Target, DirectoryError>> {
    let url = url.trim();
    if url == "sqlite::memory:" || url == "sqlite://:memory:" {
        return Some(Ok(Target::Memory));
    }
    let rest = url.strip_prefix("sqlite://")?;
    let path = rest.split('?').next().unwrap_or_default();
    if path.is_empty() {
        return Some(Err(DirectoryError::UnsupportedUrl {
            url: url.to_string(),
        }));
    }
    Some(Ok(Target::File(PathBuf::from(path))))
}

/// A SQLite-backed directory.
pub(crate) struct SqliteBackend {
    pool: Arc<Pool>,
    /// Profiles answered without SQL while the directory is unchanged.
    details: Arc<DetailsCache>,
}

impl SqliteBackend {
    /// Opens the database, migrates it and seeds it if empty.
    pub(crate) async fn open(
        target: Target,
        options: DirectoryOptions,
    ) -> Result<SqliteBackend, DirectoryError> {
        if let Target::File(path) = &target {
            create_parent_dir(path)?;
        }
        let size = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_CONNECTIONS)
            .min(options.max_connections.max(1));
        let pool = Arc::new(Pool::new(target, size, options)?);
        let described = pool.describe();
        // The only place the file may be created: later connections refuse
        // a missing file instead of serving an empty database.
        let (migrated, seeded) = pool
            .bootstrap(|conn| {
                let migrated = migrate::migrate(conn)?;
                let seeded = seed::seed_if_empty(conn)?;
                if seeded {
                    // Move the freshly written pages from the WAL into the
                    // main file so the file is self-contained; not fatal.
                    if let Err(e) =
                        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
                    {
                        tracing::warn!(error = %e, "WAL checkpoint after seeding failed");
                    }
                }
                Ok((migrated, seeded))
            })
            .await?;
        tracing::debug!(database = %described, migrated, seeded, "opened employee directory");
        Ok(SqliteBackend {
            pool,
            details: Arc::default(),
        })
    }

    pub(crate) async fn employee(
        &self,
        id: String,
    ) -> Result<Option<EmployeeDetails>, DirectoryError> {
        // Steady state: one tiny read on this thread, no query, no hop.
        let inline = self.pool.try_run_inline(|c, file| {
            let now = Stamp::read(c, file)?;
            Ok(self.details.get(now, &id))
        });
        if let Some(hit) = inline.transpose()?.flatten() {
            return Ok(Some(hit));
        }
        let cache = Arc::clone(&self.details);
        self.pool
            .run_on_file(move |c, file| {
                // The stamp is read before the data (see details_cache).
                let stamp = Stamp::read(c, file)?;
                if let Some(hit) = cache.get(stamp, &id) {
                    return Ok(Some(hit));
                }
                let found = queries::employee(c, &id)?;
                if let Some(details) = &found {
                    cache.put(stamp, id, details.clone());
                }
                Ok(found)
            })
            .await
    }

    pub(crate) async fn department_roster(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Option<DepartmentRoster>, DirectoryError> {
        self.pool
            .run(move |c| queries::department_roster(c, &id, today))
            .await
    }

    pub(crate) async fn tenure(
        &self,
        id: String,
        today: NaiveDate,
    ) -> Result<Option<Tenure>, DirectoryError> {
        self.pool.run(move |c| queries::tenure(c, &id, today)).await
    }

    pub(crate) async fn team_roster(
        &self,
        id: String,
    ) -> Result<Option<TeamRoster>, DirectoryError> {
        self.pool.run(move |c| queries::team_roster(c, &id)).await
    }

    pub(crate) async fn search_by_skill(
        &self,
        skill: String,
        limit: u32,
    ) -> Result<SkillSearch, DirectoryError> {
        self.pool
            .run(move |c| queries::search_by_skill(c, &skill, limit))
            .await
    }

    pub(crate) async fn compensation_band(
        &self,
        role: String,
        level: Level,
    ) -> Result<Option<CompensationBand>, DirectoryError> {
        self.pool
            .run(move |c| queries::compensation_band(c, &role, level))
            .await
    }

    pub(crate) async fn role_levels(
        &self,
        role: String,
    ) -> Result<Option<Vec<Level>>, DirectoryError> {
        self.pool.run(move |c| queries::role_levels(c, &role)).await
    }

    pub(crate) async fn leave_balance(
        &self,
        id: String,
        leave_type: LeaveType,
        today: NaiveDate,
    ) -> Result<Option<LeaveBalance>, DirectoryError> {
        self.pool
            .run(move |c| queries::leave_balance(c, &id, leave_type, today))
            .await
    }

    pub(crate) async fn report(
        &self,
        kind: ReportType,
        today: NaiveDate,
    ) -> Result<Report, DirectoryError> {
        self.pool
            .run(move |c| reports::report(c, kind, today))
            .await
    }

    pub(crate) async fn department_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(|c| queries::pairs(c, "SELECT id, name FROM departments ORDER BY name"))
            .await
    }

    pub(crate) async fn team_ids(&self) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(|c| queries::pairs(c, "SELECT id, name FROM teams ORDER BY name"))
            .await
    }

    pub(crate) async fn roles(&self) -> Result<Vec<String>, DirectoryError> {
        self.pool
            .run(|c| queries::strings(c, "SELECT title FROM roles ORDER BY title"))
            .await
    }

    pub(crate) async fn skills(&self) -> Result<Vec<String>, DirectoryError> {
        self.pool
            .run(|c| queries::strings(c, "SELECT name FROM skills ORDER BY name"))
            .await
    }

    pub(crate) async fn suggest_employees(
        &self,
        query: String,
        limit: u32,
    ) -> Result<Vec<(String, String)>, DirectoryError> {
        self.pool
            .run(move |c| queries::suggest_employees(c, &query, limit))
            .await
    }

    pub(crate) async fn health(&self) -> Result<Health, DirectoryError> {
        self.pool.run(queries::health_mut).await
    }

    pub(crate) fn pool_stats(&self) -> crate::PoolStats {
        self.pool.stats()
    }
}

fn create_parent_dir(path: &std::path::Path) -> Result<(), DirectoryError> {
    match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() && !dir.exists() => std::fs::create_dir_all(dir)
            .map_err(|e| {
                DirectoryError::unavailable(
                    UnavailableReason::Other,
                    format!(
                        "cannot create directory {} for the database: {e}",
                        dir.display()
                    ),
                )
            }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert!(matches!(
            parse_url("sqlite::memory:"),
            Some(Ok(Target::Memory))
        ));
        assert!(matches!(
            parse_url("sqlite://:memory:"),
            Some(Ok(Target::Memory))
        ));
        match parse_url("sqlite://data/hr.db?mode=rwc") {
            Some(Ok(Target::File(p))) => assert_eq!(p, PathBuf::from("data/hr.db")),
            _ => panic!("relative path not parsed"),
        }
        match parse_url("sqlite:///var/lib/hr.db") {
            Some(Ok(Target::File(p))) => assert_eq!(p, PathBuf::from("/var/lib/hr.db")),
            _ => panic!("absolute path not parsed"),
        }
        assert!(matches!(parse_url("sqlite://"), Some(Err(_))));
        assert!(parse_url("postgres://localhost/hr").is_none());
    }
}
